package app_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"hmid/internal/apptest"
)

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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
