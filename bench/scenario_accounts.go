package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"hmid/internal/password"
)

func init() {
	register(
		Scenario{Name: "users-me", About: "GET /v1/users/me with a user's API key", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			u, err := e.newUser(ctx, "")
			if err != nil {
				return nil, err
			}
			// API keys are a developer's tool.
			if err := e.call(ctx, http.MethodPost, "/v1/users/"+u.ID+"/roles", e.SystemKey, map[string]any{"role_id": "role_developer"}, http.StatusCreated, nil); err != nil {
				return nil, err
			}
			var k struct {
				Key string `json:"key"`
			}
			if err := e.call(ctx, http.MethodPost, "/v1/api-keys", u.Session, map[string]any{"name": "bench", "scopes": []string{}}, http.StatusCreated, &k); err != nil {
				return nil, err
			}
			return e.get("/v1/users/me", k.Key), nil
		}},
		Scenario{Name: "argon2-bound", About: "Argon2id verifications in process, no HTTP: the bound password-login is held against", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			// The same parameters and the same one-per-core gate as a login,
			// measured in the same run so that both see the same machine.
			h, err := password.Hash("correct horse battery")
			if err != nil {
				return nil, err
			}
			return func(context.Context, int) error {
				if ok, err := password.Verify("correct horse battery", h); err != nil || !ok {
					return fmt.Errorf("verify: %v, %v", ok, err)
				}
				return nil
			}, nil
		}},
		Scenario{Name: "password-login", About: "POST /v1/auth/login (Argon2id verification)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			// Several accounts, so the per-account throttle never matters.
			type cred struct{ email, pass string }
			creds := make([]cred, 16)
			for i := range creds {
				creds[i] = cred{fmt.Sprintf("login%d-%d@bench.test", i, time.Now().UnixNano()), "correct horse battery"}
				if err := e.call(ctx, http.MethodPost, "/v1/auth/register", "", map[string]any{"email": creds[i].email, "password": creds[i].pass}, http.StatusCreated, nil); err != nil {
					return nil, err
				}
			}
			return func(ctx context.Context, worker int) error {
				// A worker keeps to one account: a login also holds one of its
				// account's five attempts while it is checked, so with 64
				// clients no account has more than four in flight.
				c := creds[worker%len(creds)]
				// Each worker is a client address of its own: a login holds
				// one of its address's attempts while it is checked, so one
				// address could have no more than the per-address allowance
				// in flight.
				a, err := e.sendFrom(ctx, clientAddr(worker), http.MethodPost, "/v1/auth/login", "", map[string]any{"email": c.email, "password": c.pass})
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("POST /v1/auth/login: status %d: %.200s", a.status, a.body)
				}
				return err
			}, nil
		}},
	)
}

// benchUser is a user made through the API.
type benchUser struct {
	ID      string
	Session string
}

// newUser creates a user through the sign-in upsert (system key) and opens a session for them.
func (e *Env) newUser(ctx context.Context, email string) (benchUser, error) {
	n := time.Now().UnixNano()
	if email == "" {
		email = fmt.Sprintf("u%d@bench.test", n)
	}
	var u struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := e.call(ctx, http.MethodPost, "/v1/users/oauth", e.SystemKey, map[string]any{
		"email": email, "name": "Bench User", "oauthProvider": "github", "oauthProviderId": fmt.Sprint(n)}, http.StatusCreated, &u); err != nil {
		return benchUser{}, err
	}
	var s struct {
		SessionToken string `json:"sessionToken"`
	}
	if err := e.call(ctx, http.MethodPost, "/v1/sessions", e.SystemKey, map[string]any{
		"userId": u.Data.ID, "expires": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}, http.StatusCreated, &s); err != nil {
		return benchUser{}, err
	}
	return benchUser{ID: u.Data.ID, Session: s.SessionToken}, nil
}
