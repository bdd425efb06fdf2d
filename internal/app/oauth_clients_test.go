package app_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/oauth"
)

func TestOAuthClientCreate(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		r := e.Call(t, "POST", "/v1/oauth/clients", user.Token, map[string]any{
			"name": "My App", "description": "d", "redirect_uris": []string{cb, "myapp://callback", "http://localhost:3000/cb"},
			"homepage_url": "https://app.example",
		}, http.StatusCreated).JSON()
		d := r["data"].(map[string]any)
		if !strings.HasPrefix(d["client_secret"].(string), "hm_sec_") || d["client_type"] != "confidential" || d["is_first_party"] != false ||
			d["is_active"] != true || d["owner_id"] != user.ID || r["_links"].(map[string]any)["self"] != e.URL+"/v1/oauth/clients/"+d["id"].(string) {
			t.Fatalf("created %v", r)
		}
		if sc := d["allowed_scopes"].([]any); len(sc) != 3 || sc[0] != "openid" || sc[1] != "profile" || sc[2] != "email" {
			t.Fatalf("default scopes %v", sc)
		}
		id := d["id"].(string)
		if n := auditCount(t, e, "client_created", id); n != 1 {
			t.Fatalf("client_created = %d", n)
		}
		// The secret is stored hashed and never shown again.
		var hash string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT secret_hash FROM oauth_clients WHERE id = $1`, id).Scan(&hash); err != nil || strings.Contains(hash, "hm_sec_") || len(hash) != 64 {
			t.Fatalf("stored secret %q, %v", hash, err)
		}
		got := e.Call(t, "GET", "/v1/oauth/clients/"+id, user.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if _, ok := got["client_secret"]; ok {
			t.Fatal("client_secret shown on GET")
		}

		bad := []map[string]any{
			{"redirect_uris": []string{cb}},
			{"name": "x"},
			{"name": "x", "redirect_uris": []string{}},
			{"name": "x", "redirect_uris": []string{"/relative"}},
			{"name": "x", "redirect_uris": []string{cb + "#frag"}},
			{"name": "x", "redirect_uris": []string{"javascript://alert(1)"}},
			{"name": "x", "redirect_uris": []string{"data://text/html,hi"}},
			{"name": "x", "redirect_uris": []string{"https://"}},
			{"name": "x", "redirect_uris": []string{"myapp:callback"}},
			{"name": "x", "redirect_uris": []string{"https://a.example/ cb"}},
			{"name": "x", "redirect_uris": []string{cb}, "allowed_scopes": []string{"openid", "admin"}},
			{"name": "x", "redirect_uris": []string{cb}, "client_type": "hybrid"},
			{"name": "x", "redirect_uris": []string{cb}, "id_token_signed_response_alg": "none"},
			{"name": "x", "redirect_uris": []string{cb}, "logo_url": "javascript:alert(1)"},
			{"name": strings.Repeat("n", 101), "redirect_uris": []string{cb}},
			{"name": 5, "redirect_uris": []string{cb}},
		}
		for _, b := range bad {
			e.Call(t, "POST", "/v1/oauth/clients", user.Token, b, http.StatusBadRequest)
		}
		e.Call(t, "POST", "/v1/oauth/clients", user.Token, "{", http.StatusBadRequest)
		e.Call(t, "POST", "/v1/oauth/clients", "", map[string]any{"name": "x", "redirect_uris": []string{cb}}, http.StatusUnauthorized)
		// Only super admins and system keys register first-party clients.
		e.Call(t, "POST", "/v1/oauth/clients", user.Token, map[string]any{"name": "x", "redirect_uris": []string{cb}, "is_first_party": true}, http.StatusForbidden)
		fp := e.Call(t, "POST", "/v1/oauth/clients", e.SystemKey, map[string]any{"name": "x", "redirect_uris": []string{cb}, "is_first_party": true}, http.StatusCreated).JSON()["data"].(map[string]any)
		if fp["is_first_party"] != true || fp["owner_id"] != nil {
			t.Fatalf("system-key client %v", fp)
		}
		// An OAuth access token cannot manage clients.
		c := testClient{ID: id, Secret: d["client_secret"].(string)}
		at := tokens(t, e, user.Token, c, authzParams(c.ID))["access_token"].(string)
		e.Call(t, "GET", "/v1/oauth/clients", at, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/oauth/clients", at, map[string]any{"name": "x", "redirect_uris": []string{cb}}, http.StatusForbidden)
	})
}

func TestOAuthClientAccessRules(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		stranger := e.NewUser(t, apptest.UserSpec{})
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_developer"}})
		admin := e.Admin(t)
		reader, _ := e.NewAPIKey(t, admin.ID, "oauth_clients:read")
		c := mkClient(t, e, owner.Token, nil)
		mkClient(t, e, owner.Token, map[string]any{"name": "Second"})
		mkClient(t, e, stranger.Token, nil)
		path := "/v1/oauth/clients/" + c.ID

		// Lists: own clients only, paginated; /all needs oauth_clients:read.
		l := e.Call(t, "GET", "/v1/oauth/clients?limit=1", owner.Token, nil, http.StatusOK).JSON()
		if len(l["data"].([]any)) != 1 || l["pagination"].(map[string]any)["total"] != float64(2) {
			t.Fatalf("own list %v", l)
		}
		if l := e.Call(t, "GET", "/v1/oauth/clients", e.SystemKey, nil, http.StatusOK).JSON(); len(l["data"].([]any)) != 0 {
			t.Fatalf("ownerless system key lists %v", l["data"])
		}
		e.Call(t, "GET", "/v1/oauth/clients", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/oauth/clients/all", owner.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/oauth/clients/all", "", nil, http.StatusUnauthorized)
		if l := e.Call(t, "GET", "/v1/oauth/clients/all", dev.Token, nil, http.StatusOK).JSON(); l["pagination"].(map[string]any)["total"] != float64(3) {
			t.Fatalf("all %v", l)
		}
		e.Call(t, "GET", "/v1/oauth/clients/all", reader, nil, http.StatusOK)

		// GET: owner or oauth_clients:read; others see 404.
		e.Call(t, "GET", path, owner.Token, nil, http.StatusOK)
		e.Call(t, "GET", path, reader, nil, http.StatusOK)
		e.Call(t, "GET", path, stranger.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", path, "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/oauth/clients/8d7b2f0e-1111-4222-8333-944455556666", owner.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/oauth/clients/nope", owner.Token, nil, http.StatusNotFound)

		// PATCH: owner or oauth_clients:update; readers without it get 403.
		upd := map[string]any{"name": "Renamed", "redirect_uris": []string{cb, "https://app.example/two"}, "logo_url": nil}
		d := e.Call(t, "PATCH", path, owner.Token, upd, http.StatusOK).JSON()["data"].(map[string]any)
		if d["name"] != "Renamed" || len(d["redirect_uris"].([]any)) != 2 {
			t.Fatalf("patched %v", d)
		}
		e.Call(t, "PATCH", path, dev.Token, map[string]any{"description": "by dev"}, http.StatusOK)
		e.Call(t, "PATCH", path, reader, map[string]any{"description": "x"}, http.StatusForbidden)
		e.Call(t, "PATCH", path, stranger.Token, map[string]any{"description": "x"}, http.StatusNotFound)
		e.Call(t, "PATCH", path, "", map[string]any{"description": "x"}, http.StatusUnauthorized)
		e.Call(t, "PATCH", path, owner.Token, map[string]any{"redirect_uris": []string{}}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, owner.Token, map[string]any{"client_type": "public"}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, owner.Token, map[string]any{"allowed_scopes": []string{"bogus"}}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, owner.Token, map[string]any{"is_first_party": true}, http.StatusForbidden)
		e.Call(t, "PATCH", path, owner.Token, "[", http.StatusBadRequest)
		e.Call(t, "PATCH", path, owner.Token, map[string]any{}, http.StatusBadRequest)
		if n := auditCount(t, e, "client_updated", c.ID); n != 2 {
			t.Fatalf("client_updated = %d", n)
		}

		// Regenerate: the new secret works, the old one does not.
		r := e.Call(t, "POST", path+"/regenerate-secret", owner.Token, nil, http.StatusOK).JSON()
		rd := r["data"].(map[string]any)
		if rd["client_id"] != c.ID || !strings.HasPrefix(rd["client_secret"].(string), "hm_sec_") || rd["message"] == "" || r["_links"] == nil {
			t.Fatalf("regenerate %v", r)
		}
		oauthErr(t, exchange(t, e, c, "hm_ac_x"), 401, "invalid_client")
		oauthErr(t, exchange(t, e, testClient{ID: c.ID, Secret: rd["client_secret"].(string)}, "hm_ac_x"), 400, "invalid_grant")
		e.Call(t, "POST", path+"/regenerate-secret", reader, nil, http.StatusForbidden)
		e.Call(t, "POST", path+"/regenerate-secret", stranger.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", path+"/regenerate-secret", "", nil, http.StatusUnauthorized)
		e.Call(t, "POST", path+"/regenerate-secret", dev.Token, nil, http.StatusOK)
		pub := mkClient(t, e, owner.Token, map[string]any{"client_type": "public"})
		e.Call(t, "POST", "/v1/oauth/clients/"+pub.ID+"/regenerate-secret", owner.Token, nil, http.StatusBadRequest)
		if n := auditCount(t, e, "client_secret_regenerated", c.ID); n != 2 {
			t.Fatalf("client_secret_regenerated = %d", n)
		}

		// First-party clients can be neither modified nor deleted.
		fp := mkClient(t, e, admin.Token, map[string]any{"is_first_party": true})
		e.Call(t, "PATCH", "/v1/oauth/clients/"+fp.ID, admin.Token, map[string]any{"name": "x"}, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/oauth/clients/"+fp.ID, admin.Token, nil, http.StatusForbidden)

		// DELETE: owner or oauth_clients:delete; the client's tokens die with it.
		c2 := mkClient(t, e, owner.Token, nil)
		tok := tokens(t, e, owner.Token, c2, authzParams(c2.ID))
		e.Call(t, "DELETE", "/v1/oauth/clients/"+c2.ID, reader, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/oauth/clients/"+c2.ID, stranger.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/oauth/clients/"+c2.ID, "", nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/oauth/clients/"+c2.ID, owner.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/oauth/clients/"+c2.ID, owner.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		if n := auditCount(t, e, "client_deleted", c2.ID); n != 1 {
			t.Fatalf("client_deleted = %d", n)
		}
		e.Call(t, "DELETE", path, dev.Token, nil, http.StatusNoContent)
	})
}

func TestOAuthUserInfo(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", "role_developer"}})
		c := mkClient(t, e, user.Token, map[string]any{"allowed_scopes": []string{"openid", "profile", "email", "roles", "permissions", "offline_access"}})
		all := tokens(t, e, user.Token, c, authzParams(c.ID, "scope", "openid profile email roles permissions"))["access_token"].(string)
		m := e.Call(t, "GET", "/v1/oauth/userinfo", all, nil, http.StatusOK).JSON()
		if m["sub"] != user.ID || m["name"] != user.Username || m["provider"] != "email" || m["is_super_admin"] != false ||
			m["email"] != user.Email || m["email_verified"] != true {
			t.Fatalf("userinfo %v", m)
		}
		if ids := m["role_ids"].([]any); len(ids) != 2 {
			t.Fatalf("role_ids %v", ids)
		}
		perms := m["permissions"].([]any)
		if len(perms) == 0 || !containsAny(perms, "oauth_clients:*") {
			t.Fatalf("permissions %v", perms)
		}
		// Read live: a role taken away disappears at once.
		if _, err := e.Server.DB.ExecContext(context.Background(), `DELETE FROM user_roles WHERE user_id = $1 AND role_id = 'role_developer'`, user.ID); err != nil {
			t.Fatal(err)
		}
		m = e.Call(t, "GET", "/v1/oauth/userinfo", all, nil, http.StatusOK).JSON()
		if len(m["roles"].([]any)) != 1 || containsAny(m["permissions"].([]any), "oauth_clients:*") {
			t.Fatalf("live userinfo %v", m)
		}
		// Only the granted scopes' claims.
		narrow := tokens(t, e, user.Token, c, authzParams(c.ID, "scope", "openid"))["access_token"].(string)
		m = e.Call(t, "GET", "/v1/oauth/userinfo", narrow, nil, http.StatusOK).JSON()
		if len(m) != 1 || m["sub"] != user.ID {
			t.Fatalf("openid-only userinfo %v", m)
		}
		// POST with the token in the form body; both ways at once is refused.
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/userinfo", Body: url.Values{"access_token": {narrow}}})
		if r.Status != 200 || r.JSON()["sub"] != user.ID || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("POST userinfo %d %s", r.Status, r.Body)
		}
		oauthErr(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/userinfo", Token: narrow, Body: url.Values{"access_token": {narrow}}}), 400, "invalid_request")
		// 401 with WWW-Authenticate for missing, malformed, unknown tokens, session tokens and API keys.
		r = e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo"})
		if r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("no token: %d %v", r.Status, r.Header)
		}
		for _, tok := range []string{"hm_at_bogus", user.Token, e.SystemKey} {
			r = e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: tok})
			oauthErr(t, r, 401, "invalid_token")
			if !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
			}
		}
		r = e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Header: map[string]string{"Authorization": "Basic eDp5"}})
		oauthErr(t, r, 401, "invalid_token")
		// A token without openid cannot read UserInfo.
		noOpenID := tokens(t, e, user.Token, c, authzParams(c.ID, "scope", "profile"))["access_token"].(string)
		oauthErr(t, e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: noOpenID}), 403, "insufficient_scope")
		// Deleted users' tokens stop working.
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE users SET deleted_at = 1 WHERE id = $1`, user.ID); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", all, nil, http.StatusUnauthorized)
	})
}

