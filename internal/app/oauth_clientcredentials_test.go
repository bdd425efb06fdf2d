package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"hmid/internal/apptest"
)

// ccConfig is the golang.org/x/oauth2 client credentials configuration of c.
func ccConfig(e *apptest.Env, c testClient, scopes ...string) *clientcredentials.Config {
	return &clientcredentials.Config{ClientID: c.ID, ClientSecret: c.Secret, TokenURL: e.URL + "/v1/oauth/token", Scopes: scopes}
}

// TestClientCredentialsGrant drives the client credentials grant (RFC 6749
// §4.4) with golang.org/x/oauth2/clientcredentials against the running
// server: the token holds exactly its permission scopes on REST and
// GraphQL, acts as the client in the audit log, and every bad request gets
// its RFC error and stores nothing.
func TestClientCredentialsGrant(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		dev := roleUserWith(t, e, apptest.UserSpec{Roles: []string{"role_developer"}}, "devices:read", "gps:write", "users:write", "roles:read")
		target := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, dev.Token, map[string]any{"grant_types": []string{"client_credentials"},
			"allowed_scopes": []string{"devices:read", "gps:write", "users:write", "roles:read"}})

		tok, err := ccConfig(e, c, "devices:read", "users:write", "roles:read").Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok.AccessToken, "hm_at_") || tok.RefreshToken != "" || tok.Extra("id_token") != nil ||
			tok.TokenType != "Bearer" || tok.Extra("scope") != "devices:read roles:read users:write" {
			t.Fatalf("token %+v scope %v", tok, tok.Extra("scope"))
		}
		hc := ccConfig(e, c, "devices:read", "users:write", "roles:read").Client(ctx)
		status := func(method, path, body string) int {
			t.Helper()
			req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		// Exactly the granted permissions, through REST.
		if s := status("GET", "/v1/devices", ""); s != http.StatusOK {
			t.Fatalf("GET /v1/devices: %d", s)
		}
		if s := status("POST", "/v1/devices", `{"name":"x"}`); s != http.StatusForbidden {
			t.Fatalf("POST /v1/devices without devices:write: %d", s)
		}
		if s := status("GET", "/v1/users/"+target.ID, ""); s != http.StatusForbidden {
			t.Fatalf("GET a user without users:read: %d", s)
		}
		if s := status("GET", "/v1/users/me", ""); s != http.StatusNotFound {
			t.Fatalf("GET /v1/users/me of a service principal: %d", s)
		}
		// The audit log names the client as the actor.
		if s := status("PATCH", "/v1/users/"+target.ID, `{"username":"renamed_by_service"}`); s != http.StatusOK {
			t.Fatalf("PATCH user with users:write: %d", s)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND event_type = 'user_updated'`, target.ID, c.ID); n != 1 {
			t.Fatalf("user_updated events with the client as actor: %d", n)
		}
		// GraphQL: the same permissions.
		roles := gqlData(t, e, tok.AccessToken, `{ roles { id } }`, nil)
		if l, _ := roles["roles"].([]any); len(l) == 0 {
			t.Fatalf("GraphQL roles: %v", roles)
		}
		if code := gqlCode(t, e, tok.AccessToken, `{ myOauthConsents { clientId } }`, nil); code != "FORBIDDEN" {
			t.Fatalf("GraphQL consents of a service principal: %s", code)
		}
		// UserInfo is for user tokens.
		ui := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: tok.AccessToken})
		if ui.Status != http.StatusUnauthorized {
			t.Fatalf("userinfo with a client token: %d %s", ui.Status, ui.Body)
		}
		// Introspection by the client: active, for no user.
		in := tokenPost(t, e, "/v1/oauth/introspect", url.Values{"token": {tok.AccessToken}, "client_id": {c.ID}, "client_secret": {c.Secret}}).JSON()
		if in["active"] != true || in["client_id"] != c.ID || in["scope"] != "devices:read roles:read users:write" || in["sub"] != nil {
			t.Fatalf("introspection %v", in)
		}
		// Revocation ends it.
		if r := tokenPost(t, e, "/v1/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {c.ID}, "client_secret": {c.Secret}}); r.Status != http.StatusOK {
			t.Fatalf("revoke: %d", r.Status)
		}
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/devices", Token: tok.AccessToken}); r.Status != http.StatusUnauthorized {
			t.Fatalf("revoked token: %d", r.Status)
		}
		// Without scope: every permission scope of the client.
		def, err := ccConfig(e, c).Token(ctx)
		if err != nil || def.Extra("scope") != "devices:read gps:write roles:read users:write" {
			t.Fatalf("default scope %v, %v", def.Extra("scope"), err)
		}
	})
}

// tokenPost posts a form to an OAuth endpoint.
func tokenPost(t *testing.T, e *apptest.Env, path string, form url.Values) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: path, Body: form})
}

// TestClientCredentialsRefusals: every bad request gets its RFC error and
// stores no token.
func TestClientCredentialsRefusals(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		admin := e.Admin(t)
		c := mkClient(t, e, admin.Token, map[string]any{"grant_types": []string{"client_credentials", "authorization_code"},
			"allowed_scopes": []string{"openid", "profile", "devices:read"}})
		codeOnly := mkClient(t, e, admin.Token, map[string]any{"allowed_scopes": []string{"openid", "devices:read"}})
		stored := func() int { return count(t, e, `SELECT COUNT(*) FROM oauth_client_tokens`) }
		before := stored()
		cc := func(cl testClient, form url.Values) *apptest.Resp {
			form.Set("grant_type", "client_credentials")
			form.Set("client_id", cl.ID)
			if cl.Secret != "" && !form.Has("client_secret") {
				form.Set("client_secret", cl.Secret)
			}
			return tokenPost(t, e, "/v1/oauth/token", form)
		}
		oauthErr(t, cc(c, url.Values{"scope": {"openid"}}), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, cc(c, url.Values{"scope": {"devices:read profile"}}), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, cc(c, url.Values{"scope": {"devices:write"}}), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, cc(c, url.Values{"scope": {"nonsense"}}), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, cc(c, url.Values{"client_secret": {"hm_sec_wrong"}}), http.StatusUnauthorized, "invalid_client")
		oauthErr(t, cc(codeOnly, url.Values{"scope": {"devices:read"}}), http.StatusBadRequest, "unauthorized_client")
		_, err := ccConfig(e, codeOnly, "devices:read").Token(ctx)
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "unauthorized_client" {
			t.Fatalf("x/oauth2 with a client not registered for the grant: %v", err)
		}
		// A client with no permission scope has nothing to grant.
		none := mkClient(t, e, admin.Token, map[string]any{"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"openid"}})
		oauthErr(t, cc(none, url.Values{}), http.StatusBadRequest, "invalid_scope")
		if n := stored(); n != before {
			t.Fatalf("tokens stored by refused requests: %d", n-before)
		}
		// The token follows the client's registration at once: a permission
		// scope taken away is gone, and so is everything once the grant is.
		both := mkClient(t, e, admin.Token, map[string]any{"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"devices:read", "users:read"}})
		bt, err := ccConfig(e, both).Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/users/"+admin.ID, bt.AccessToken, nil, http.StatusOK)
		e.Call(t, "PATCH", "/v1/oauth/clients/"+both.ID, admin.Token, map[string]any{"allowed_scopes": []string{"devices:read"}}, http.StatusOK)
		e.Call(t, "GET", "/v1/users/"+admin.ID, bt.AccessToken, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/devices", bt.AccessToken, nil, http.StatusOK)
		e.Call(t, "PATCH", "/v1/oauth/clients/"+both.ID, admin.Token, map[string]any{"grant_types": []string{"authorization_code"}}, http.StatusOK)
		e.Call(t, "GET", "/v1/devices", bt.AccessToken, nil, http.StatusUnauthorized)

		// A deactivated client's token stops working.
		tok, err := ccConfig(e, c, "devices:read").Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, admin.Token, map[string]any{"is_active": false}, http.StatusOK)
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/devices", Token: tok.AccessToken}); r.Status != http.StatusUnauthorized {
			t.Fatalf("token of an inactive client: %d", r.Status)
		}
	})
}

// TestClientPermissionScopes: permission scopes are checked at
// registration against the registrar's own permissions (no escalation;
// super admins and system keys exempt), and a token never holds more than
// the client's owner holds when it is issued.
func TestClientPermissionScopes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		role := roleWith(t, e, "devices:read", "gps:write")
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{role, "role_developer", "role_user"}})
		body := func(scopes ...string) map[string]any {
			return map[string]any{"name": "svc", "redirect_uris": []string{cb}, "grant_types": []string{"client_credentials"}, "allowed_scopes": scopes}
		}
		e.Call(t, "POST", "/v1/oauth/clients", dev.Token, body("devices:read", "devices:delete"), http.StatusForbidden)
		e.Call(t, "POST", "/v1/oauth/clients", dev.Token, body("nosuch:thing"), http.StatusBadRequest)
		e.Call(t, "POST", "/v1/oauth/clients", dev.Token, body("Devices:Read"), http.StatusBadRequest)
		// Super admins and system keys may give any known permission.
		mkClient(t, e, e.Admin(t).Token, body("devices:delete"))
		sys := mkClient(t, e, e.SystemKey, body("users:delete"))
		if _, err := ccConfig(e, sys, "users:delete").Token(ctx); err != nil {
			t.Fatalf("ownerless client of a system key: %v", err)
		}

		c := mkClient(t, e, dev.Token, body("devices:read", "gps:write"))
		// An update may not add a permission the updater lacks, but keeps those the client has.
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, dev.Token, map[string]any{"allowed_scopes": []string{"devices:read", "gps:write", "trips:read"}}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, dev.Token, map[string]any{"name": "svc 2"}, http.StatusOK)

		// The owner loses gps:write: asked for, it is refused; the default leaves it out.
		execSQL(t, e, `DELETE FROM role_permissions WHERE role_id = $1 AND permission_id IN (SELECT id FROM permissions WHERE resource = 'gps')`, role)
		_, err := ccConfig(e, c, "gps:write").Token(ctx)
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_scope" {
			t.Fatalf("scope the owner lost: %v", err)
		}
		tok, err := ccConfig(e, c).Token(ctx)
		if err != nil || tok.Extra("scope") != "devices:read" {
			t.Fatalf("default scope after the owner lost gps:write: %v %v", tok, err)
		}
		// A banned owner's client gets nothing.
		ban(t, e, dev.ID)
		if _, err := ccConfig(e, c).Token(ctx); !errors.As(err, &re) || re.ErrorCode != "unauthorized_client" {
			t.Fatalf("client of a banned owner: %v", err)
		}
	})
}

// TestMachinePurge: the purge deletes dead client credentials tokens and
// device authorizations a day past their expiry, and keeps live ones.
func TestMachinePurge(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		admin := e.Admin(t)
		c := mkClient(t, e, admin.Token, map[string]any{"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"devices:read"}})
		dc := mkClient(t, e, admin.Token, map[string]any{"client_type": "public", "grant_types": []string{deviceGrant}, "allowed_scopes": []string{"openid"}})
		if _, err := ccConfig(e, c).Token(ctx); err != nil {
			t.Fatal(err)
		}
		startDevice(t, e, dc, "openid")
		purge := func() {
			if err := e.Server.OAuth.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}
		purge()
		if count(t, e, `SELECT COUNT(*) FROM oauth_client_tokens`) != 1 || count(t, e, `SELECT COUNT(*) FROM oauth_device_authorizations`) != 1 {
			t.Fatal("purge removed live rows")
		}
		e.Advance(t, 2*time.Hour)
		if _, err := ccConfig(e, c).Token(ctx); err != nil {
			t.Fatal(err)
		}
		purge()
		if count(t, e, `SELECT COUNT(*) FROM oauth_client_tokens`) != 1 || count(t, e, `SELECT COUNT(*) FROM oauth_device_authorizations`) != 1 {
			t.Fatal("expired token not purged, or the live one purged, or the device authorization purged before its day")
		}
		e.Advance(t, 24*time.Hour)
		purge()
		if count(t, e, `SELECT COUNT(*) FROM oauth_device_authorizations`) != 0 {
			t.Fatal("device authorization a day past expiry not purged")
		}
	})
}

// TestClientCredentialsStatements: a client credentials token costs the
// client's row and one INSERT, and resolving it one SELECT (its own table,
// chosen by the token's length, so user tokens never pay a second lookup).
func TestClientCredentialsStatements(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := mkClient(t, e, e.SystemKey, map[string]any{"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"devices:read"}})
		w, grant := countedReq(t, e, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {c.Secret}})
		if w.Code != http.StatusOK {
			t.Fatalf("grant: %d %s", w.Code, w.Body)
		}
		wantStatements(t, "client credentials grant", grant, []string{"SELECT id, owner_id, name, description", "INSERT INTO oauth_client_tokens"})
		var tr map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &tr)
		w, me := countedReq(t, e, "GET", "/v1/users/me", tr["access_token"].(string), nil)
		if w.Code != http.StatusNotFound {
			t.Fatalf("users/me: %d %s", w.Code, w.Body)
		}
		wantStatements(t, "resolve a client credentials token", me, []string{"SELECT t.id, t.client_id, t.scopes"})
	})
}
