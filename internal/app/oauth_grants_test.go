package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/token"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
// client's row (on PostgreSQL; SQLite has it cached) and one INSERT, and resolving it one SELECT (its own table,
// chosen by the token's length, so user tokens never pay a second lookup).
func TestClientCredentialsStatements(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := mkClient(t, e, e.SystemKey, map[string]any{"grant_types": []string{"client_credentials"}, "allowed_scopes": []string{"devices:read"}})
		w, grant := countedReq(t, e, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {c.Secret}})
		if w.Code != http.StatusOK {
			t.Fatalf("grant: %d %s", w.Code, w.Body)
		}
		want := []string{"INSERT INTO oauth_client_tokens"}
		if e.Engine.Name == "postgres" { // on SQLite the client comes from the cache of rows
			want = append([]string{"SELECT id, owner_id, name, description"}, want...)
		}
		wantStatements(t, "client credentials grant", grant, want)
		var tr map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &tr)
		w, me := countedReq(t, e, "GET", "/v1/users/me", tr["access_token"].(string), nil)
		if w.Code != http.StatusNotFound {
			t.Fatalf("users/me: %d %s", w.Code, w.Body)
		}
		wantStatements(t, "resolve a client credentials token", me, []string{"SELECT t.id, t.client_id, t.scopes"})
	})
}

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// userCodeRE is the shape of a user code as shown: two groups of four
// letters of the unambiguous alphabet.
var userCodeRE = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// mkDeviceClient registers a public client for the device grant.
func mkDeviceClient(t *testing.T, e *apptest.Env, tok string, extra map[string]any) testClient {
	t.Helper()
	body := map[string]any{"client_type": "public", "grant_types": []string{deviceGrant, "refresh_token"},
		"allowed_scopes": []string{"openid", "profile", "email", "offline_access"}}
	for k, v := range extra {
		body[k] = v
	}
	return mkClient(t, e, tok, body)
}

// deviceConfig is the golang.org/x/oauth2 configuration of a device client.
func deviceConfig(e *apptest.Env, c testClient, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, Scopes: scopes, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: e.URL + "/v1/oauth/device_authorization", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
}

