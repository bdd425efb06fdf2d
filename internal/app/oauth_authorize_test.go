package app_test

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/db"
)

func TestOAuthAuthorizeErrorsBeforeRedirectVerification(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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

// pkce is a code verifier and its S256 challenge, drawn by golang.org/x/oauth2.
type pkce struct{ verifier, challenge string }

func newPKCE() pkce {
	v := oauth2.GenerateVerifier()
	return pkce{v, oauth2.S256ChallengeFromVerifier(v)}
}

// nativeParams are the parameters of a public client's authorization request to redirect.
func nativeParams(clientID, redirect string, p pkce) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {"openid profile"},
		"state": {"st4te"}, "code_challenge": {p.challenge}, "code_challenge_method": {"S256"}}
}

// callback runs the authorization request, approving consent if asked, and
// returns the raw Location the user agent is sent to.
func callback(t *testing.T, e *apptest.Env, tok string, q url.Values) string {
	t.Helper()
	r := authorize(t, e, tok, q, nil)
	if r.Status == http.StatusOK {
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize/consent", Token: tok,
			Body: map[string]any{"pending_authorization_id": r.JSON()["pending_authorization_id"], "approved": true}})
	}
	location(t, r)
	return r.Header.Get("Location")
}

// codeIn returns the code of a callback URL that must start with prefix.
func codeIn(t *testing.T, e *apptest.Env, loc, prefix string) string {
	t.Helper()
	if !strings.HasPrefix(loc, prefix) {
		t.Fatalf("callback %s, want it to start with %s", loc, prefix)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("code") == "" || q.Get("state") != "st4te" || q.Get("iss") != e.URL {
		t.Fatalf("callback %s lacks code, state or iss", loc)
	}
	return q.Get("code")
}

func publicExchange(t *testing.T, e *apptest.Env, c testClient, code, redirect string, p pkce) *apptest.Resp {
	t.Helper()
	return tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {c.ID}, "code_verifier": {p.verifier}}, nil)
}

// TestOAuthRedirectURIRegistration: the registration rules of RFC 8252 and
// RFC 9700 for redirect URIs, refusals as ValidationError.
func TestOAuthRedirectURIRegistration(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		d := e.Call(t, "POST", "/v1/oauth/clients", user.Token, map[string]any{"name": "Native", "client_type": "public",
			"redirect_uris": []string{"HTTP://127.0.0.1/cb", "http://[::1]:1234/cb", "com.example.app:/cb?x=1", "myapp://cb", "Com.Example.App:/cb?x=1", "HTTPS://App.Example/CB"}},
			http.StatusCreated).JSON()["data"].(map[string]any)
		got := d["redirect_uris"].([]any)
		want := []string{"http://127.0.0.1/cb", "http://[::1]:1234/cb", "com.example.app:/cb?x=1", "myapp://cb", "https://App.Example/CB"}
		if len(got) != len(want) {
			t.Fatalf("redirect_uris %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("redirect_uris %v, want %v (schemes lowercased, the rest kept, duplicates once)", got, want)
			}
		}
		id := d["id"].(string)
		upd := e.Call(t, "PATCH", "/v1/oauth/clients/"+id, user.Token, map[string]any{"redirect_uris": []string{"HtTp://127.0.0.1:8080/x"}}, http.StatusOK).JSON()["data"].(map[string]any)
		if u := upd["redirect_uris"].([]any); len(u) != 1 || u[0] != "http://127.0.0.1:8080/x" {
			t.Fatalf("patched redirect_uris %v", u)
		}
		for uri, word := range map[string]string{
			"https://*.app.example/cb":         "wildcard",
			"http://*:8080/cb":                 "wildcard",
			"https://app.example:70000/cb":     "port",
			"http://127.0.0.1:0/cb":            "port",
			"https://app.example/cb#frag":      "fragment",
			"com.example.app:/cb#x":            "fragment",
			"https://user:pw@app.example/cb":   "user information",
			"myapp://me@cb":                    "user information",
			"myapp:/cb":                        "reverse-domain",
			"myapp:cb":                         "<scheme>://",
			"https://app.example/cb?code=1":    "response parameter",
			"javascript://alert(1)":            "not allowed",
			"https://app.example/c b":          "whitespace",
			"app.example/cb":                   "absolute",
			"https://app.example:/cb":          "empty port",
			"https://app.example/cb?state=abc": "response parameter",
		} {
			for _, path := range []string{"/v1/oauth/clients", "/v1/oauth/clients/" + id} {
				method := "POST"
				if path != "/v1/oauth/clients" {
					method = "PATCH"
				}
				r := e.Do(t, apptest.Req{Method: method, Path: path, Token: user.Token, Body: map[string]any{"name": "x", "redirect_uris": []string{uri}}})
				wantBad(t, method+" "+uri, r, "ValidationError")
				if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, word) {
					t.Fatalf("%s: message %q does not say %q", uri, msg, word)
				}
			}
		}
	})
}

