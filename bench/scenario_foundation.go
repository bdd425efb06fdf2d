package main

import (
	"context"
	"net/http"
)

func init() {
	register(
		Scenario{Name: "health", About: "GET /health (database and cache pings)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			return e.get("/health", ""), nil
		}},
		Scenario{Name: "roles", About: "GET /v1/roles with an API key", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			key, err := e.apiKey(ctx, "roles:read")
			if err != nil {
				return nil, err
			}
			return e.get("/v1/roles", key), nil
		}},
	)
}

// apiKey creates an API key with scopes through the API (as the system key).
func (e *Env) apiKey(ctx context.Context, scopes ...string) (string, error) {
	var out struct {
		Key string `json:"key"`
	}
	err := e.call(ctx, http.MethodPost, "/v1/api-keys", e.SystemKey, map[string]any{"name": "bench", "scopes": scopes}, http.StatusCreated, &out)
	return out.Key, err
}