// startDevice asks for a device authorization with form fields and returns the answer.
func startDevice(t *testing.T, e *apptest.Env, c testClient, scope string) map[string]any {
	t.Helper()
	f := url.Values{"client_id": {c.ID}, "scope": {scope}}
	if c.Secret != "" {
		f.Set("client_secret", c.Secret)
	}
	r := tokenPost(t, e, "/v1/oauth/device_authorization", f)
	if r.Status != http.StatusOK {
		t.Fatalf("device authorization: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

// pollDevice polls the token endpoint once.
func pollDevice(t *testing.T, e *apptest.Env, c testClient, deviceCode string) *apptest.Resp {
	t.Helper()
	f := url.Values{"grant_type": {deviceGrant}, "device_code": {deviceCode}, "client_id": {c.ID}}
	if c.Secret != "" {
		f.Set("client_secret", c.Secret)
	}
	return tokenPost(t, e, "/v1/oauth/token", f)
}

// devicePage posts the verification page's form: the lookup of code, or
// with decision its approval or denial.
func devicePage(t *testing.T, b *browser, code, decision string) page {
	t.Helper()
	p := b.get("/device?user_code=" + url.QueryEscape(code))
	if p.status != http.StatusOK {
		t.Fatalf("GET /device: %d %s", p.status, p.body)
	}
	f := url.Values{"csrf_token": {formToken(t, p.body, "/device")}, "user_code": {code}}
	if decision != "" {
		f.Set("decision", decision)
	}
	return b.do("POST", "/device", f)
}

// deviceStatus is the stored status of the device authorization of a user code.
func deviceStatus(t *testing.T, e *apptest.Env, deviceCode string) string {
	t.Helper()
	var s string
	row := e.Server.DB.QueryRowContext(context.Background(), `SELECT status FROM oauth_device_authorizations WHERE device_code_hash = $1`, token.Hash(deviceCode))
	if err := row.Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeviceGrantXOAuth2: golang.org/x/oauth2's DeviceAuth and
// DeviceAccessToken against the running server. The device polls while the
// person opens verification_uri_complete and approves; it gets its tokens
// once, which act for the person (UserInfo) and refresh.
func TestDeviceGrantXOAuth2(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := mkDeviceClient(t, e, u.Token, nil)
		cfg := deviceConfig(e, c, "openid", "profile", "offline_access")
		da, err := cfg.DeviceAuth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !userCodeRE.MatchString(da.UserCode) || da.VerificationURI != e.URL+"/device" ||
			da.VerificationURIComplete != e.URL+"/device?user_code="+da.UserCode || da.Interval != 5 ||
			!strings.HasPrefix(da.DeviceCode, "hm_dc_") || time.Until(da.Expiry) < 9*time.Minute || time.Until(da.Expiry) > 11*time.Minute {
			t.Fatalf("device authorization %+v", da)
		}
		// The device polls (every second here, with the server's clock moved
		// on between polls) while the person approves.
		da.Interval = 1
		var (
			tok  *oauth2.Token
			perr error
			wg   sync.WaitGroup
		)
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			tok, perr = cfg.DeviceAccessToken(tctx, da)
		}()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
					e.Clock.Advance(2 * time.Second)
				}
			}
		}()
		time.Sleep(1500 * time.Millisecond) // a poll or so answered authorization_pending
		b := signedInBrowser(t, e, u)
		// The link of verification_uri_complete prefills the code.
		if p := b.get(strings.TrimPrefix(da.VerificationURIComplete, e.URL)); !strings.Contains(p.body, `value="`+da.UserCode+`"`) {
			t.Fatalf("code not prefilled: %s", p.body)
		}
		if p := devicePage(t, b, da.UserCode, "approve"); p.status != http.StatusOK || !strings.Contains(p.body, "is signed in on your device") {
			t.Fatalf("approve: %d %s", p.status, p.body)
		}
		<-done
		close(stop)
		wg.Wait()
		if perr != nil {
			t.Fatal(perr)
		}
		if !strings.HasPrefix(tok.AccessToken, "hm_at_") || tok.RefreshToken == "" || tok.Extra("id_token") == nil {
			t.Fatalf("tokens %+v", tok)
		}
		ui := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: tok.AccessToken}).JSON()
		if ui["sub"] != u.ID {
			t.Fatalf("userinfo %v", ui)
		}
		// Once: the device code is spent.
		oauthErr(t, pollDevice(t, e, c, da.DeviceCode), http.StatusBadRequest, "invalid_grant")
		if _, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
			t.Fatalf("refresh: %v", err)
		}
	})
}

