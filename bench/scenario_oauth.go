package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
)

func init() {
	register(
		Scenario{Name: "oauth-code-flow", About: "authorize (remembered consent) + code exchange + userinfo", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			o, err := e.oauthSetup(ctx)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, _ int) error {
				tok, err := o.codeFlow(ctx, e)
				if err != nil {
					return err
				}
				return e.call(ctx, http.MethodGet, "/v1/oauth/userinfo", tok.AccessToken, nil, http.StatusOK, nil)
			}, nil
		}},
		Scenario{Name: "oauth-refresh", About: "refresh_token grant with rotation", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			o, err := e.oauthSetup(ctx)
			if err != nil {
				return nil, err
			}
			// One token chain per worker: each grant rotates the worker's refresh token.
			chains := make([]string, e.Concurrency)
			for i := range chains {
				t, err := o.codeFlow(ctx, e)
				if err != nil {
					return nil, err
				}
				chains[i] = t.RefreshToken
			}
			return func(ctx context.Context, w int) error {
				t, err := o.refresh(ctx, e, chains[w])
				if err != nil {
					return err
				}
				chains[w] = t.RefreshToken
				return nil
			}, nil
		}},
		Scenario{Name: "oauth-userinfo", About: "GET /v1/oauth/userinfo with an access token", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			_, t, err := e.oauthToken(ctx)
			if err != nil {
				return nil, err
			}
			return e.get("/v1/oauth/userinfo", t.AccessToken), nil
		}},
		Scenario{Name: "oauth-revoke", About: "POST /v1/oauth/revoke of live access tokens", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			// A pool of live tokens made by refresh grants; once it is used up
			// the revocations repeat (still a full lookup, an idempotent update).
			o, t, err := e.oauthToken(ctx)
			if err != nil {
				return nil, err
			}
			pool := make([]string, 0, 4000)
			rt := t.RefreshToken
			for range cap(pool) {
				nt, err := o.refresh(ctx, e, rt)
				if err != nil {
					return nil, err
				}
				pool, rt = append(pool, nt.AccessToken), nt.RefreshToken
			}
			var n atomic.Int64
			return func(ctx context.Context, _ int) error {
				tok := pool[int(n.Add(1)-1)%len(pool)]
				form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}, "client_id": {o.clientID}, "client_secret": {o.secret}}
				return e.call(ctx, http.MethodPost, "/v1/oauth/revoke", "", form, http.StatusOK, nil)
			}, nil
		}},
		Scenario{Name: "oauth-introspect", About: "POST /v1/oauth/introspect of a live access token by its confidential client (RFC 7662)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			o, t, err := e.oauthToken(ctx)
			if err != nil {
				return nil, err
			}
			form := url.Values{"token": {t.AccessToken}, "client_id": {o.clientID}, "client_secret": {o.secret}}
			return func(ctx context.Context, _ int) error {
				var out struct {
					Active bool `json:"active"`
				}
				if err := e.call(ctx, http.MethodPost, "/v1/oauth/introspect", "", form, http.StatusOK, &out); err != nil {
					return err
				}
				if !out.Active {
					return errors.New("introspection: the live access token is not active")
				}
				return nil
			}, nil
		}},
	)
}

// oauthBench is a confidential client and a user who has consented to it.
type oauthBench struct {
	clientID, secret string
	session          string
	redirect         string
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

func (e *Env) oauthSetup(ctx context.Context) (*oauthBench, error) {
	u, err := e.newUser(ctx, "")
	if err != nil {
		return nil, err
	}
	o := &oauthBench{session: u.Session, redirect: "https://client.bench.test/cb"}
	var c struct {
		Data struct {
			ID           string `json:"id"`
			ClientSecret string `json:"client_secret"`
		} `json:"data"`
	}
	client := map[string]any{"name": "Bench App", "redirect_uris": []string{o.redirect}, "allowed_scopes": []string{"openid", "profile", "email", "offline_access"}}
	if e.IDTokenAlg != "" {
		client["id_token_signed_response_alg"] = e.IDTokenAlg
	}
	if err := e.call(ctx, http.MethodPost, "/v1/oauth/clients", u.Session, client, http.StatusCreated, &c); err != nil {
		return nil, err
	}
	o.clientID, o.secret = c.Data.ID, c.Data.ClientSecret
	// The first authorization asks for consent; approving it is remembered.
	var pending struct {
		ID string `json:"pending_authorization_id"`
	}
	if err := e.call(ctx, http.MethodGet, "/v1/oauth/authorize?"+o.authorizeQuery("").Encode(), u.Session, nil, http.StatusOK, &pending); err != nil {
		return nil, err
	}
	a, err := e.send(ctx, http.MethodPost, "/v1/oauth/authorize/consent", u.Session,
		map[string]any{"pending_authorization_id": pending.ID, "approved": true})
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusFound {
		return nil, fmt.Errorf("consent: status %d", a.status)
	}
	return o, nil
}

// oauthToken sets up a client and its user (oauthSetup) and runs one code
// flow: the tokens the scenarios that use a live token start from.
func (e *Env) oauthToken(ctx context.Context) (*oauthBench, tokenAnswer, error) {
	o, err := e.oauthSetup(ctx)
	if err != nil {
		return nil, tokenAnswer{}, err
	}
	t, err := o.codeFlow(ctx, e)
	return o, t, err
}

func (o *oauthBench) authorizeQuery(challenge string) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {o.clientID}, "redirect_uri": {o.redirect},
		"scope": {"openid profile email offline_access"}, "state": {"bench"}, "nonce": {"n"}}
	if challenge != "" {
		q.Set("code_challenge", challenge)
		q.Set("code_challenge_method", "S256")
	}
	return q
}

// codeFlow runs authorize (consent remembered) and the code exchange, with PKCE.
func (o *oauthBench) codeFlow(ctx context.Context, e *Env) (tokenAnswer, error) {
	verifier := "bench-verifier-0123456789-0123456789-0123456789"
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	a, err := e.send(ctx, http.MethodGet, "/v1/oauth/authorize?"+o.authorizeQuery(challenge).Encode(), o.session, nil)
	if err != nil {
		return tokenAnswer{}, err
	}
	loc, err := url.Parse(a.location)
	if err != nil || a.status != http.StatusFound {
		return tokenAnswer{}, fmt.Errorf("authorize: status %d", a.status)
	}
	code := loc.Query().Get("code")
	if code == "" {
		return tokenAnswer{}, errors.New("authorize: no code in " + loc.String())
	}
	var t tokenAnswer
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {o.redirect},
		"client_id": {o.clientID}, "client_secret": {o.secret}, "code_verifier": {verifier}}
	err = e.call(ctx, http.MethodPost, "/v1/oauth/token", "", form, http.StatusOK, &t)
	return t, err
}

func (o *oauthBench) refresh(ctx context.Context, e *Env, rt string) (tokenAnswer, error) {
	var t tokenAnswer
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {o.clientID}, "client_secret": {o.secret}}
	err := e.call(ctx, http.MethodPost, "/v1/oauth/token", "", form, http.StatusOK, &t)
	return t, err
}
