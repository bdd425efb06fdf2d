package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
)

func TestOAuthAuthorizeErrorsBeforeRedirectVerification(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"redirect_uris": []string{cb, "https://app.example/cb2?x=1"}})
		inactive := mkClient(t, e, user.Token, nil)
		e.Call(t, "PATCH", "/v1/oauth/clients/"+inactive.ID, user.Token, map[string]any{"is_active": false}, http.StatusOK)
		cases := map[string]url.Values{
			"no client_id":       authzParams(c.ID, "client_id", ""),
			"unknown client":     authzParams("8d7b2f0e-1111-4222-8333-944455556666"),
			"malformed client":   authzParams("nope"),
			"inactive client":    authzParams(inactive.ID),
			"no redirect_uri":    authzParams(c.ID, "redirect_uri", ""),
			"unregistered":       authzParams(c.ID, "redirect_uri", "https://evil.example/cb"),
			"trailing slash":     authzParams(c.ID, "redirect_uri", cb+"/"),
			"case differs":       authzParams(c.ID, "redirect_uri", "https://APP.example/cb"),
			"path case differs":  authzParams(c.ID, "redirect_uri", "https://app.example/CB"),
			"extra query":        authzParams(c.ID, "redirect_uri", cb+"?a=b"),
			"query missing":      authzParams(c.ID, "redirect_uri", "https://app.example/cb2"),
			"fragment":           authzParams(c.ID, "redirect_uri", cb+"#x"),
			"userinfo trick":     authzParams(c.ID, "redirect_uri", "https://app.example@evil.example/cb"),
			"prefix match only":  authzParams(c.ID, "redirect_uri", cb+"/../evil"),
			"port differs":       authzParams(c.ID, "redirect_uri", "https://app.example:8443/cb"),
			"scheme differs":     authzParams(c.ID, "redirect_uri", "http://app.example/cb"),
			"duplicate redirect": {"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {cb, cb}, "scope": {"openid"}},
		}
		for name, q := range cases {
			r := authorize(t, e, user.Token, q, nil)
			if r.Header.Get("Location") != "" {
				t.Fatalf("%s: redirected to %s", name, r.Header.Get("Location"))
			}
			oauthErr(t, r, http.StatusBadRequest, "invalid_request")
		}
		// The registered URI with its own query is accepted and keeps that query.
		u := location(t, authorize(t, e, user.Token, authzParams(c.ID, "redirect_uri", "https://app.example/cb2?x=1", "prompt", "none"), nil))
		if u.Query().Get("x") != "1" || u.Query().Get("error") != "consent_required" || u.Host != "app.example" {
			t.Fatalf("redirect %s", u)
		}
	})
}

func TestOAuthAuthorizeErrorsAfterRedirectVerification(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		pub := mkClient(t, e, user.Token, map[string]any{"client_type": "public"})
		challenge := strings.Repeat("a", 43)
		cases := []struct {
			name string
			q    url.Values
			want string
		}{
			{"bad response_type", authzParams(c.ID, "response_type", "token"), "invalid_request"},
			{"missing response_type", authzParams(c.ID, "response_type", ""), "invalid_request"},
			{"response_mode fragment", authzParams(c.ID, "response_mode", "fragment"), "invalid_request"},
			{"missing scope", authzParams(c.ID, "scope", ""), "invalid_request"},
			{"scope not allowed", authzParams(c.ID, "scope", "openid roles"), "invalid_scope"},
			{"unknown scope", authzParams(c.ID, "scope", "openid admin"), "invalid_scope"},
			{"public without PKCE", authzParams(pub.ID), "invalid_request"},
			{"plain method", authzParams(pub.ID, "code_challenge", challenge, "code_challenge_method", "plain"), "invalid_request"},
			{"challenge without method", authzParams(pub.ID, "code_challenge", challenge), "invalid_request"},
			{"method without challenge", authzParams(c.ID, "code_challenge_method", "S256"), "invalid_request"},
			{"short challenge", authzParams(pub.ID, "code_challenge", "abc", "code_challenge_method", "S256"), "invalid_request"},
			{"request object", authzParams(c.ID, "request", "eyJhbGciOiJub25lIn0.e30."), "request_not_supported"},
			{"request_uri", authzParams(c.ID, "request_uri", "https://app.example/req"), "request_uri_not_supported"},
			{"bad prompt", authzParams(c.ID, "prompt", "bogus"), "invalid_request"},
			{"prompt none with login", authzParams(c.ID, "prompt", "none login"), "invalid_request"},
			{"bad max_age", authzParams(c.ID, "max_age", "-1"), "invalid_request"},
			{"duplicate scope", func() url.Values { q := authzParams(c.ID); q.Add("scope", "openid"); return q }(), "invalid_request"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				redirectError(t, e, authorize(t, e, user.Token, tc.q, nil), tc.want)
			})
		}
		// Unknown parameters are ignored (RFC 6749 §3.1).
		u := location(t, authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid", "prompt", "none", "ui_locales", "de", "foo", "bar"), nil))
		if u.Query().Get("error") != "consent_required" {
			t.Fatalf("unknown parameters: %s", u)
		}
	})
}