// TestDeviceGrantPolling: each answer of RFC 8628 §3.5 in turn, typing the
// code on the page, and every bad input refused with its error while the
// stored authorization stays as it was.
func TestDeviceGrantPolling(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := mkDeviceClient(t, e, u.Token, nil)
		d := startDevice(t, e, c, "openid profile")
		code, userCode := d["device_code"].(string), d["user_code"].(string)
		if d["expires_in"] != float64(600) || d["interval"] != float64(5) {
			t.Fatalf("answer %v", d)
		}
		oauthErr(t, pollDevice(t, e, c, code), http.StatusBadRequest, "authorization_pending")
		// Too fast: slow_down, and the interval grows by 5 s.
		oauthErr(t, pollDevice(t, e, c, code), http.StatusBadRequest, "slow_down")
		if n := count(t, e, `SELECT interval_seconds FROM oauth_device_authorizations WHERE device_code_hash = $1`, token.Hash(code)); n != 10 {
			t.Fatalf("interval after slow_down: %d", n)
		}
		e.Advance(t, 6*time.Second)
		oauthErr(t, pollDevice(t, e, c, code), http.StatusBadRequest, "slow_down") // 6 s < 10 s
		e.Advance(t, 16*time.Second)
		oauthErr(t, pollDevice(t, e, c, code), http.StatusBadRequest, "authorization_pending")

		b := signedInBrowser(t, e, u)
		// A wrong code: an error on the page, nothing decided.
		for _, bad := range []string{"BCDF-GHJK", "AAAA-AAAA", "", strings.Repeat("B", 40), "<script>"} {
			if p := devicePage(t, b, bad, "approve"); p.status != http.StatusNotFound || !strings.Contains(p.body, "This code is not valid") {
				t.Fatalf("wrong code %q: %d %s", bad, p.status, p.body)
			}
		}
		if s := deviceStatus(t, e, code); s != "pending" {
			t.Fatalf("status after wrong codes: %s", s)
		}
		// Typed in lower case without the hyphen: found, shown, approved.
		typed := strings.ToLower(strings.ReplaceAll(userCode, "-", ""))
		if p := devicePage(t, b, typed, ""); p.status != http.StatusOK || !strings.Contains(p.body, userCode) || !strings.Contains(p.body, "Test App") ||
			!strings.Contains(p.body, "own device") || !strings.Contains(p.body, "<strong>profile</strong>") {
			t.Fatalf("lookup: %d %s", p.status, p.body)
		}
		if p := devicePage(t, b, typed, "approve"); p.status != http.StatusOK {
			t.Fatalf("approve: %d %s", p.status, p.body)
		}
		// Single use: the same code again is not valid.
		if p := devicePage(t, b, userCode, "deny"); p.status != http.StatusNotFound {
			t.Fatalf("reused code: %d", p.status)
		}
		e.Advance(t, 11*time.Second)
		tok := pollDevice(t, e, c, code)
		if tok.Status != http.StatusOK || tok.JSON()["id_token"] == nil {
			t.Fatalf("tokens: %d %s", tok.Status, tok.Body)
		}
		oauthErr(t, pollDevice(t, e, c, code), http.StatusBadRequest, "invalid_grant")
		if n := auditCount(t, e, "consent_granted", c.ID); n != 1 {
			t.Fatalf("consent_granted events: %d", n)
		}
		// Consent now covers the scopes: the next request shows none.
		d2 := startDevice(t, e, c, "openid")
		if p := devicePage(t, b, d2["user_code"].(string), ""); strings.Contains(p.body, `class="scopes"`) {
			t.Fatal("consent asked again for covered scopes")
		}

		// A client that keeps polling too fast: slow_down every time, the
		// interval grows by 5 s each time up to the code's lifetime, never
		// a server error.
		dFast := startDevice(t, e, c, "openid")
		pollDevice(t, e, c, dFast["device_code"].(string))
		for range 125 {
			oauthErr(t, pollDevice(t, e, c, dFast["device_code"].(string)), http.StatusBadRequest, "slow_down")
		}
		if n := count(t, e, `SELECT interval_seconds FROM oauth_device_authorizations WHERE device_code_hash = $1`, token.Hash(dFast["device_code"].(string))); n != 600 {
			t.Fatalf("interval after 125 slow_downs: %d", n)
		}

		// Denied: access_denied, and it stays so.
		d3 := startDevice(t, e, c, "openid")
		if p := devicePage(t, b, d3["user_code"].(string), "deny"); p.status != http.StatusOK || !strings.Contains(p.body, "denied") {
			t.Fatalf("deny: %d %s", p.status, p.body)
		}
		oauthErr(t, pollDevice(t, e, c, d3["device_code"].(string)), http.StatusBadRequest, "access_denied")
		e.Advance(t, 6*time.Second)
		oauthErr(t, pollDevice(t, e, c, d3["device_code"].(string)), http.StatusBadRequest, "access_denied")

		// Expired: expired_token, and the page no longer knows the code.
		d4 := startDevice(t, e, c, "openid")
		e.Advance(t, 601*time.Second)
		oauthErr(t, pollDevice(t, e, c, d4["device_code"].(string)), http.StatusBadRequest, "expired_token")
		b = signedInBrowser(t, e, u)
		if p := devicePage(t, b, d4["user_code"].(string), "approve"); p.status != http.StatusNotFound {
			t.Fatalf("expired code on the page: %d", p.status)
		}
		if s := deviceStatus(t, e, d4["device_code"].(string)); s != "pending" {
			t.Fatalf("expired authorization changed to %s", s)
		}
	})
}