// TestOAuthLoopbackAnyPort: a registered loopback URI matches any port
// (RFC 8252 §7.3) for 127.0.0.1 and [::1], localhost only exactly, and the
// token request must repeat the port the authorization request used.
func TestOAuthLoopbackAnyPort(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public",
			"redirect_uris": []string{"http://127.0.0.1/cb", "http://[::1]:1234/cb6", "http://localhost:3000/cb"}})
		p := newPKCE()
		for _, redirect := range []string{"http://127.0.0.1:49152/cb", "http://127.0.0.1/cb", "http://[::1]:5555/cb6", "http://[::1]:1234/cb6", "http://[::1]/cb6", "http://localhost:3000/cb"} {
			code := codeIn(t, e, callback(t, e, user.Token, nativeParams(c.ID, redirect, p)), redirect+"?")
			if r := publicExchange(t, e, c, code, redirect, p); r.Status != http.StatusOK {
				t.Fatalf("%s: exchange %d %s", redirect, r.Status, r.Body)
			}
		}
		// Never a redirect to an unverified URI: JSON invalid_request.
		for _, redirect := range []string{"http://localhost:3001/cb", "http://localhost/cb", "http://127.0.0.1:49152/cb/", "http://127.0.0.1:49152/CB",
			"http://127.0.0.1:49152/cb?x=1", "https://127.0.0.1:49152/cb", "http://127.0.0.2:49152/cb", "http://[::1]:5555/cb",
			"http://127.0.0.1:5555/cb6", "http://127.0.0.1:70000/cb", "http://127.0.0.1:5555@evil.example/cb", "http://127.0.0.1.evil.example/cb"} {
			r := authorize(t, e, user.Token, nativeParams(c.ID, redirect, p), nil)
			oauthErr(t, r, http.StatusBadRequest, "invalid_request")
		}
		// The token request's redirect_uri must be the authorization request's, port included.
		for _, other := range []string{"http://127.0.0.1:49153/cb", "http://127.0.0.1/cb"} {
			code := codeIn(t, e, callback(t, e, user.Token, nativeParams(c.ID, "http://127.0.0.1:49152/cb", p)), "http://127.0.0.1:49152/cb?")
			oauthErr(t, publicExchange(t, e, c, code, other, p), http.StatusBadRequest, "invalid_grant")
		}
		code := codeIn(t, e, callback(t, e, user.Token, nativeParams(c.ID, "http://127.0.0.1/cb", p)), "http://127.0.0.1/cb?")
		oauthErr(t, publicExchange(t, e, c, code, "http://127.0.0.1:80/cb", p), http.StatusBadRequest, "invalid_grant")
	})
}

// TestOAuthPrivateUseSchemeFlow: a native app registered with a
// reverse-domain private-use scheme (RFC 8252 §7.1) gets its code at
// com.example.app:/cb?x=1, its own query first, and redeems it.
func TestOAuthPrivateUseSchemeFlow(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		const redirect = "com.example.app:/cb?x=1"
		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public", "redirect_uris": []string{redirect}})
		p := newPKCE()
		code := codeIn(t, e, callback(t, e, user.Token, nativeParams(c.ID, redirect, p)), redirect+"&code=")
		r := publicExchange(t, e, c, code, redirect, p)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.JSON()["access_token"].(string), "hm_at_") {
			t.Fatalf("exchange %d %s", r.Status, r.Body)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", r.JSON()["access_token"].(string), nil, http.StatusOK)
		// The consent is stored now: the direct redirect keeps the query too.
		code = codeIn(t, e, callback(t, e, user.Token, nativeParams(c.ID, redirect, p)), redirect+"&code=")
		oauthErr(t, publicExchange(t, e, c, code, "com.example.app:/cb", p), http.StatusBadRequest, "invalid_grant")
	})
}

// TestOAuthRedirectQueryKeptVerbatim: a registered URI's own query comes
// back byte for byte, the response parameters appended after it, on the
// consent redirect, the direct one, and error redirects.
func TestOAuthRedirectQueryKeptVerbatim(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		const redirect = "https://app.example/cb?a=1&b=%2F&z=%7e"
		c := mkClient(t, e, user.Token, map[string]any{"redirect_uris": []string{redirect}})
		q := authzParams(c.ID, "redirect_uri", redirect)
		for range 2 { // consent redirect, then the direct one
			code := codeIn(t, e, callback(t, e, user.Token, q), redirect+"&code=")
			if r := exchange(t, e, c, code, "redirect_uri", redirect); r.Status != http.StatusOK {
				t.Fatalf("exchange %d %s", r.Status, r.Body)
			}
		}
		r := authorize(t, e, user.Token, authzParams(c.ID, "redirect_uri", redirect, "scope", "openid roles"), nil)
		if loc := r.Header.Get("Location"); r.Status != http.StatusFound || !strings.HasPrefix(loc, redirect+"&error=invalid_scope&") {
			t.Fatalf("error redirect %d %s", r.Status, loc)
		}
		pending := authorize(t, e, user.Token, authzParams(c.ID, "redirect_uri", redirect, "prompt", "consent"), nil)
		if pending.Status != http.StatusOK {
			t.Fatalf("prompt=consent %d %s", pending.Status, pending.Body)
		}
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize/consent", Token: user.Token,
			Body: map[string]any{"pending_authorization_id": pending.JSON()["pending_authorization_id"], "approved": false}})
		if loc := r.Header.Get("Location"); r.Status != http.StatusFound || !strings.HasPrefix(loc, redirect+"&error=access_denied&") {
			t.Fatalf("denial redirect %d %s", r.Status, loc)
		}
	})
}