func TestOAuthLoginRedirects(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		// Not logged in: to the built-in /login with the whole authorize URL as return_to.
		q := authzParams(c.ID, "nonce", "abc", "code_challenge", strings.Repeat("b", 43), "code_challenge_method", "S256")
		u := location(t, authorize(t, e, "", q, nil))
		if u.Scheme+"://"+u.Host+u.Path != e.URL+"/login" {
			t.Fatalf("login redirect %s", u)
		}
		rt, err := url.Parse(u.Query().Get("return_to"))
		if err != nil || rt.Scheme+"://"+rt.Host+rt.Path != e.URL+"/v1/oauth/authorize" {
			t.Fatalf("return_to %s", u.Query().Get("return_to"))
		}
		for k := range q {
			if rt.Query().Get(k) != q.Get(k) {
				t.Fatalf("return_to lost %s: %s", k, rt)
			}
		}
		// A bad or foreign session counts as none.
		location(t, authorize(t, e, "hm_st_bogus", q, nil))
		key, _ := e.NewAPIKey(t, user.ID)
		if u := location(t, authorize(t, e, key, q, nil)); u.Path != "/login" {
			t.Fatalf("API key accepted as a login: %s", u)
		}
		// prompt=none without a session: login_required, no page.
		redirectError(t, e, authorize(t, e, "", authzParams(c.ID, "prompt", "none"), nil), "login_required")

		// The session cookie logs the user in as well as the bearer header.
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?" + authzParams(c.ID, "prompt", "none").Encode(),
			Header: map[string]string{"Cookie": "hmid_session=" + user.Token}})
		redirectError(t, e, r, "consent_required")

		// Consent once so the flow can complete with codes.
		getCode(t, e, user.Token, authzParams(c.ID))

		// prompt=login: to the login page even with a session; the return URL
		// demands a login after now, so the old session still does not pass.
		u = location(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "login"), nil))
		if u.Path != "/login" {
			t.Fatalf("prompt=login: %s", u)
		}
		back, _ := url.Parse(u.Query().Get("return_to"))
		if back.Query().Get("prompt") != "" || back.Query().Get("hmid_login_after") == "" {
			t.Fatalf("return_to %s", back)
		}
		if u := location(t, authorize(t, e, user.Token, back.Query(), nil)); u.Path != "/login" {
			t.Fatalf("old session passed a forced login: %s", u)
		}
		e.Clock.Advance(time.Minute)
		newTok, _ := e.NewSession(t, user.ID)
		if u := location(t, authorize(t, e, newTok, back.Query(), nil)); u.Query().Get("code") == "" {
			t.Fatalf("fresh session after forced login: %s", u)
		}
		// A forged login_after is ignored and the user is asked again.
		forged := back.Query()
		forged.Set("hmid_login_after", "1.AAAA")
		forged.Set("prompt", "login")
		if u := location(t, authorize(t, e, newTok, forged, nil)); u.Path != "/login" {
			t.Fatalf("forged hmid_login_after: %s", u)
		}

		// max_age: a session older than max_age must log in again.
		e.Clock.Advance(2 * time.Hour)
		if u := location(t, authorize(t, e, newTok, authzParams(c.ID, "max_age", "3600"), nil)); u.Path != "/login" {
			t.Fatalf("max_age exceeded: %s", u)
		}
		redirectError(t, e, authorize(t, e, newTok, authzParams(c.ID, "max_age", "3600", "prompt", "none"), nil), "login_required")
		if u := location(t, authorize(t, e, newTok, authzParams(c.ID, "max_age", "86400"), nil)); u.Query().Get("code") == "" {
			t.Fatalf("max_age satisfied: %s", u)
		}
	})
}

