package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// The grants for machines and devices (issue 21): the client credentials
// grant (RFC 6749 §4.4) and the device grant's polling (RFC 8628 §3.5).
func init() {
	register(
		Scenario{Name: "oauth-client-credentials", About: "client_credentials grant: a confidential client's access token with permission scopes", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			c, err := e.machineClient(ctx, map[string]any{"name": "Bench Service", "redirect_uris": []string{"https://service.bench.test/cb"},
				"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"devices:read", "gps:write"}})
			if err != nil {
				return nil, err
			}
			form := url.Values{"grant_type": {"client_credentials"}, "scope": {"devices:read gps:write"}, "client_id": {c.ID}, "client_secret": {c.ClientSecret}}
			return func(ctx context.Context, _ int) error {
				return e.call(ctx, http.MethodPost, "/v1/oauth/token", "", form, http.StatusOK, nil)
			}, nil
		}},
		Scenario{Name: "oauth-device-poll", About: "device grant: the token endpoint polled for a pending device code (authorization_pending, slow_down)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			c, err := e.machineClient(ctx, map[string]any{"name": "Bench TV", "client_type": "public", "redirect_uris": []string{"https://tv.bench.test/cb"},
				"grant_types": []string{"urn:ietf:params:oauth:grant-type:device_code"}, "allowed_scopes": []string{"openid", "profile"}})
			if err != nil {
				return nil, err
			}
			// One pending device authorization per worker, polled without pause.
			forms := make([]url.Values, e.Concurrency)
			for i := range forms {
				var d struct {
					DeviceCode string `json:"device_code"`
				}
				if err := e.call(ctx, http.MethodPost, "/v1/oauth/device_authorization", "", url.Values{"client_id": {c.ID}, "scope": {"openid profile"}}, http.StatusOK, &d); err != nil {
					return nil, err
				}
				forms[i] = url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {d.DeviceCode}, "client_id": {c.ID}}
			}
			return func(ctx context.Context, w int) error {
				var out struct {
					Error string `json:"error"`
				}
				if err := e.call(ctx, http.MethodPost, "/v1/oauth/token", "", forms[w], http.StatusBadRequest, &out); err != nil {
					return err
				}
				if out.Error != "authorization_pending" && out.Error != "slow_down" {
					return fmt.Errorf("device poll: %s", out.Error)
				}
				return nil
			}, nil
		}},
	)
}

// machineClient registers a client with the system key (an ownerless
// client, whose permission scopes need no owner's).
func (e *Env) machineClient(ctx context.Context, body map[string]any) (struct{ ID, ClientSecret string }, error) {
	var c struct {
		Data struct {
			ID           string `json:"id"`
			ClientSecret string `json:"client_secret"`
		} `json:"data"`
	}
	err := e.call(ctx, http.MethodPost, "/v1/oauth/clients", e.SystemKey, body, http.StatusCreated, &c)
	return struct{ ID, ClientSecret string }{c.Data.ID, c.Data.ClientSecret}, err
}
