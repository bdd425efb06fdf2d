package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/oauth"
)

func TestOAuthClientCreate(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