func TestOAuthLoginURLConfigured(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		u := location(t, authorize(t, e, "", authzParams(c.ID), nil))
		if u.Host != "id.example" || u.Path != "/signin" || u.Query().Get("keep") != "1" || !strings.HasPrefix(u.Query().Get("return_to"), e.URL+"/v1/oauth/authorize?") {
			t.Fatalf("login redirect %s", u)
		}
	}, func(c *config.Config) { c.LoginURL = "https://id.example/signin?keep=1" })
}

func TestOAuthConsent(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"logo_url": "https://app.example/logo.png", "allowed_scopes": []string{"openid", "profile", "email", "roles"}})
		pending := func(q url.Values) string {
			r := authorize(t, e, user.Token, q, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("authorize: %d %s", r.Status, r.Body)
			}
			m := r.JSON()
			cl := m["client"].(map[string]any)
			if m["consent_required"] != true || cl["id"] != c.ID || cl["name"] != "Test App" || cl["logo_url"] != "https://app.example/logo.png" {
				t.Fatalf("consent answer %v", m)
			}
			return m["pending_authorization_id"].(string)
		}
		id := pending(authzParams(c.ID))
		// The consent page (authflow.Consents) sees it; another user does not.
		p, err := e.Server.Consents.Pending(context.Background(), id, user.ID)
		if err != nil || p.ClientName != "Test App" || len(p.Scopes) != 3 || p.Scopes[0].Description == "" {
			t.Fatalf("Pending = %+v, %v", p, err)
		}
		if _, err := e.Server.Consents.Pending(context.Background(), id, other.ID); err == nil {
			t.Fatal("another user sees the pending authorization")
		}
		e.Call(t, "POST", "/v1/oauth/authorize/consent", other.Token, map[string]any{"pending_authorization_id": id, "approved": true}, http.StatusNotFound)
		key, _ := e.NewAPIKey(t, user.ID)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", key, map[string]any{"pending_authorization_id": id, "approved": true}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", "", map[string]any{"pending_authorization_id": id, "approved": true}, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": id}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, "{", http.StatusBadRequest)
		u := consent(t, e, user.Token, id, true)
		if u.Query().Get("code") == "" || u.Query().Get("state") != "st4te" || u.Query().Get("iss") != e.URL {
			t.Fatalf("approval redirect %s", u)
		}
		// Single use.
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": id, "approved": true}, http.StatusNotFound)
		if n := auditCount(t, e, "consent_granted", c.ID); n != 1 {
			t.Fatalf("consent_granted = %d", n)
		}
		// The stored consent covers the same or fewer scopes; more scopes ask again.
		if u := location(t, authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid"), nil)); u.Query().Get("code") == "" {
			t.Fatalf("covered scope: %s", u)
		}
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid roles", "prompt", "none"), nil), "consent_required")
		// prompt=consent asks even when covered.
		pending(authzParams(c.ID, "prompt", "consent"))
		// Denial.
		u = consent(t, e, user.Token, pending(authzParams(c.ID, "scope", "openid roles")), false)
		if u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "st4te" || u.Query().Get("iss") != e.URL || u.Query().Get("code") != "" {
			t.Fatalf("denial redirect %s", u)
		}
		// Pending authorizations expire after 15 minutes.
		id = pending(authzParams(c.ID, "scope", "openid roles"))
		e.Clock.Advance(15*time.Minute + time.Second)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": id, "approved": true}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": "nope", "approved": true}, http.StatusNotFound)
		// Browsers are sent to the consent page.
		r := authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid roles"), map[string]string{"Accept": "text/html,application/xhtml+xml"})
		u = location(t, r)
		if u.Path != "/consent" || u.Query().Get("pending_authorization_id") == "" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("browser consent redirect %s", u)
		}
		// The decision through the consent page contract works the same way.
		to, err := e.Server.Consents.Decide(context.Background(), u.Query().Get("pending_authorization_id"), user.ID, true, "127.0.0.1", "test")
		if err != nil || !strings.Contains(to, "code=hm_ac_") {
			t.Fatalf("Decide = %s, %v", to, err)
		}
	})
}

func TestOAuthFirstPartySkipsConsent(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, admin.Token, map[string]any{"is_first_party": true})
		u := location(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "none"), nil))
		if u.Query().Get("code") == "" || u.Query().Get("iss") != e.URL {
			t.Fatalf("first-party: %s", u)
		}
	})
}

func TestOAuthBannedUserCannotAuthorize(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		code := getCode(t, e, user.Token, authzParams(c.ID))
		ban(t, e, user.ID)
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID), nil), "access_denied")
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		oauthErr(t, exchange(t, e, c, code), http.StatusBadRequest, "invalid_grant")
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
	})
}