// TestOAuthLoopbackCLIClient: a command-line client as RFC 8252 §7.3
// describes it, with golang.org/x/oauth2: it listens on a random port of
// 127.0.0.1, registered without a port, receives the code on that listener
// and redeems it with PKCE.
func TestOAuthLoopbackCLIClient(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public", "redirect_uris": []string{"http://127.0.0.1/callback"}})

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan url.Values, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			got <- r.URL.Query()
			_, _ = w.Write([]byte("You can close this window."))
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })

		conf := &oauth2.Config{
			ClientID: c.ID, RedirectURL: "http://" + ln.Addr().String() + "/callback", Scopes: []string{"openid", "profile"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
		}
		verifier := oauth2.GenerateVerifier()
		authURL := conf.AuthCodeURL("cli-state", oauth2.S256ChallengeOption(verifier))
		// The user's browser: already signed in, it follows the redirects to the app's listener.
		loc := callback(t, e, user.Token, mustQuery(t, authURL))
		if !strings.HasPrefix(loc, conf.RedirectURL+"?") {
			t.Fatalf("redirected to %s, want the listener %s", loc, conf.RedirectURL)
		}
		res, err := http.Get(loc)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		q := <-got
		if q.Get("state") != "cli-state" || q.Get("code") == "" {
			t.Fatalf("listener got %v", q)
		}
		tok, err := conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if !strings.HasPrefix(tok.AccessToken, "hm_at_") || !strings.HasPrefix(tok.RefreshToken, "hm_rt_") || tok.Extra("id_token") == nil {
			t.Fatalf("token %+v", tok)
		}
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", tok.AccessToken, nil, http.StatusOK).JSON()
		if ui["sub"] != user.ID {
			t.Fatalf("userinfo %v", ui)
		}
	})
}

// mustQuery returns the query of an absolute URL.
func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// rs256Key returns the key of hmid's JWKS for verifying RS256 ID tokens.
func rs256Key(t *testing.T, e *apptest.Env) func(*jwt.Token) (any, error) {
	t.Helper()
	keys := e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).JSON()["keys"].([]any)
	k := keys[0].(map[string]any)
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(b64url(t, k["n"].(string))), E: int(new(big.Int).SetBytes(b64url(t, k["e"].(string))).Int64())}
	return func(*jwt.Token) (any, error) { return pub, nil }
}

// idToken runs the flow for c (consenting if asked) and returns the verified
// RS256 ID token's claims, the raw token and the whole token answer.
func idToken(t *testing.T, e *apptest.Env, userTok string, c testClient, q url.Values) (jwt.MapClaims, string, map[string]any) {
	t.Helper()
	tr := tokens(t, e, userTok, c, q)
	raw, _ := tr["id_token"].(string)
	return verifyIDToken(t, e, raw, c.ID, rs256Key(t, e), "RS256"), raw, tr
}