// TestDeviceGrantRefusals: the device authorization endpoint and the token
// endpoint refuse what RFC 8628 and RFC 6749 refuse, storing nothing.
func TestDeviceGrantRefusals(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := mkDeviceClient(t, e, u.Token, nil)
		other := mkDeviceClient(t, e, u.Token, nil)
		codeOnly := mkClient(t, e, u.Token, nil)
		rows := func() int { return count(t, e, `SELECT COUNT(*) FROM oauth_device_authorizations`) }
		before := rows()
		req := func(cl testClient, scope string) *apptest.Resp {
			f := url.Values{"client_id": {cl.ID}, "scope": {scope}}
			if cl.Secret != "" {
				f.Set("client_secret", cl.Secret)
			}
			return tokenPost(t, e, "/v1/oauth/device_authorization", f)
		}
		oauthErr(t, req(codeOnly, "openid"), http.StatusBadRequest, "unauthorized_client")
		oauthErr(t, req(c, ""), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, req(c, "openid roles"), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, req(c, "devices:read"), http.StatusBadRequest, "invalid_scope")
		oauthErr(t, req(testClient{ID: "00000000-0000-0000-0000-000000000000"}, "openid"), http.StatusUnauthorized, "invalid_client")
		oauthErr(t, tokenPost(t, e, "/v1/oauth/device_authorization", url.Values{"scope": {"openid"}}), http.StatusUnauthorized, "invalid_client")
		if n := rows(); n != before {
			t.Fatalf("stored by refused requests: %d", n-before)
		}
		d := startDevice(t, e, c, "openid")
		code := d["device_code"].(string)
		// Polled by another client, by a client not registered for the
		// grant, without or with a bogus device code.
		oauthErr(t, pollDevice(t, e, other, code), http.StatusBadRequest, "invalid_grant")
		oauthErr(t, pollDevice(t, e, codeOnly, code), http.StatusBadRequest, "unauthorized_client")
		oauthErr(t, pollDevice(t, e, c, ""), http.StatusBadRequest, "invalid_request")
		oauthErr(t, pollDevice(t, e, c, "hm_dc_nope"), http.StatusBadRequest, "invalid_grant")
		oauthErr(t, pollDevice(t, e, c, "not a code"), http.StatusBadRequest, "invalid_grant")
		if s := deviceStatus(t, e, code); s != "pending" {
			t.Fatalf("status %s", s)
		}
		// Guessing codes is throttled: after 10 misses even the right code is refused for a while.
		b := signedInBrowser(t, e, u)
		for range 10 {
			if p := devicePage(t, b, "BBBB-BBBB", ""); p.status != http.StatusNotFound {
				t.Fatalf("miss: %d", p.status)
			}
		}
		if p := devicePage(t, b, d["user_code"].(string), "approve"); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many wrong codes") {
			t.Fatalf("after 10 misses: %d %s", p.status, p.body)
		}
		if s := deviceStatus(t, e, code); s != "pending" {
			t.Fatalf("approved while throttled: %s", s)
		}
		e.Advance(t, 10*time.Minute)
		// Signed out, the page sends the person to the login page and back with the code.
		anon := newBrowser(t, e)
		if p := anon.get("/device?user_code=BCDF-GHJK"); p.status != http.StatusSeeOther ||
			p.location != "/login?return_to="+url.QueryEscape("/device?user_code=BCDF-GHJK") {
			t.Fatalf("signed out: %d %q", p.status, p.location)
		}
		// A post without the form's CSRF token decides nothing.
		if p := b.do("POST", "/device", url.Values{"user_code": {d["user_code"].(string)}, "decision": {"approve"}}); p.status != http.StatusForbidden {
			t.Fatalf("no CSRF token: %d", p.status)
		}
		if s := deviceStatus(t, e, code); s != "pending" {
			t.Fatalf("approved without CSRF: %s", s)
		}
	})
}