func containsAny(list []any, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestOAuthAccessTokenResolvesAsPrincipal(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		at := tokens(t, e, user.Token, c, authzParams(c.ID))["access_token"].(string)
		p, err := e.Server.Guard.Resolver.Resolve(context.Background(), at)
		if err != nil || p.Kind != "oauth" || p.UserID != user.ID || p.OAuthClientID != c.ID || len(p.OAuthScopes) != 3 || p.OAuthTokenID == "" || p.ExpiresAt.IsZero() {
			t.Fatalf("principal %+v, %v", p, err)
		}
		if p.Can("users:read") {
			t.Fatal("an OAuth token holds permissions")
		}
	})
}

func TestOAuthUserGrantsService(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		a := mkClient(t, e, user.Token, map[string]any{"name": "Alpha"})
		b := mkClient(t, e, user.Token, map[string]any{"name": "Beta"})
		svc := e.Server.OAuth
		ta := tokens(t, e, user.Token, a, authzParams(a.ID))
		tb := tokens(t, e, user.Token, b, authzParams(b.ID, "scope", "openid"))
		tokens(t, e, other.Token, a, authzParams(a.ID))

		consents, err := svc.ListUserConsents(ctx, user.ID)
		if err != nil || len(consents) != 2 {
			t.Fatalf("consents %+v, %v", consents, err)
		}
		names := map[string]oauth.ConsentInfo{}
		for _, c := range consents {
			names[c.ClientName] = c
		}
		if len(names["Alpha"].Scopes) != 3 || len(names["Beta"].Scopes) != 1 || names["Alpha"].IsFirstParty {
			t.Fatalf("consents %+v", consents)
		}
		toks, err := svc.ListUserTokens(ctx, user.ID)
		if err != nil || len(toks) != 4 {
			t.Fatalf("tokens %+v, %v", toks, err)
		}
		// Revoking one token by id (another user's id is not found).
		var betaAccess string
		for _, tk := range toks {
			if tk.ClientName == "Beta" && tk.Kind == "access" {
				betaAccess = tk.ID
			}
		}
		if err := svc.RevokeToken(ctx, other.ID, betaAccess); err == nil {
			t.Fatal("another user revoked the token")
		}
		if err := svc.RevokeToken(ctx, user.ID, betaAccess); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", tb["access_token"].(string), nil, http.StatusUnauthorized)
		// Revoking the consent revokes the client's tokens for that user only, and asks again.
		if err := svc.RevokeConsent(ctx, user.ID, a.ID, oauth.Meta{IP: "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeConsent(ctx, user.ID, a.ID, oauth.Meta{}); err == nil {
			t.Fatal("second revocation found a consent")
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", ta["access_token"].(string), nil, http.StatusUnauthorized)
		redirectError(t, e, authorize(t, e, user.Token, authzParams(a.ID, "prompt", "none"), nil), "consent_required")
		if n := auditCount(t, e, "consent_revoked", a.ID); n != 1 {
			t.Fatalf("consent_revoked = %d", n)
		}
		// The other user's tokens of the same client are untouched; RevokeUserTokens ends them.
		otherToks, _ := svc.ListUserTokens(ctx, other.ID)
		if len(otherToks) != 2 {
			t.Fatalf("other user's tokens %+v", otherToks)
		}
		if err := svc.RevokeUserTokens(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		if left, _ := svc.ListUserTokens(ctx, other.ID); len(left) != 0 {
			t.Fatalf("left after RevokeUserTokens: %+v", left)
		}
	})
}

// TestOAuthClientGrantTypes: grant_types (RFC 7591 §2) defaults to the
// code flow with refresh tokens, is validated, changes with PATCH, and a
// grant the client is not registered for is unauthorized_client at the
// token and authorization endpoints, changing nothing.
func TestOAuthClientGrantTypes(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		c := mkClient(t, e, dev.Token, nil)
		path := "/account/developer/clients/" + c.ID
		if p := b.get(path); !strings.Contains(p.body, `name="grant_types" value="client_credentials"`) || !strings.Contains(p.body, `name="grant_types_shown"`) {
			t.Fatalf("form without grant types: %s", p.body)
		}
		none := clientForm("Grants App", "redirect_uris", cb, "is_active", "yes", "grant_types_shown", "yes")
		if q := postFrom(t, b, path, path, none); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="grant_types-error"`) {
			t.Fatalf("no grant ticked: %d %s", q.status, q.body)
		}
		form := clientForm("Grants App", "redirect_uris", cb, "is_active", "yes", "grant_types_shown", "yes")
		form["grant_types"] = []string{"authorization_code", "refresh_token", "client_credentials"}
		if q := postFrom(t, b, path, path, form); q.status != http.StatusSeeOther {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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

// TestRelyingPartyLifecycle is a relying party written the way developers
// write one, golang.org/x/oauth2 with go-oidc, using nothing but what
// discovery announces. Its client has ES256 ID tokens, a post-logout
// redirect URI and a back-channel logout URI. It signs in (code flow with
// PKCE), verifies the ID token, refreshes, introspects its access token with
// its own credentials (RFC 7662), sends the browser to the
// end_session_endpoint with id_token_hint (RP-Initiated Logout 1.0), receives
// a logout token for the session at its back-channel URI and verifies it
// against the same JWKS (Back-Channel Logout 1.0), and finally revokes its
// refresh token (RFC 7009), after which introspection answers inactive.
func TestRelyingPartyLifecycle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		rp := newFakeRP(t)
		redirect, postLogout := rp.srv.URL+"/cb", rp.srv.URL+"/logged-out"
		c := mkClient(t, e, user.Token, map[string]any{"redirect_uris": []string{redirect},
			"id_token_signed_response_alg": "ES256", "post_logout_redirect_uris": []string{postLogout},
			"backchannel_logout_uri": rp.srv.URL + "/bcl", "allowed_scopes": []string{"openid", "email", "offline_access"}})

		provider, err := oidc.NewProvider(ctx, e.URL)
		if err != nil {
			t.Fatalf("discovery: %v", err)
		}
		var meta struct {
			EndSession    string `json:"end_session_endpoint"`
			Introspection string `json:"introspection_endpoint"`
			Revocation    string `json:"revocation_endpoint"`
		}
		if err := provider.Claims(&meta); err != nil || meta.EndSession == "" || meta.Introspection == "" || meta.Revocation == "" {
			t.Fatalf("discovery lacks an endpoint: %+v, %v", meta, err)
		}
		conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: redirect,
			Scopes: []string{"openid", "email", "offline_access"}, Endpoint: provider.Endpoint()}
		verifier := provider.Verifier(&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{"ES256"}, Now: e.Clock.Now})

		// Sign in, verify, refresh.
		tok := pkceFlow(t, ctx, e, conf, user.Token, "n-rp")
		rawID, _ := tok.Extra("id_token").(string)
		idt, err := verifier.Verify(ctx, rawID)
		if err != nil || idt.Subject != user.ID || idt.Nonce != "n-rp" {
			t.Fatalf("ID token: %+v, %v", idt, err)
		}
		var sid struct {
			SID string `json:"sid"`
		}
		if err := idt.Claims(&sid); err != nil || sid.SID == "" {
			t.Fatalf("the ID token names no session (sid): %v", err)
		}
		tok = refreshWith(t, ctx, conf, tok.RefreshToken)
		if _, err := verifier.Verify(ctx, tok.Extra("id_token").(string)); err != nil {
			t.Fatalf("refreshed ID token: %v", err)
		}

		// Introspection with client_secret_basic, as a resource server of
		// the client would.
		introspected := func(token string) map[string]any {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, "POST", meta.Introspection, strings.NewReader(url.Values{"token": {token}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("introspection: %d, %v", resp.StatusCode, err)
			}
			return m
		}
		if m := introspected(tok.AccessToken); m["active"] != true || m["client_id"] != c.ID || m["sub"] != user.ID {
			t.Fatalf("introspection of the live access token: %v", m)
		}

		// RP-Initiated Logout: the browser (the session's cookie) is sent to
		// the end_session_endpoint and comes back to the registered URI.
		logout := meta.EndSession + "?" + url.Values{"id_token_hint": {rawID}, "post_logout_redirect_uri": {postLogout}, "state": {"bye"}}.Encode()
		req, _ := http.NewRequestWithContext(ctx, "GET", logout, nil)
		req.Header.Set("Cookie", "hmid_session="+user.Token)
		req.Header.Set("Accept", "text/html")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != postLogout+"?state=bye" {
			t.Fatalf("end session: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		e.Call(t, "GET", "/v1/users/me", user.Token, nil, http.StatusUnauthorized)

		// Back-channel: the logout token names the session of the ID token
		// and verifies against the JWKS discovery points to.
		lt := rp.await(t, e, rawID)
		keys := oidc.NewRemoteKeySet(ctx, e.URL+"/v1/oauth/jwks")
		payload, err := keys.VerifySignature(ctx, lt)
		if err != nil {
			t.Fatalf("logout token signature: %v", err)
		}
		var claims struct {
			Iss    string         `json:"iss"`
			Aud    string         `json:"aud"`
			Sub    string         `json:"sub"`
			SID    string         `json:"sid"`
			Events map[string]any `json:"events"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil || claims.Iss != e.URL || claims.Aud != c.ID ||
			claims.Sub != user.ID || claims.SID != sid.SID || claims.Events["http://schemas.openid.net/event/backchannel-logout"] == nil {
			t.Fatalf("logout token claims %+v, %v", claims, err)
		}

		// The relying party drops its refresh token; introspection agrees.
		form := url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		rv, err := http.PostForm(meta.Revocation, form)
		if err != nil {
			t.Fatal(err)
		}
		rv.Body.Close()
		if rv.StatusCode != http.StatusOK {
			t.Fatalf("revocation: %d", rv.StatusCode)
		}
		if m := introspected(tok.RefreshToken); m["active"] != false || len(m) != 1 {
			t.Fatalf("introspection of the revoked refresh token: %v", m)
		}
	}, apptest.AllowLoopbackOutbound)
}