// setAMR sets how the user authenticated in session sessionID.
func setAMR(t *testing.T, e *apptest.Env, sessionID string, amr ...string) {
	t.Helper()
	if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE sessions SET amr = $1 WHERE id = $2`, db.JSON(amr), sessionID); err != nil {
		t.Fatal(err)
	}
	// The resolver caches the session with its amr (hmid never changes a
	// session's amr); a change behind its back must invalidate the cache.
	if err := e.Server.Epoch.Bump(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// toLogin asserts a 302 to the login page and returns the return_to query.
func toLogin(t *testing.T, r *apptest.Resp) url.Values {
	t.Helper()
	u := location(t, r)
	if u.Path != "/login" {
		t.Fatalf("redirect %s, want the login page", u)
	}
	back, err := url.Parse(u.Query().Get("return_to"))
	if err != nil {
		t.Fatal(err)
	}
	return back.Query()
}

// codeOf asserts a 302 to the client with a code.
func codeOf(t *testing.T, r *apptest.Resp) string {
	t.Helper()
	u := location(t, r)
	if u.Query().Get("code") == "" || !strings.HasPrefix(u.String(), cb+"?") {
		t.Fatalf("redirect %s, want a code", u)
	}
	return u.Query().Get("code")
}

func rsClient(t *testing.T, e *apptest.Env, tok string, extra map[string]any) testClient {
	t.Helper()
	body := map[string]any{"id_token_signed_response_alg": "RS256", "allowed_scopes": []string{"openid", "profile", "email", "roles", "offline_access"}}
	for k, v := range extra {
		body[k] = v
	}
	return mkClient(t, e, tok, body)
}

func TestOIDCPromptValues(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		// Core §3.1.2.1: none with any other value is invalid_request; unknown values too.
		for _, p := range []string{"none login", "none consent", "select_account none", "bogus"} {
			redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "prompt", p), nil), "invalid_request")
		}
		// prompt=none with a session and consent: a code, no page.
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "none"), nil))
		// prompt=consent asks again although the consent covers the scopes.
		if r := authorize(t, e, user.Token, authzParams(c.ID, "prompt", "consent"), nil); r.Status != http.StatusOK || r.JSON()["consent_required"] != true {
			t.Fatalf("prompt=consent: %d %s", r.Status, r.Body)
		}
		// prompt=select_account: the login page even with a session (one
		// account per browser: choosing one is signing in), then no loop.
		back := toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "select_account"), nil))
		if back.Get("prompt") != "" || back.Get("hmid_login_after") == "" {
			t.Fatalf("return_to %v", back)
		}
		toLogin(t, authorize(t, e, user.Token, back, nil))
		e.Clock.Advance(time.Second)
		fresh, _ := e.NewSession(t, user.ID)
		codeOf(t, authorize(t, e, fresh, back, nil))
		// select_account with consent keeps consent on the way back.
		back = toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "select_account consent"), nil))
		if back.Get("prompt") != "consent" {
			t.Fatalf("return_to prompt %q, want consent", back.Get("prompt"))
		}
		// prompt=none without a session: login_required to the redirect URI, never a page.
		redirectError(t, e, authorize(t, e, "", authzParams(c.ID, "prompt", "none"), nil), "login_required")
	})
}

func TestOIDCMaxAgeAndAuthTime(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		authAt := e.Clock.Now()
		e.Clock.Advance(10 * time.Minute)
		// auth_time is when the user logged in, whatever max_age asked.
		claims, _, tr := idToken(t, e, user.Token, c, authzParams(c.ID, "max_age", "3600"))
		if int64(claims["auth_time"].(float64)) != authAt.Unix() {
			t.Fatalf("auth_time %v, want %d", claims["auth_time"], authAt.Unix())
		}
		// max_age=0 is prompt=login: the login page, then the fresh session passes.
		back := toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "max_age", "0"), nil))
		if back.Get("max_age") != "" {
			t.Fatalf("return_to still demands max_age=0: %v", back)
		}
		toLogin(t, authorize(t, e, user.Token, back, nil))
		e.Clock.Advance(time.Second)
		freshAt := e.Clock.Now()
		fresh, _ := e.NewSession(t, user.ID)
		codeOf(t, authorize(t, e, fresh, back, nil))
		// max_age=N: older sessions log in again (login_required with prompt=none).
		e.Clock.Advance(2 * time.Second)
		toLogin(t, authorize(t, e, fresh, authzParams(c.ID, "max_age", "1"), nil))
		redirectError(t, e, authorize(t, e, fresh, authzParams(c.ID, "max_age", "1", "prompt", "none"), nil), "login_required")
		claims, _, _ = idToken(t, e, fresh, c, authzParams(c.ID, "max_age", "10000"))
		if int64(claims["auth_time"].(float64)) != freshAt.Unix() {
			t.Fatalf("auth_time %v, want %d", claims["auth_time"], freshAt.Unix())
		}
		redirectError(t, e, authorize(t, e, fresh, authzParams(c.ID, "max_age", "-1"), nil), "invalid_request")
		// A refreshed ID token keeps the original auth_time.
		e.Clock.Advance(time.Hour)
		r := refreshReq(t, e, c, tr["refresh_token"].(string))
		if r.Status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.Status, r.Body)
		}
		rc := verifyIDToken(t, e, r.JSON()["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if int64(rc["auth_time"].(float64)) != authAt.Unix() {
			t.Fatalf("refreshed auth_time %v, want %d", rc["auth_time"], authAt.Unix())
		}
	})
}

func TestOIDCIDTokenHint(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ann := e.NewUser(t, apptest.UserSpec{})
		bob := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, ann.Token, nil)
		_, hint, _ := idToken(t, e, ann.Token, c, authzParams(c.ID))
		getCode(t, e, bob.Token, authzParams(c.ID))
		// The hint names the session's user: a code, also once expired.
		e.Clock.Advance(3 * time.Hour)
		codeOf(t, authorize(t, e, ann.Token, authzParams(c.ID, "id_token_hint", hint, "prompt", "none"), nil))
		// Another user's session: never a code for bob. prompt=none: login_required.
		redirectError(t, e, authorize(t, e, bob.Token, authzParams(c.ID, "id_token_hint", hint, "prompt", "none"), nil), "login_required")
		back := toLogin(t, authorize(t, e, bob.Token, authzParams(c.ID, "id_token_hint", hint), nil))
		// After logging in (as anyone: the user chose) the flow proceeds, no loop.
		e.Clock.Advance(time.Second)
		annNew, _ := e.NewSession(t, ann.ID)
		codeOf(t, authorize(t, e, annNew, back, nil))
		// Garbage, a tampered signature, another client's or issuer's hint: invalid_request.
		parts := strings.Split(hint, ".")
		other := rsClient(t, e, ann.Token, nil)
		_, otherHint, _ := idToken(t, e, ann.Token, other, authzParams(other.ID))
		none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": e.URL, "aud": c.ID, "sub": ann.ID})
		unsigned, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
		foreign, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "https://evil.example", "aud": c.ID, "sub": ann.ID}).SignedString([]byte("k"))
		for name, bad := range map[string]string{
			"garbage":      "not-a-jwt",
			"tampered":     parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
			"other client": otherHint,
			"alg none":     unsigned,
			"other issuer": foreign,
		} {
			r := authorize(t, e, ann.Token, authzParams(c.ID, "id_token_hint", bad), nil)
			if q := location(t, r).Query(); q.Get("error") != "invalid_request" || q.Get("state") != "st4te" || q.Get("iss") != e.URL {
				t.Fatalf("%s hint: %s", name, location(t, r))
			}
		}

		// HS256 confidential client: the secret is stored hashed, so the hint
		// is read by its claims (iss, aud, sub) and still steers the login.
		hs := mkClient(t, e, ann.Token, nil)
		tr := tokens(t, e, ann.Token, hs, authzParams(hs.ID))
		hsHint := tr["id_token"].(string)
		codeOf(t, authorize(t, e, ann.Token, authzParams(hs.ID, "id_token_hint", hsHint, "prompt", "none"), nil))
		getCode(t, e, bob.Token, authzParams(hs.ID))
		redirectError(t, e, authorize(t, e, bob.Token, authzParams(hs.ID, "id_token_hint", hsHint, "prompt", "none"), nil), "login_required")
	})
}

func TestOIDCClaimsParameter(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, map[string]any{"allowed_scopes": []string{"openid", "profile", "email"}})
		for _, bad := range []string{`{`, `[]`, `"x"`, `{"userinfo":[]}`, `{"id_token":{"name":true}}`, `{"userinfo":{"name":{"essential":"yes"}}}`} {
			redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "claims", bad), nil), "invalid_request")
		}
		// name essential in UserInfo with scope openid only: consent asks for
		// profile (the claim's scope), then UserInfo has name, the ID token not.
		q := authzParams(c.ID, "scope", "openid", "claims", `{"userinfo":{"name":{"essential":true},"phone_number":null,"roles":null},"id_token":{"email":null,"acr":null}}`)
		r := authorize(t, e, user.Token, q, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("want consent, got %d %s", r.Status, r.Body)
		}
		var names []string
		for _, s := range r.JSON()["requested_scopes"].([]any) {
			names = append(names, s.(map[string]any)["name"].(string))
		}
		if strings.Join(names, " ") != "email openid profile" {
			t.Fatalf("consent asks for %v", names)
		}
		code := consent(t, e, user.Token, r.JSON()["pending_authorization_id"].(string), true).Query().Get("code")
		tr := exchange(t, e, c, code).JSON()
		if tr["scope"] != "openid" {
			t.Fatalf("granted scope %v", tr["scope"])
		}
		idc := verifyIDToken(t, e, tr["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if idc["email"] != user.Email || idc["name"] != nil || idc["acr"] != "1" {
			t.Fatalf("ID token claims %v", idc)
		}
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil, http.StatusOK).JSON()
		if ui["name"] == nil || ui["email"] != nil || ui["roles"] != nil || ui["phone_number"] != nil {
			t.Fatalf("userinfo %v", ui)
		}
		// The refreshed ID token answers the same claims request.
		rr := refreshReq(t, e, c, tr["refresh_token"].(string)).JSON()
		if rc := verifyIDToken(t, e, rr["id_token"].(string), c.ID, rs256Key(t, e), "RS256"); rc["email"] != user.Email {
			t.Fatalf("refreshed ID token %v", rc)
		}
		// The consent now covers profile and email: no second question.
		codeOf(t, authorize(t, e, user.Token, q, nil))
		// sub asked for by value must be the session's user.
		other := e.NewUser(t, apptest.UserSpec{})
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "none", "claims", `{"id_token":{"sub":{"value":"`+other.ID+`"}}}`), nil), "login_required")
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "claims", `{"id_token":{"sub":{"value":"`+user.ID+`"}}}`), nil))
	})
}

func TestOIDCACRAndAMR(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		setAMR(t, e, user.SessionID, "pwd")
		// acr_values are voluntary: accepted, the acr says what happened.
		claims, _, _ := idToken(t, e, user.Token, c, authzParams(c.ID, "acr_values", "2 1"))
		if claims["acr"] != "1" || strings.Join(toStrings(claims["amr"]), " ") != "pwd" {
			t.Fatalf("acr %v amr %v", claims["acr"], claims["amr"])
		}
		essential := authzParams(c.ID, "claims", `{"id_token":{"acr":{"essential":true,"values":["2"]}}}`)
		// An essential acr "2" with a one-factor session: interaction_required
		// with prompt=none, else a login, and the same session never passes.
		q := url.Values{}
		for k, v := range essential {
			q[k] = v
		}
		q.Set("prompt", "none")
		redirectError(t, e, authorize(t, e, user.Token, q, nil), "interaction_required")
		back := toLogin(t, authorize(t, e, user.Token, essential, nil))
		e.Clock.Advance(time.Second)
		// Logged in again with a second factor: acr 2, amr pwd otp.
		mfaTok, mfaID := e.NewSession(t, user.ID)
		setAMR(t, e, mfaID, "pwd", "otp")
		code := codeOf(t, authorize(t, e, mfaTok, back, nil))
		idc := verifyIDToken(t, e, exchange(t, e, c, code).JSON()["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if idc["acr"] != "2" || strings.Join(toStrings(idc["amr"]), " ") != "pwd otp" {
			t.Fatalf("acr %v amr %v", idc["acr"], idc["amr"])
		}
		// Logged in again but still with one factor: access_denied, no loop.
		e.Clock.Advance(time.Second)
		oneTok, oneID := e.NewSession(t, user.ID)
		setAMR(t, e, oneID, "pwd")
		redirectError(t, e, authorize(t, e, oneTok, back, nil), "access_denied")
	})
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestOIDCDisplayLocalesAndRequestObjects(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		for _, d := range []string{"page", "popup", "touch", "wap"} {
			codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "display", d), nil))
		}
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "display", "hologram"), nil), "invalid_request")
		// claims_locales and login_hint are accepted; acr_values too.
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "claims_locales", "de en", "login_hint", user.Email, "acr_values", "1"), nil))
		// OpenID Connect Core §6: request objects are not supported.
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "request", "eyJhbGciOiJub25lIn0.e30."), nil), "request_not_supported")
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "request_uri", "https://app.example/r"), nil), "request_uri_not_supported")

		// ui_locales reaches the consent page, and the page speaks it.
		r := authorize(t, e, user.Token, authzParams(c.ID, "prompt", "consent", "ui_locales", "fr de-CH"), map[string]string{"Accept": "text/html"})
		u := location(t, r)
		if u.Path != "/consent" || u.Query().Get("ui_locales") != "de" {
			t.Fatalf("consent redirect %s", u)
		}
		page := e.Do(t, apptest.Req{Method: "GET", Path: u.RequestURI(), Header: map[string]string{"Cookie": "hmid_session=" + user.Token, "Accept-Language": "en"}})
		if page.Status != http.StatusOK || !strings.Contains(string(page.Body), `lang="de"`) {
			t.Fatalf("consent page %d, lang de missing", page.Status)
		}
		// Without a session: the login page in German with the email prefilled.
		back := toLogin(t, authorize(t, e, "", authzParams(c.ID, "ui_locales", "de", "login_hint", "ann@example.com"), nil))
		login := e.Do(t, apptest.Req{Method: "GET", Path: "/login?return_to=" + url.QueryEscape(e.URL+"/v1/oauth/authorize?"+back.Encode()), Header: map[string]string{"Accept-Language": "en"}})
		body := string(login.Body)
		if login.Status != http.StatusOK || !strings.Contains(body, `lang="de"`) || !strings.Contains(body, `value="ann@example.com"`) {
			t.Fatalf("login page %d: lang de or login_hint missing", login.Status)
		}
	})
}

func TestOIDCProfileClaimsAndDiscovery(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE users SET preferred_locale = 'de-DE' WHERE id = $1`, user.ID); err != nil {
			t.Fatal(err)
		}
		c := rsClient(t, e, user.Token, nil)
		claims, _, tr := idToken(t, e, user.Token, c, authzParams(c.ID))
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil, http.StatusOK).JSON()
		for where, m := range map[string]map[string]any{"ID token": claims, "UserInfo": ui} {
			if m["preferred_username"] != user.Username || m["locale"] != "de-DE" || m["updated_at"] == nil {
				t.Fatalf("%s profile claims %v", where, m)
			}
		}
		d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
		if d["claims_parameter_supported"] != true || strings.Join(toStrings(d["acr_values_supported"]), " ") != "1 2" {
			t.Fatalf("discovery %v", d)
		}
		supported := strings.Join(toStrings(d["claims_supported"]), " ")
		for _, want := range []string{"preferred_username", "locale", "updated_at", "acr", "amr", "auth_time"} {
			if !strings.Contains(" "+supported+" ", " "+want+" ") {
				t.Fatalf("claims_supported lacks %s: %s", want, supported)
			}
		}
	})
}