// TestDeviceGrantAcrossInstances: two instances on PostgreSQL and Redis; a
// device code issued by one is approved on the other, and polled on both.
func TestDeviceGrantAcrossInstances(t *testing.T) {
	t.Parallel()
	redisURL := dbtest.RedisURL()
	if redisURL == "" {
		t.Skip("needs HMID_TEST_REDIS_URL")
	}
	a, b := apptest.NewPair(t, redisURL)
	u := a.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
	c := mkDeviceClient(t, a, u.Token, nil)
	d := startDevice(t, a, c, "openid profile")
	code := d["device_code"].(string)
	oauthErr(t, pollDevice(t, b, c, code), http.StatusBadRequest, "authorization_pending")
	br := signedInBrowser(t, b, u)
	if p := devicePage(t, br, d["user_code"].(string), "approve"); p.status != http.StatusOK {
		t.Fatalf("approve on b: %d %s", p.status, p.body)
	}
	a.Advance(t, 6*time.Second)
	r := pollDevice(t, a, c, code)
	if r.Status != http.StatusOK {
		t.Fatalf("tokens on a: %d %s", r.Status, r.Body)
	}
	oauthErr(t, pollDevice(t, b, c, code), http.StatusBadRequest, "invalid_grant")
	// The throttle of code guesses is shared too.
	for range 10 {
		devicePage(t, br, "BBBB-BBBB", "")
	}
	ar := signedInBrowser(t, a, u)
	d2 := startDevice(t, a, c, "openid")
	if p := devicePage(t, ar, d2["user_code"].(string), ""); p.status != http.StatusTooManyRequests {
		t.Fatalf("guesses on b did not count on a: %d", p.status)
	}
}

// TestDeviceGrantEndsWithCredential: a password change ends the grants made
// with the old credential, so a device authorization approved but not yet
// redeemed gets access_denied; tokens already issued to a device end too.
func TestDeviceGrantEndsWithCredential(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "old-password-1"})
		c := mkDeviceClient(t, e, u.Token, nil)
		b := signedInBrowser(t, e, u)
		issued := startDevice(t, e, c, "openid")
		devicePage(t, b, issued["user_code"].(string), "approve")
		tok := pollDevice(t, e, c, issued["device_code"].(string)).JSON()
		waiting := startDevice(t, e, c, "openid")
		devicePage(t, b, waiting["user_code"].(string), "approve")
		e.Call(t, "POST", "/v1/users/me/password", u.Token, map[string]any{"current_password": "old-password-1", "new_password": "new-password-2"}, http.StatusOK)
		oauthErr(t, pollDevice(t, e, c, waiting["device_code"].(string)), http.StatusBadRequest, "access_denied")
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: tok["access_token"].(string)}); r.Status != http.StatusUnauthorized {
			t.Fatalf("device token after a password change: %d", r.Status)
		}
	})
}

