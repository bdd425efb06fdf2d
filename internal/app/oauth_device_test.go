package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/token"
)

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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