// TestOIDCLoginRecordsAMR: a real login stores how the user authenticated,
// and the ID token's acr and amr follow (RFC 8176 values).
func TestOIDCLoginRecordsAMR(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := rsClient(t, e, u.Token, nil)
		login := func(body map[string]any) string {
			t.Helper()
			r := e.Call(t, "POST", "/v1/auth/login", "", body, http.StatusOK).JSON()
			tok, _ := r["session_token"].(string)
			return tok
		}
		pwd := login(map[string]any{"email": u.Email, "password": u.Password})
		claims, _, _ := idToken(t, e, pwd, c, authzParams(c.ID))
		if claims["acr"] != "1" || strings.Join(toStrings(claims["amr"]), " ") != "pwd" {
			t.Fatalf("password login: acr %v amr %v", claims["acr"], claims["amr"])
		}
		secret, _ := tfEnable(t, e, u)
		e.Advance(t, time.Minute)
		if tok := login(map[string]any{"email": u.Email, "password": u.Password}); tok != "" {
			t.Fatal("a session without the second factor")
		}
		otp := login(map[string]any{"email": u.Email, "password": u.Password, "code": tfCode(t, secret, e.Clock.Now())})
		claims, _, _ = idToken(t, e, otp, c, authzParams(c.ID))
		if claims["acr"] != "2" || strings.Join(toStrings(claims["amr"]), " ") != "pwd otp" {
			t.Fatalf("two-factor login: acr %v amr %v", claims["acr"], claims["amr"])
		}
	})
}