// TestDeviceGrantFirstParty: a first-party client skips consent on the
// verification page (no scope list, no consent stored), but the person
// still confirms the code.
func TestDeviceGrantFirstParty(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := mkDeviceClient(t, e, e.Admin(t).Token, map[string]any{"is_first_party": true})
		d := startDevice(t, e, c, "openid profile")
		b := signedInBrowser(t, e, u)
		p := devicePage(t, b, d["user_code"].(string), "")
		if p.status != http.StatusOK || strings.Contains(p.body, `class="scopes"`) || !strings.Contains(p.body, `value="approve"`) {
			t.Fatalf("first-party lookup: %d %s", p.status, p.body)
		}
		devicePage(t, b, d["user_code"].(string), "approve")
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_consents WHERE client_id = $1`, c.ID); n != 0 {
			t.Fatalf("consents stored for a first-party client: %d", n)
		}
		if r := pollDevice(t, e, c, d["device_code"].(string)); r.Status != http.StatusOK {
			t.Fatalf("tokens: %d %s", r.Status, r.Body)
		}
	})
}

const (
	resAPI   = "https://api.example/"
	resFiles = "https://files.example/v1"
)

// introspectAud introspects tok with the client's secret and returns aud.
func introspectAud(t *testing.T, e *apptest.Env, c testClient, tok string) any {
	t.Helper()
	r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: url.Values{"token": {tok}, "client_id": {c.ID}, "client_secret": {c.Secret}}})
	m := r.JSON()
	if r.Status != http.StatusOK || m["active"] != true {
		t.Fatalf("introspect: %d %s", r.Status, r.Body)
	}
	return m["aud"]
}

// TestResourceIndicators: resource on the authorization and token requests
// (RFC 8707) sets the access token's audience, within what the client may
// ask and the authorization granted; a refresh may narrow it; anything else
// is invalid_target and changes nothing.
func TestResourceIndicators(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "res_user"})
		c := mkClient(t, e, u.Token, map[string]any{"resources": []string{resAPI, resFiles}, "allowed_scopes": []string{"openid", "offline_access"}})

		// Authorization requests: not allowed, not absolute, or with a fragment.
		for _, bad := range []string{"https://evil.example/", "/relative", "https://api.example/#x", "urn:no-host"} {
			q := authzParams(c.ID, "scope", "openid")
			q.Set("resource", bad)
			redirectError(t, e, authorize(t, e, u.Token, q, nil), "invalid_target")
		}

		q := authzParams(c.ID, "scope", "openid offline_access")
		q["resource"] = []string{resAPI, resFiles}
		code := getCode(t, e, u.Token, q)
		// A resource the client may not ask for is refused before the code is touched.
		oauthErr(t, exchange(t, e, c, code, "resource", "https://other.example/"), http.StatusBadRequest, "invalid_target")
		r := exchange(t, e, c, code)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		tok := r.JSON()
		if aud := introspectAud(t, e, c, tok["access_token"].(string)); !reflect.DeepEqual(aud, []any{resAPI, resFiles}) {
			t.Fatalf("aud %v, want both resources", aud)
		}

		// A refresh narrows to one resource; an ungranted one is refused and spends nothing.
		rt := tok["refresh_token"].(string)
		oauthErr(t, refreshReq(t, e, c, rt, "resource", "https://evil.example/"), http.StatusBadRequest, "invalid_target")
		oauthErr(t, refreshReq(t, e, c, rt, "resource", "not a uri"), http.StatusBadRequest, "invalid_target")
		r = refreshReq(t, e, c, rt, "resource", resAPI)
		if r.Status != http.StatusOK {
			t.Fatalf("narrowing refresh: %d %s", r.Status, r.Body)
		}
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); aud != resAPI {
			t.Fatalf("aud %v, want %s", aud, resAPI)
		}
		// The next refresh without resource is for all granted resources again.
		r = refreshReq(t, e, c, r.JSON()["refresh_token"].(string))
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); !reflect.DeepEqual(aud, []any{resAPI, resFiles}) {
			t.Fatalf("aud after a plain refresh %v", aud)
		}

		// Without resources: the client is the audience; the token request may name an allowed one.
		code = getCode(t, e, u.Token, authzParams(c.ID, "scope", "openid"))
		r = exchange(t, e, c, code, "resource", resFiles)
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); aud != resFiles {
			t.Fatalf("aud %v, want %s", aud, resFiles)
		}
		code = getCode(t, e, u.Token, authzParams(c.ID, "scope", "openid"))
		if aud := introspectAud(t, e, c, exchange(t, e, c, code).JSON()["access_token"].(string)); aud != c.ID {
			t.Fatalf("aud %v, want the client", aud)
		}

		// Registration: resources must be absolute URIs with a host, no fragment; the format opaque or jwt.
		for _, body := range []map[string]any{{"resources": []string{"https://x.example/#f"}}, {"resources": []string{"relative"}}, {"access_token_format": "paseto"}} {
			e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, body, http.StatusBadRequest)
		}
	})
}

// TestJWTAccessTokens: a client with access_token_format jwt gets RFC 9068
// access tokens that a resource server verifies with hmid's JWKS, and that
// hmid's own UserInfo, introspection and revocation accept.
func TestJWTAccessTokens(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_at_user"})
		for _, alg := range []string{"ES256", "HS256"} {
			c := mkClient(t, e, u.Token, map[string]any{"access_token_format": "jwt", "id_token_signed_response_alg": alg,
				"allowed_scopes": []string{"openid", "profile", "offline_access"}})
			q := authzParams(c.ID, "scope", "openid profile offline_access", "resource", resAPI)
			tok := tokens(t, e, u.Token, c, q)
			at := tok["access_token"].(string)

			var set jose.JSONWebKeySet
			e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).Decode(t, &set)
			want := jose.ES256
			if alg == "HS256" {
				want = jose.RS256 // an HS256 client's secret is no key for a resource server
			}
			parsed, err := jwt.ParseSigned(at, []jose.SignatureAlgorithm{want})
			if err != nil {
				t.Fatalf("%s: access token %q: %v", alg, at, err)
			}
			h := parsed.Headers[0]
			if h.ExtraHeaders["typ"] != "at+jwt" || len(set.Key(h.KeyID)) != 1 {
				t.Fatalf("%s: header %+v", alg, h)
			}
			var cl jwt.Claims
			var extra struct {
				ClientID string `json:"client_id"`
				Scope    string `json:"scope"`
				AuthTime int64  `json:"auth_time"`
			}
			if err := parsed.Claims(set.Key(h.KeyID)[0].Key, &cl, &extra); err != nil {
				t.Fatal(err)
			}
			if err := cl.ValidateWithLeeway(jwt.Expected{Issuer: e.URL, AnyAudience: jwt.Audience{resAPI}, Subject: u.ID, Time: e.Clock.Now()}, 0); err != nil {
				t.Fatalf("%s: claims %+v: %v", alg, cl, err)
			}
			if extra.ClientID != c.ID || extra.Scope != "offline_access openid profile" || extra.AuthTime == 0 || cl.ID == "" {
				t.Fatalf("%s: claims %+v %+v", alg, cl, extra)
			}
			in := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {c.Secret}}}).JSON()
			if in["active"] != true || in["jti"] != cl.ID || in["aud"] != resAPI {
				t.Fatalf("%s: introspection %v", alg, in)
			}
			if ui := e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK).JSON(); ui["sub"] != u.ID {
				t.Fatalf("%s: userinfo %v", alg, ui)
			}
			// A refresh mints another JWT; revoking it ends it at hmid.
			r := refreshReq(t, e, c, tok["refresh_token"].(string))
			at2 := r.JSON()["access_token"].(string)
			if r.Status != http.StatusOK || at2 == at || len(at2) < 100 {
				t.Fatalf("%s: refresh %d %s", alg, r.Status, r.Body)
			}
			e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized) // rotated away with its refresh token
			if rv := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {at2}, "client_id": {c.ID}, "client_secret": {c.Secret}}}); rv.Status != http.StatusOK {
				t.Fatalf("revoke: %d", rv.Status)
			}
			e.Call(t, "GET", "/v1/oauth/userinfo", at2, nil, http.StatusUnauthorized)
		}
	})
}
