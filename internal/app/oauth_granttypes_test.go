package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// TestOAuthClientGrantTypes: grant_types (RFC 7591 §2) defaults to the
// code flow with refresh tokens, is validated, changes with PATCH, and a
// grant the client is not registered for is unauthorized_client at the
// token and authorization endpoints, changing nothing.
func TestOAuthClientGrantTypes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		got := e.Call(t, "GET", "/v1/oauth/clients/"+c.ID, user.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if g := got["grant_types"].([]any); len(g) != 2 || g[0] != "authorization_code" || g[1] != "refresh_token" {
			t.Fatalf("default grant_types %v", g)
		}
		for _, bad := range []map[string]any{
			{"grant_types": []string{}},
			{"grant_types": []string{"password"}},
			{"grant_types": []string{"implicit"}},
			{"grant_types": []string{"refresh_token"}},
			{"grant_types": "authorization_code"},
			{"grant_types": []string{"client_credentials"}, "client_type": "public"},
		} {
			body := map[string]any{"name": "x", "redirect_uris": []string{cb}}
			for k, v := range bad {
				body[k] = v
			}
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients", Token: user.Token, Body: body})
			if r.Status != http.StatusBadRequest && r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("create %v: %d %s", bad, r.Status, r.Body)
			}
		}
		pub := mkClient(t, e, user.Token, map[string]any{"client_type": "public"})
		e.Call(t, "PATCH", "/v1/oauth/clients/"+pub.ID, user.Token, map[string]any{"grant_types": []string{"client_credentials"}}, http.StatusBadRequest)

		// A client for the code flow only: refresh_token is refused.
		code := mkClient(t, e, user.Token, map[string]any{"grant_types": []string{"authorization_code"},
			"allowed_scopes": []string{"openid", "offline_access"}})
		tk := tokens(t, e, user.Token, code, authzParams(code.ID, "scope", "openid offline_access"))
		oauthErr(t, refreshReq(t, e, code, tk["refresh_token"].(string)), http.StatusBadRequest, "unauthorized_client")
		// Narrow an existing client: its refresh token no longer works.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		upd := e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"grant_types": []string{"client_credentials", "client_credentials"}}, http.StatusOK).JSON()["data"].(map[string]any)
		if g := upd["grant_types"].([]any); len(g) != 1 || g[0] != "client_credentials" {
			t.Fatalf("updated grant_types %v", g)
		}
		var before int
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM oauth_tokens WHERE client_id = $1`, c.ID).Scan(&before)
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), http.StatusBadRequest, "unauthorized_client")
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID), nil), "unauthorized_client")
		var after int
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM oauth_tokens WHERE client_id = $1 AND revoked_at IS NULL`, c.ID).Scan(&after)
		if after != before {
			t.Fatalf("live tokens %d after refusals, want %d", after, before)
		}
		// An unknown grant type stays unsupported_grant_type.
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"password"}, "client_id": {c.ID}, "client_secret": {c.Secret}}, nil), http.StatusBadRequest, "unsupported_grant_type")
	})
}

// TestConsoleClientGrantTypes: the client form shows the grant types, saves
// them, and refuses a form with none ticked (field error, nothing changed).
func TestConsoleClientGrantTypes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		c := mkClient(t, e, dev.Token, nil)
		path := "/account/developer/clients/" + c.ID
		if p := b.get(path); !strings.Contains(p.body, `name="grant_types" value="client_credentials"`) || !strings.Contains(p.body, `name="grant_types_shown"`) {
			t.Fatalf("form without grant types: %s", p.body)
		}
		none := clientForm("Grants App", "redirect_uris", cb, "is_active", "yes", "grant_types_shown", "yes")
		if q := developerPost(t, b, path, path, none); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="grant_types-error"`) {
			t.Fatalf("no grant ticked: %d %s", q.status, q.body)
		}
		form := clientForm("Grants App", "redirect_uris", cb, "is_active", "yes", "grant_types_shown", "yes")
		form["grant_types"] = []string{"authorization_code", "refresh_token", "client_credentials"}
		if q := developerPost(t, b, path, path, form); q.status != http.StatusSeeOther {
			t.Fatalf("save: %d %s", q.status, q.body)
		}
		got := e.Call(t, "GET", "/v1/oauth/clients/"+c.ID, dev.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if g := got["grant_types"].([]any); len(g) != 3 || g[2] != "client_credentials" {
			t.Fatalf("saved grant_types %v", g)
		}
		if p := b.get(path); !strings.Contains(p.body, `value="client_credentials" checked`) {
			t.Fatal("the saved grant is not ticked")
		}
	})
}

// TestGraphQLClientGrantTypes: createOauthClient takes and shows grantTypes.
func TestGraphQLClientGrantTypes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		const q = `mutation($in: CreateOAuthClientInput!) { createOauthClient(input: $in) { client { id grantTypes } } }`
		out := gqlData(t, e, user.Token, q, map[string]any{"in": map[string]any{"name": "G", "redirectUris": []string{cb}, "allowedScopes": []string{"openid"},
			"grantTypes": []string{"authorization_code", "urn:ietf:params:oauth:grant-type:device_code"}}})
		g := out["createOauthClient"].(map[string]any)["client"].(map[string]any)["grantTypes"].([]any)
		if len(g) != 2 || g[1] != "urn:ietf:params:oauth:grant-type:device_code" {
			t.Fatalf("grantTypes %v", g)
		}
		def := gqlData(t, e, user.Token, q, map[string]any{"in": map[string]any{"name": "D", "redirectUris": []string{cb}, "allowedScopes": []string{"openid"}}})
		if g := def["createOauthClient"].(map[string]any)["client"].(map[string]any)["grantTypes"].([]any); len(g) != 2 || g[0] != "authorization_code" {
			t.Fatalf("default grantTypes %v", g)
		}
	})
}