// goClientFlow drives the authorization code flow with golang.org/x/oauth2
// as a real client: authorize (with the user's session), consent if asked,
// exchange, and returns the token.
func goClientFlow(t *testing.T, e *apptest.Env, conf *oauth2.Config, userTok string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	authURL := conf.AuthCodeURL("st4te", append([]oauth2.AuthCodeOption{oauth2.SetAuthURLParam("nonce", "n-0S6_WzA2Mj")}, opts...)...)
	path := strings.TrimPrefix(authURL, e.URL)
	r := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: userTok})
	var u *url.URL
	if r.Status == http.StatusOK {
		u = consent(t, e, userTok, r.JSON()["pending_authorization_id"].(string), true)
	} else {
		u = location(t, r)
	}
	q := u.Query()
	if q.Get("state") != "st4te" || q.Get("iss") != e.URL || q.Get("code") == "" {
		t.Fatalf("callback %s lacks code, state or iss", u)
	}
	return exchangeWith(t, conf, q.Get("code"), opts)
}

func exchangeWith(t *testing.T, conf *oauth2.Config, code string, opts []oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	tok, err := conf.Exchange(context.Background(), code, opts...)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

func verifyIDToken(t *testing.T, e *apptest.Env, raw, clientID string, key func(*jwt.Token) (any, error), alg string) jwt.MapClaims {
	t.Helper()
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, key, jwt.WithValidMethods([]string{alg}), jwt.WithIssuer(e.URL),
		jwt.WithAudience(clientID), jwt.WithTimeFunc(e.Clock.Now), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	return claims
}

func TestOAuthConfidentialFlowWithGoClient(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_developer"}})
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, dev.Token, map[string]any{"allowed_scopes": []string{"openid", "profile", "email", "roles", "permissions", "offline_access"}})
		for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
			conf := &oauth2.Config{
				ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb,
				Scopes:   []string{"openid", "profile", "email", "roles"},
				Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: style},
			}
			tok := goClientFlow(t, e, conf, user.Token)
			if !strings.HasPrefix(tok.AccessToken, "hm_at_") || !strings.HasPrefix(tok.RefreshToken, "hm_rt_") || tok.TokenType != "Bearer" {
				t.Fatalf("token %+v", tok)
			}
			if exp := tok.Extra("expires_in"); exp != float64(3600) {
				t.Fatalf("expires_in = %v", exp)
			}
			if sc := tok.Extra("scope"); sc != "email openid profile roles" {
				t.Fatalf("scope = %v", sc)
			}
			idt, _ := tok.Extra("id_token").(string)
			claims := verifyIDToken(t, e, idt, c.ID, func(*jwt.Token) (any, error) { return []byte(c.Secret), nil }, "HS256")
			if claims["sub"] != user.ID || claims["nonce"] != "n-0S6_WzA2Mj" || claims["email"] != user.Email || claims["email_verified"] != true ||
				claims["name"] != user.Username || claims["auth_time"] != float64(apptest.Start.Unix()) || claims["permissions"] != nil {
				t.Fatalf("claims %v", claims)
			}
			if roles, _ := claims["roles"].([]any); len(roles) != 1 || roles[0] != "User" {
				t.Fatalf("roles claim %v", claims["roles"])
			}
			if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 3600 {
				t.Fatalf("exp-iat = %v", exp-iat)
			}
			// UserInfo with the access token, and the refresh through the client's token source.
			ui := e.Call(t, "GET", "/v1/oauth/userinfo", tok.AccessToken, nil, http.StatusOK).JSON()
			if ui["sub"] != user.ID || ui["email"] != user.Email || ui["is_super_admin"] != false {
				t.Fatalf("userinfo %v", ui)
			}
			old := *tok
			tok.Expiry = e.Clock.Now().Add(-1)
			ts := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken})
			fresh, err := ts.Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if fresh.AccessToken == old.AccessToken || fresh.RefreshToken == old.RefreshToken || fresh.Extra("id_token") == nil {
				t.Fatalf("refresh did not rotate: %+v", fresh)
			}
			// The spent refresh token's access token is revoked with it (spec 1, states).
			e.Call(t, "GET", "/v1/oauth/userinfo", old.AccessToken, nil, http.StatusUnauthorized)
			e.Call(t, "GET", "/v1/oauth/userinfo", fresh.AccessToken, nil, http.StatusOK)
		}
		if n := auditCount(t, e, "consent_granted", c.ID); n != 1 {
			t.Fatalf("consent_granted events = %d (the second flow reuses the consent)", n)
		}
	})
}