// TestFirstPartySecretRegeneration: a first-party client's secret is the
// credential of an app that skips consent, so only super admins and system
// keys may replace it. A developer with oauth_clients:update is refused
// (403, nothing changed) through REST, GraphQL and the admin console alike,
// and the console does not offer it; they still may for other clients.
func TestFirstPartySecretRegeneration(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		dev := roleUserWith(t, e, apptest.UserSpec{Password: "developer good password"}, "oauth_clients:read", "oauth_clients:update")
		owner := e.NewUser(t, apptest.UserSpec{})
		first := mkClient(t, e, admin.Token, map[string]any{"name": "Our App", "is_first_party": true})
		other := mkClient(t, e, owner.Token, map[string]any{"name": "Their App"})
		secretHash := func(id string) string {
			t.Helper()
			var h string
			if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT secret_hash FROM oauth_clients WHERE id = $1`, id).Scan(&h); err != nil {
				t.Fatal(err)
			}
			return h
		}
		regenerated := func() int {
			return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'client_secret_regenerated' AND resource_id = $1`, first.ID)
		}
		before := secretHash(first.ID)

		// REST: 403, nothing changed.
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients/" + first.ID + "/regenerate-secret", Token: dev.Token})
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "first-party") {
			t.Fatalf("developer REST: %d %s", r.Status, r.Body)
		}
		// GraphQL: the payload's failure, nothing changed.
		const regen = `mutation($id: ID!) { regenerateOauthClientSecret(id: $id) { success clientSecret error } }`
		wantPayloadFailure(t, gqlData(t, e, dev.Token, regen, map[string]any{"id": first.ID})["regenerateOauthClientSecret"])
		// Console: no regenerate form on the page, and a crafted POST (with a
		// valid token of the regen form from another client's page) is refused.
		b := signedInBrowser(t, e, dev)
		if p := b.get("/admin/clients/" + first.ID); p.status != http.StatusOK || strings.Contains(p.body, "/secret") {
			t.Fatalf("developer's page of the first-party client: %d, offers a new secret: %v", p.status, strings.Contains(p.body, "/secret"))
		}
		otherPage := b.get("/admin/clients/" + other.ID)
		p := b.do("POST", "/admin/clients/"+first.ID+"/secret", url.Values{
			"csrf_token": {formToken(t, otherPage.body, "/admin/clients/"+other.ID+"/secret")}, "confirm": {"yes"}})
		if p.status != http.StatusForbidden || developerSecret(p.body) != "" {
			t.Fatalf("developer console POST: %d %s", p.status, p.body)
		}
		if secretHash(first.ID) != before || regenerated() != 0 {
			t.Fatal("a refused regeneration changed the first-party client's secret")
		}
		// The developer may still regenerate a client that is not first-party.
		if r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients/" + other.ID + "/regenerate-secret", Token: dev.Token}); r.Status != http.StatusOK {
			t.Fatalf("developer, ordinary client: %d %s", r.Status, r.Body)
		}

		// A super admin (REST, GraphQL, console) and a system key may.
		for i, regenerate := range []func() string{
			func() string {
				return e.Call(t, "POST", "/v1/oauth/clients/"+first.ID+"/regenerate-secret", admin.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
			},
			func() string {
				return e.Call(t, "POST", "/v1/oauth/clients/"+first.ID+"/regenerate-secret", e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
			},
			func() string {
				out := gqlData(t, e, admin.Token, regen, map[string]any{"id": first.ID})["regenerateOauthClientSecret"].(map[string]any)
				s, _ := out["clientSecret"].(string)
				return s
			},
			func() string {
				ab := signedInBrowser(t, e, admin)
				page := "/admin/clients/" + first.ID
				return developerSecret(postFrom(t, ab, page, page+"/secret", url.Values{"confirm": {"yes"}}).body)
			},
		} {
			prev := secretHash(first.ID)
			if s := regenerate(); !strings.HasPrefix(s, "hm_sec_") || secretHash(first.ID) == prev {
				t.Fatalf("way %d: secret %q, stored hash changed: %v", i, s, secretHash(first.ID) != prev)
			}
		}
		if n := regenerated(); n != 4 {
			t.Fatalf("client_secret_regenerated events: %d, want 4", n)
		}
	})
}