func TestOAuthPublicClientPKCEWithGoClient(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public", "redirect_uris": []string{cb, "com.example.app://callback"}})
		if c.Secret != "" {
			t.Fatalf("public client got a secret")
		}
		conf := &oauth2.Config{
			ClientID: c.ID, RedirectURL: cb, Scopes: []string{"openid", "profile"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
		}
		verifier := oauth2.GenerateVerifier()
		code := func() string {
			u, _ := url.Parse(conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)))
			return getCode(t, e, user.Token, u.Query())
		}
		tok, err := conf.Exchange(context.Background(), code(), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		idt, _ := tok.Extra("id_token").(string)
		claims := verifyIDToken(t, e, idt, c.ID, func(*jwt.Token) (any, error) { return e.Server.OAuth.PublicClientKey(c.ID), nil }, "HS256")
		if claims["sub"] != user.ID || claims["email"] != nil {
			t.Fatalf("claims %v", claims)
		}
		// The same flow without the verifier fails: PKCE is bound to the code.
		if _, err := conf.Exchange(context.Background(), code()); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
			t.Fatalf("exchange without verifier: %v", err)
		}
		// A public client may not authenticate with a secret.
		r := exchange(t, e, testClient{ID: c.ID, Secret: "hm_sec_x"}, code(), "code_verifier", verifier)
		oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
	})
}