func registrationMode(mode string) apptest.Option {
	return func(c *config.Config) { c.DynamicRegistration = mode }
}

// mcpRegistration is the registration request an MCP client sends (the
// shape of MCP clients' and the MCP SDKs' requests): a public client with PKCE.
func mcpRegistration() map[string]any {
	return map[string]any{
		"client_name":                "Desk Assistant",
		"redirect_uris":              []string{"https://mcp-client.example/api/mcp/auth_callback"},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      "openid profile offline_access",
		"software_id":                "ignored-by-hmid", // unknown members are ignored (RFC 7591 §2)
	}
}

func register(t *testing.T, e *apptest.Env, tok string, body map[string]any) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Token: tok, Body: body})
}

// dynamicCount counts the clients made by dynamic registration.
func dynamicCount(t *testing.T, e *apptest.Env) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE registration_kind IS NOT NULL`)
}

// dcrPKCEFlow runs the authorization code flow with PKCE for a public client
// whose redirect URI is redirect, and returns the token answer.
func dcrPKCEFlow(t *testing.T, e *apptest.Env, userTok, clientID, redirect, scope string) *apptest.Resp {
	t.Helper()
	verifier := strings.Repeat("v", 43)
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {scope}, "state": {"st4te"},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}}
	code := getCode(t, e, userTok, q)
	return tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}}, nil)
}

// TestDynamicRegistrationOpen registers an MCP client in open mode, signs a
// person in with it, manages the registration with its registration access
// token (RFC 7592), refuses bad metadata with RFC 7591's codes, and expires
// open registrations unused for 30 days.
func TestDynamicRegistrationOpen(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "mcp_user"})
		disc := e.Call(t, "GET", "/.well-known/oauth-authorization-server", "", nil, http.StatusOK).JSON()
		if disc["registration_endpoint"] != e.URL+"/v1/oauth/register" {
			t.Fatalf("registration_endpoint %v", disc["registration_endpoint"])
		}

		r := register(t, e, "", mcpRegistration())
		if r.Status != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		reg := r.JSON()
		id, rat := reg["client_id"].(string), reg["registration_access_token"].(string)
		if _, has := reg["client_secret"]; has || !strings.HasPrefix(rat, "hm_rat_") || reg["registration_client_uri"] != e.URL+"/v1/oauth/register/"+id ||
			reg["token_endpoint_auth_method"] != "none" || reg["scope"] != "offline_access openid profile" || reg["client_name"] != "Desk Assistant" {
			t.Fatalf("registration answer %v", reg)
		}
		tok := dcrPKCEFlow(t, e, u.Token, id, "https://mcp-client.example/api/mcp/auth_callback", "openid offline_access")
		if tok.Status != http.StatusOK || tok.JSON()["refresh_token"] == nil {
			t.Fatalf("token: %d %s", tok.Status, tok.Body)
		}

		// The admin list marks it.
		list := e.Call(t, "GET", "/v1/oauth/clients/all?limit=100", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		found := false
		for _, c := range list {
			if m := c.(map[string]any); m["id"] == id {
				found = m["dynamic_registration"] == "open" && m["is_first_party"] == false
			}
		}
		if !found {
			t.Fatalf("client %s not listed as registered dynamically: %v", id, list)
		}

		// RFC 7592: read, update, delete with the registration access token only.
		path := "/v1/oauth/register/" + id
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.Status != http.StatusOK || got.JSON()["client_id"] != id {
			t.Fatalf("read: %d %s", got.Status, got.Body)
		}
		for _, bad := range []string{"", "hm_rat_wrong", e.SystemKey, u.Token} {
			if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: bad}); got.Status != http.StatusUnauthorized || got.JSON()["error"] != "invalid_token" {
				t.Fatalf("read with %q: %d %s", bad, got.Status, got.Body)
			}
		}
		upd := mcpRegistration()
		upd["client_id"], upd["client_name"] = id, "Desk Assistant for desktops"
		if got := e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}); got.Status != http.StatusOK || got.JSON()["client_name"] != "Desk Assistant for desktops" {
			t.Fatalf("update: %d %s", got.Status, got.Body)
		}
		upd["token_endpoint_auth_method"] = "client_secret_basic" // public to confidential
		oauthErr(t, e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}), http.StatusBadRequest, "invalid_client_metadata")
		upd["token_endpoint_auth_method"], upd["redirect_uris"] = "none", []string{"javascript:alert(1)"}
		oauthErr(t, e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}), http.StatusBadRequest, "invalid_redirect_uri")
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.JSON()["client_name"] != "Desk Assistant for desktops" {
			t.Fatalf("a refused update changed the registration: %s", got.Body)
		}

		// A confidential registration gets a secret that works.
		conf := register(t, e, "", map[string]any{"redirect_uris": []string{cb}, "client_name": "Web app"})
		if conf.Status != http.StatusCreated || !strings.HasPrefix(conf.JSON()["client_secret"].(string), "hm_sec_") || conf.JSON()["client_secret_expires_at"] != float64(0) {
			t.Fatalf("confidential: %d %s", conf.Status, conf.Body)
		}
		cc := testClient{ID: conf.JSON()["client_id"].(string), Secret: conf.JSON()["client_secret"].(string)}
		if r := exchange(t, e, cc, getCode(t, e, u.Token, authzParams(cc.ID))); r.Status != http.StatusOK {
			t.Fatalf("confidential flow: %d %s", r.Status, r.Body)
		}

		// Bad registrations change nothing.
		before := dynamicCount(t, e)
		for name, c := range map[string]struct {
			body map[string]any
			code string
		}{
			"no redirect":        {map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
			"javascript":         {map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
			"fragment":           {map[string]any{"redirect_uris": []string{"https://a.example/cb#x"}}, "invalid_redirect_uri"},
			"implicit":           {map[string]any{"redirect_uris": []string{cb}, "response_types": []string{"token"}}, "invalid_client_metadata"},
			"client credentials": {map[string]any{"redirect_uris": []string{cb}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
			"permission scope":   {map[string]any{"redirect_uris": []string{cb}, "scope": "openid devices:read"}, "invalid_client_metadata"},
			"auth method":        {map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "tls_client_auth"}, "invalid_client_metadata"},
			"jwt without keys":   {map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"},
			"bad logo":           {map[string]any{"redirect_uris": []string{cb}, "logo_uri": "ftp://x"}, "invalid_client_metadata"},
			"not an object":      {nil, "invalid_client_metadata"},
		} {
			var body any = c.body
			if c.body == nil {
				body = "[1, 2]"
			}
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Body: body, Header: map[string]string{"Content-Type": "application/json"}})
			if r.Status != http.StatusBadRequest || r.JSON()["error"] != c.code {
				t.Fatalf("%s: %d %s, want %s", name, r.Status, r.Body, c.code)
			}
		}
		if n := dynamicCount(t, e); n != before {
			t.Fatalf("refused registrations stored: %d, want %d", n, before)
		}

		// Delete through RFC 7592; the token then opens nothing.
		if got := e.Do(t, apptest.Req{Method: "DELETE", Path: path, Token: rat}); got.Status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", got.Status, got.Body)
		}
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.Status != http.StatusUnauthorized {
			t.Fatalf("read after delete: %d", got.Status)
		}

		// Expiry: an open registration with no token for 30 days goes; one used meanwhile stays.
		unused := register(t, e, "", mcpRegistration()).JSON()["client_id"].(string)
		e.Clock.Advance(29 * 24 * time.Hour)
		if r := exchange(t, e, cc, getCode(t, e, u.Token, authzParams(cc.ID))); r.Status != http.StatusOK {
			t.Fatalf("late use: %d %s", r.Status, r.Body)
		}
		e.Clock.Advance(2 * 24 * time.Hour)
		if err := e.Server.OAuth.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+unused, e.SystemKey, nil, http.StatusNotFound)
		kept := data(t, e.Call(t, "GET", "/v1/oauth/clients/"+cc.ID, e.SystemKey, nil, http.StatusOK))
		if kept["last_used_at"] == nil {
			t.Fatalf("last use not recorded: %v", kept)
		}
	}, registrationMode("open"))
}

// TestDynamicRegistrationToken: in token mode a registration needs an
// initial access token, made by a super admin or a system key, which bounds
// the number of clients and their scopes; off, there is no endpoint.
func TestDynamicRegistrationToken(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "iat_user"})
		e.Call(t, "POST", "/v1/oauth/initial-access-tokens", u.Token, map[string]any{"name": "nope"}, http.StatusForbidden)
		iat := data(t, e.Call(t, "POST", "/v1/oauth/initial-access-tokens", e.SystemKey,
			map[string]any{"name": "MCP gateway", "max_clients": 1, "allowed_scopes": []string{"openid", "profile"}}, http.StatusCreated))
		value := iat["token"].(string)

		oauthErr(t, register(t, e, "", mcpRegistration()), http.StatusUnauthorized, "invalid_token")
		oauthErr(t, register(t, e, "hm_iat_unknown", mcpRegistration()), http.StatusUnauthorized, "invalid_token")
		// Scopes beyond the token's are refused and do not use up the token.
		oauthErr(t, register(t, e, value, mcpRegistration()), http.StatusBadRequest, "invalid_client_metadata")
		body := mcpRegistration()
		body["scope"], body["grant_types"] = "openid profile", []string{"authorization_code"}
		if r := register(t, e, value, body); r.Status != http.StatusCreated {
			t.Fatalf("register with the token: %d %s", r.Status, r.Body)
		}
		oauthErr(t, register(t, e, value, body), http.StatusUnauthorized, "invalid_token") // used up
		list := e.Call(t, "GET", "/v1/oauth/initial-access-tokens", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["clients_registered"] != float64(1) || list[0].(map[string]any)["token"] != nil {
			t.Fatalf("list %v", list)
		}
		e.Call(t, "DELETE", "/v1/oauth/initial-access-tokens/"+iat["id"].(string), e.SystemKey, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/oauth/initial-access-tokens/9a1c6a8e-0000-4000-8000-000000000000", e.SystemKey, nil, http.StatusNotFound)
	}, registrationMode("token"))
}

// TestDynamicRegistrationOff: the default has no registration endpoint.
func TestDynamicRegistrationOff(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		if _, has := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()["registration_endpoint"]; has {
			t.Fatal("registration_endpoint listed while off")
		}
		if r := register(t, e, "", mcpRegistration()); r.Status != http.StatusNotFound {
			t.Fatalf("register while off: %d %s", r.Status, r.Body)
		}
	})
}

// TestDynamicRegistrationPrivateKeyJWT: an agent registers itself with its
// public keys (no secret is issued), authenticates with a signed assertion,
// and replaces its registration (RFC 7592) without naming the ID-token
// algorithm, which stays one it can use without a secret.
func TestDynamicRegistrationPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "agent_owner"})
		k := newJWTKey(t, "agent-1", jose.ES256)
		body := map[string]any{"client_name": "Build agent", "redirect_uris": []string{cb}, "token_endpoint_auth_method": "private_key_jwt",
			"jwks": jwks(k), "grant_types": []string{"authorization_code", "refresh_token"}, "scope": "openid offline_access"}
		r := register(t, e, "", body)
		if r.Status != http.StatusCreated {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		reg := r.JSON()
		id, rat := reg["client_id"].(string), reg["registration_access_token"].(string)
		if _, has := reg["client_secret"]; has || reg["id_token_signed_response_alg"] != "RS256" {
			t.Fatalf("registration %v", reg)
		}
		code := getCode(t, e, u.Token, authzParams(id, "scope", "openid offline_access"))
		if r := tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, k, id, nil)), nil); r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		body["client_id"], body["client_name"] = id, "Build agent 2"
		got := e.Do(t, apptest.Req{Method: "PUT", Path: "/v1/oauth/register/" + id, Token: rat, Body: body})
		if got.Status != http.StatusOK || got.JSON()["id_token_signed_response_alg"] != "RS256" || got.JSON()["client_name"] != "Build agent 2" {
			t.Fatalf("update: %d %s", got.Status, got.Body)
		}
	}, registrationMode("open"))
}

// jwtClientKey is one of a private_key_jwt client's signing keys.
type jwtClientKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newJWTKey(t *testing.T, kid string, alg jose.SignatureAlgorithm) jwtClientKey {
	t.Helper()
	var (
		priv crypto.Signer
		err  error
	)
	switch alg {
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return jwtClientKey{kid: kid, alg: alg, priv: priv}
}

// jwks is the public JWK Set of keys, as a client registers it.
func jwks(keys ...jwtClientKey) map[string]any {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Use: "sig", Algorithm: string(k.alg)})
	}
	b, _ := json.Marshal(set)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// assertion signs a client assertion (RFC 7523 §3) with k; edit changes the
// claims before signing.
func assertion(t *testing.T, e *apptest.Env, k jwtClientKey, clientID string, edit func(*jwt.Claims)) string {
	t.Helper()
	now := e.Clock.Now()
	cl := jwt.Claims{Issuer: clientID, Subject: clientID, Audience: jwt.Audience{e.URL + "/v1/oauth/token"},
		Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now), ID: rand.Text()}
	if edit != nil {
		edit(&cl)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(cl).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withAssertion adds the private_key_jwt parameters to a form.
func withAssertion(f url.Values, a string) url.Values {
	f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	f.Set("client_assertion", a)
	return f
}

func codeForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}}
}

// TestPrivateKeyJWT authenticates a client with signed assertions (RFC 7523
// §2.2) at the token, revocation and introspection endpoints, with each
// algorithm, and refuses forged, expired, far-future, wrongly addressed,
// replayed and otherwise bad assertions with invalid_client, changing nothing.
func TestPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_user"})
		es, rs, ed := newJWTKey(t, "es", jose.ES256), newJWTKey(t, "rs", jose.RS256), newJWTKey(t, "ed", jose.EdDSA)
		d := data(t, e.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Key App", "redirect_uris": []string{cb},
			"allowed_scopes":             []string{"openid", "profile", "offline_access"},
			"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es, rs, ed)}, http.StatusCreated))
		id := d["id"].(string)
		if _, has := d["client_secret"]; has || d["token_endpoint_auth_method"] != "private_key_jwt" || d["id_token_signed_response_alg"] != "RS256" || d["jwks"] == nil {
			t.Fatalf("registration answer %v", d)
		}

		code := getCode(t, e, u.Token, authzParams(id, "scope", "openid profile offline_access"))
		bad := map[string]string{}
		forger := newJWTKey(t, "es", jose.ES256) // same kid, another key
		bad["forged"] = assertion(t, e, forger, id, nil)
		bad["expired"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.Clock.Now().Add(-2 * time.Minute)) })
		bad["far exp"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.Clock.Now().Add(time.Hour)) })
		bad["no exp"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = nil })
		bad["wrong aud"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other.example/token"} })
		bad["iss differs"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Issuer = "someone-else" })
		bad["no jti"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.ID = "" })
		bad["nbf ahead"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(e.Clock.Now().Add(time.Minute * 2)) })
		bad["unknown client"] = assertion(t, e, es, "7c1a4f0e-0000-4000-8000-000000000000", nil)
		bad["not a JWT"] = "eyJhbGciOiJub25lIn0.e30."
		hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
		bad["HS256"], _ = jwt.Signed(hs).Claims(jwt.Claims{Issuer: id, Subject: id, Audience: jwt.Audience{e.URL},
			Expiry: jwt.NewNumericDate(e.Clock.Now().Add(time.Minute)), ID: "hs"}).Serialize()
		for name, a := range bad {
			r := tokenReq(t, e, withAssertion(codeForm(code), a), nil)
			if r.Status != http.StatusUnauthorized || r.JSON()["error"] != "invalid_client" {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		wrongType := codeForm(code)
		wrongType.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
		wrongType.Set("client_assertion", assertion(t, e, es, id, nil))
		oauthErr(t, tokenReq(t, e, wrongType, nil), http.StatusUnauthorized, "invalid_client")
		// A secret is not a way in for a private_key_jwt client, nor a second method beside the assertion.
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb},
			"client_id": {id}, "client_secret": {"hm_sec_guess"}}, nil), http.StatusUnauthorized, "invalid_client")
		both := withAssertion(codeForm(code), assertion(t, e, es, id, nil))
		both.Set("client_secret", "hm_sec_guess")
		oauthErr(t, tokenReq(t, e, both, nil), http.StatusBadRequest, "invalid_request")

		// Nothing above burnt the code: the good assertion redeems it, with the issuer as aud.
		good := assertion(t, e, es, id, func(c *jwt.Claims) { c.Audience = jwt.Audience{e.URL} })
		r := tokenReq(t, e, withAssertion(codeForm(code), good), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		tok := r.JSON()
		// Replayed: refused, whatever the request.
		replay := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}
		oauthErr(t, tokenReq(t, e, withAssertion(replay, good), nil), http.StatusUnauthorized, "invalid_client")

		// RS256 refreshes; the refresh token was not spent by the replay.
		r = tokenReq(t, e, withAssertion(replay, assertion(t, e, rs, id, nil)), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.Status, r.Body)
		}
		access := r.JSON()["access_token"].(string)
		// EdDSA at introspection, ES256 at revocation.
		in := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect",
			Body: withAssertion(url.Values{"token": {access}}, assertion(t, e, ed, id, nil))})
		if in.Status != http.StatusOK || in.JSON()["active"] != true || in.JSON()["client_id"] != id {
			t.Fatalf("introspect: %d %s", in.Status, in.Body)
		}
		in = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: withAssertion(url.Values{"token": {access}}, bad["forged"])})
		oauthErr(t, in, http.StatusUnauthorized, "invalid_client")
		rv := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: withAssertion(url.Values{"token": {access}}, bad["expired"])})
		oauthErr(t, rv, http.StatusUnauthorized, "invalid_client")
		e.Call(t, "GET", "/v1/oauth/userinfo", access, nil, http.StatusOK) // the refused revocation changed nothing
		rv = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: withAssertion(url.Values{"token": {access}}, assertion(t, e, es, id, nil))})
		if rv.Status != http.StatusOK {
			t.Fatalf("revoke: %d %s", rv.Status, rv.Body)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", access, nil, http.StatusUnauthorized)

		// A private_key_jwt client has no secret to regenerate.
		e.Call(t, "POST", "/v1/oauth/clients/"+id+"/regenerate-secret", u.Token, nil, http.StatusBadRequest)
	})
}

// TestPrivateKeyJWTRegistration refuses key material and combinations that
// cannot work, and moves a client between a secret and private_key_jwt.
func TestPrivateKeyJWTRegistration(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_reg"})
		es := newJWTKey(t, "es", jose.ES256)
		privSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: es.priv, KeyID: "p"}}})
		var priv map[string]any
		_ = json.Unmarshal(privSet, &priv)
		small, _ := rsa.GenerateKey(rand.Reader, 1024)
		for name, body := range map[string]map[string]any{
			"private key":      {"token_endpoint_auth_method": "private_key_jwt", "jwks": priv},
			"no keys":          {"token_endpoint_auth_method": "private_key_jwt"},
			"both":             {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "jwks_uri": "https://keys.example/jwks"},
			"HS256":            {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "id_token_signed_response_alg": "HS256"},
			"public":           {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "client_type": "public"},
			"unknown method":   {"token_endpoint_auth_method": "client_secret_jwt"},
			"not a set":        {"token_endpoint_auth_method": "private_key_jwt", "jwks": map[string]any{"keys": "x"}},
			"small RSA":        {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(jwtClientKey{kid: "s", alg: jose.RS256, priv: small})},
			"internal uri":     {"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "http://127.0.0.1:9/jwks"},
			"relative uri":     {"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "/jwks"},
			"public with post": {"client_type": "public", "token_endpoint_auth_method": "client_secret_post"},
		} {
			body["name"], body["redirect_uris"] = "Bad "+name, []string{cb}
			r := e.Call(t, "POST", "/v1/oauth/clients", u.Token, body, http.StatusBadRequest)
			if !strings.Contains(string(r.Body), "VALIDATION_ERROR") && !strings.Contains(string(r.Body), "error") {
				t.Fatalf("%s: %s", name, r.Body)
			}
		}
		var n int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM oauth_clients WHERE name LIKE 'Bad %'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("refused registrations stored: %d %v", n, err)
		}

		// A secret client moves to private_key_jwt: its secret stops working.
		c := mkClient(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "ES256"})
		d := data(t, e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es)}, http.StatusOK))
		if _, has := d["client_secret"]; has || d["token_endpoint_auth_method"] != "private_key_jwt" {
			t.Fatalf("moved: %v", d)
		}
		code := getCode(t, e, u.Token, authzParams(c.ID))
		oauthErr(t, exchange(t, e, c, code), http.StatusUnauthorized, "invalid_client")
		r := tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, es, c.ID, nil)), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		// And back: a new secret, shown once, and the keys no longer count.
		d = data(t, e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, map[string]any{"token_endpoint_auth_method": "client_secret_basic", "jwks": nil}, http.StatusOK))
		secret, _ := d["client_secret"].(string)
		if !strings.HasPrefix(secret, "hm_sec_") || d["jwks"] != nil {
			t.Fatalf("moved back: %v", d)
		}
		code = getCode(t, e, u.Token, authzParams(c.ID))
		oauthErr(t, tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, es, c.ID, nil)), nil), http.StatusUnauthorized, "invalid_client")
		if r := exchange(t, e, testClient{ID: c.ID, Secret: secret}, code); r.Status != http.StatusOK {
			t.Fatalf("secret after moving back: %d %s", r.Status, r.Body)
		}
	})
}

// jwksServer serves a JWK Set that the test can replace, counting fetches.
type jwksServer struct {
	mu      sync.Mutex
	set     map[string]any
	fetches int
}

func (j *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fetches++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(j.set)
}

func (j *jwksServer) put(set map[string]any) {
	j.mu.Lock()
	j.set = set
	j.mu.Unlock()
}

func (j *jwksServer) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetches
}

// TestPrivateKeyJWTKeysFromURI fetches a client's keys from its jwks_uri
// through the outbound client, caches them, and fetches again when an
// assertion names a key the cached set lacks (the client rotated).
func TestPrivateKeyJWTKeysFromURI(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwks_uri_user"})
		k1, k2 := newJWTKey(t, "one", jose.ES256), newJWTKey(t, "two", jose.EdDSA)
		keys := &jwksServer{set: jwks(k1)}
		srv := httptest.NewServer(keys)
		t.Cleanup(srv.Close)
		id := data(t, e.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "URI App", "redirect_uris": []string{cb},
			"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": srv.URL + "/jwks"}, http.StatusCreated))["id"].(string)
		introspect := func(k jwtClientKey) *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect",
				Body: withAssertion(url.Values{"token": {"hm_at_unknown"}}, assertion(t, e, k, id, nil))})
		}
		for range 3 {
			if r := introspect(k1); r.Status != http.StatusOK {
				t.Fatalf("introspect: %d %s", r.Status, r.Body)
			}
		}
		if n := keys.count(); n != 1 {
			t.Fatalf("fetched %d times, want 1 (cached)", n)
		}
		// Rotated at the client: the new key works once the pause has passed.
		keys.put(jwks(k2))
		e.Clock.Advance(time.Minute)
		if r := introspect(k2); r.Status != http.StatusOK {
			t.Fatalf("after rotation: %d %s", r.Status, r.Body)
		}
		oauthErr(t, introspect(k1), http.StatusUnauthorized, "invalid_client")
	}, apptest.AllowLoopbackOutbound)
}

// TestPrivateKeyJWTReplayOtherInstance: an assertion used on one instance is
// refused on the other (the jti is kept in the shared Redis until exp).
func TestPrivateKeyJWTReplayOtherInstance(t *testing.T) {
	t.Parallel()
	if dbtest.RedisURL() == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
	a, b := apptest.NewPair(t, dbtest.RedisURL())
	u := a.NewUser(t, apptest.UserSpec{Username: "jwt_pair"})
	es := newJWTKey(t, "es", jose.ES256)
	id := data(t, a.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Pair App", "redirect_uris": []string{cb},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es)}, http.StatusCreated))["id"].(string)
	// Addressed to both instances' issuers (each test instance has its own URL).
	both := func(c *jwt.Claims) { c.Audience = jwt.Audience{a.URL, b.URL} }
	used := assertion(t, a, es, id, both)
	introspect := func(e *apptest.Env, as string) *apptest.Resp {
		return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: withAssertion(url.Values{"token": {"hm_at_x"}}, as)})
	}
	if r := introspect(a, used); r.Status != http.StatusOK {
		t.Fatalf("on A: %d %s", r.Status, r.Body)
	}
	r := introspect(b, used)
	oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
	if !strings.Contains(r.JSON()["error_description"].(string), "jti") {
		t.Fatalf("refused for another reason: %s", r.Body)
	}
	if r := introspect(b, assertion(t, a, es, id, both)); r.Status != http.StatusOK {
		t.Fatalf("a fresh assertion on B: %d %s", r.Status, r.Body)
	}
}

// TestClientRowCacheFollowsWrites: on SQLite the token endpoint reads its
// client from a cache of rows. Every write that changes the row must show
// at once: a new secret, a deactivation, and the owner's deletion (which
// empties owner_id through ON DELETE SET NULL, in a statement that names
// only users).
func TestClientRowCacheFollowsWrites(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, owner.Token, map[string]any{"name": "Cached App"})
		// authenticates reports whether the token endpoint accepted the
		// client's credentials: a bogus refresh token is then invalid_grant,
		// where a refused client is invalid_client.
		authenticates := func(secret string) bool {
			t.Helper()
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{"grant_type": {"refresh_token"},
				"refresh_token": {"hm_rt_bogus"}, "client_id": {c.ID}, "client_secret": {secret}}})
			switch r.Status {
			case http.StatusBadRequest:
				return true
			case http.StatusUnauthorized:
				return false
			}
			t.Fatalf("token: %d %s", r.Status, r.Body)
			return false
		}
		if !authenticates(c.Secret) || !authenticates(c.Secret) {
			t.Fatal("the client's own secret is refused")
		}
		next := e.Call(t, "POST", "/v1/oauth/clients/"+c.ID+"/regenerate-secret", owner.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
		if authenticates(c.Secret) || !authenticates(next) {
			t.Fatal("after a new secret: the old one still works, or the new one does not")
		}
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, owner.Token, map[string]any{"is_active": false}, http.StatusOK)
		if authenticates(next) {
			t.Fatal("a deactivated client still authenticates")
		}
		get := func() map[string]any {
			return e.Call(t, "GET", "/v1/oauth/clients/"+c.ID, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		}
		if get()["owner_id"] != owner.ID {
			t.Fatalf("owner_id before: %v", get()["owner_id"])
		}
		if _, err := e.Server.DB.ExecContext(context.Background(), `DELETE FROM users WHERE id = $1`, owner.ID); err != nil {
			t.Fatal(err)
		}
		if o := get()["owner_id"]; o != nil {
			t.Fatalf("owner_id after the owner's deletion: %v, want null", o)
		}
	})
}

// TestOAuthClientManageWithOnePermission: each management operation needs
// only its own permission (spec 1, OAuth clients: "owner or
// oauth_clients:update" / ":delete"); oauth_clients:read is not also
// required, and a caller with none of them still cannot probe client ids.
func TestOAuthClientManageWithOnePermission(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		updater, _ := e.NewAPIKey(t, admin.ID, "oauth_clients:update")
		deleter, _ := e.NewAPIKey(t, admin.ID, "oauth_clients:delete")
		nothing, _ := e.NewAPIKey(t, admin.ID, "users:read")
		c := mkClient(t, e, owner.Token, nil)
		path := "/v1/oauth/clients/" + c.ID

		e.Call(t, "GET", path, updater, nil, http.StatusNotFound)
		e.Call(t, "PATCH", path, nothing, map[string]any{"description": "x"}, http.StatusNotFound)
		e.Call(t, "PATCH", path, deleter, map[string]any{"description": "x"}, http.StatusNotFound)
		d := e.Call(t, "PATCH", path, updater, map[string]any{"description": "by updater"}, http.StatusOK).JSON()["data"].(map[string]any)
		if d["description"] != "by updater" {
			t.Fatalf("patched %v", d)
		}
		e.Call(t, "PATCH", path, updater, map[string]any{"redirect_uris": []string{}}, http.StatusBadRequest)
		e.Call(t, "POST", path+"/regenerate-secret", deleter, nil, http.StatusNotFound)
		sec := e.Call(t, "POST", path+"/regenerate-secret", updater, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
		oauthErr(t, exchange(t, e, testClient{ID: c.ID, Secret: sec}, "hm_ac_x"), 400, "invalid_grant")
		e.Call(t, "DELETE", path, updater, nil, http.StatusNotFound)
		e.Call(t, "DELETE", path, nothing, nil, http.StatusNotFound)
		e.Call(t, "GET", path, owner.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", path, deleter, nil, http.StatusNoContent)
		e.Call(t, "GET", path, owner.Token, nil, http.StatusNotFound)
	})
}