func TestOAuthRS256IDTokenWithJWKS(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"id_token_signed_response_alg": "RS256"})
		conf := &oauth2.Config{
			ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb, Scopes: []string{"openid", "email"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
		}
		tok := goClientFlow(t, e, conf, user.Token)
		// The set holds one key per algorithm, RS256 first.
		keys := e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).JSON()["keys"].([]any)
		if len(keys) != 2 || keys[0].(map[string]any)["alg"] != "RS256" || keys[1].(map[string]any)["alg"] != "ES256" {
			t.Fatalf("keys = %v", keys)
		}
		k := keys[0].(map[string]any)
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(b64url(t, k["n"].(string))), E: int(new(big.Int).SetBytes(b64url(t, k["e"].(string))).Int64())}
		claims := verifyIDToken(t, e, tok.Extra("id_token").(string), c.ID, func(tk *jwt.Token) (any, error) {
			if tk.Header["kid"] != k["kid"] {
				t.Fatalf("kid %v, want %v", tk.Header["kid"], k["kid"])
			}
			return pub, nil
		}, "RS256")
		if claims["email"] != user.Email {
			t.Fatalf("claims %v", claims)
		}
		// The key is stored sealed, not in clear.
		var sealed string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT private_key FROM oauth_signing_keys`).Scan(&sealed); err != nil || !strings.HasPrefix(sealed, "v1.") {
			t.Fatalf("stored key %.10q, %v", sealed, err)
		}
	})
}

func b64url(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOAuthDiscovery(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		for _, p := range []string{"/.well-known/openid-configuration", "/v1/.well-known/openid-configuration"} {
			m := e.Call(t, "GET", p, "", nil, http.StatusOK).JSON()
			want := map[string]any{
				"issuer":                 e.URL,
				"authorization_endpoint": e.URL + "/v1/oauth/authorize",
				"token_endpoint":         e.URL + "/v1/oauth/token",
				"userinfo_endpoint":      e.URL + "/v1/oauth/userinfo",
				"revocation_endpoint":    e.URL + "/v1/oauth/revoke",
				"jwks_uri":               e.URL + "/v1/oauth/jwks",
				"authorization_response_iss_parameter_supported": true,
				"request_parameter_supported":                    false,
				"request_uri_parameter_supported":                false,
			}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s %s = %v, want %v", p, k, m[k], v)
				}
			}
			lists := map[string]string{
				"scopes_supported":                           "openid profile email roles permissions offline_access",
				"response_types_supported":                   "code",
				"response_modes_supported":                   "query",
				"grant_types_supported":                      "authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:device_code",
				"token_endpoint_auth_methods_supported":      "client_secret_post client_secret_basic private_key_jwt none",
				"revocation_endpoint_auth_methods_supported": "client_secret_post client_secret_basic private_key_jwt none",
				"code_challenge_methods_supported":           "S256",
				"id_token_signing_alg_values_supported":      "HS256 RS256 ES256",
				"subject_types_supported":                    "public",
			}
			for k, v := range lists {
				var got []string
				for _, x := range m[k].([]any) {
					got = append(got, x.(string))
				}
				if strings.Join(got, " ") != v {
					t.Errorf("%s %s = %v, want %s", p, k, got, v)
				}
			}
			if claims, _ := m["claims_supported"].([]any); len(claims) < 10 {
				t.Errorf("claims_supported = %v", m["claims_supported"])
			}
		}
	})
}
