package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/oauth"
)

// appOrigin is the web origin of cb, the test clients' redirect URI.
const appOrigin = "https://app.example"

// withOrigin sends q with an Origin header (and any extra headers).
func withOrigin(t *testing.T, e *apptest.Env, q apptest.Req, origin string) *apptest.Resp {
	t.Helper()
	if q.Header == nil {
		q.Header = map[string]string{}
	}
	if origin != "" {
		q.Header["Origin"] = origin
	}
	return e.Do(t, q)
}

// preflightReq is a browser's CORS preflight for method on path.
func preflightReq(path, method string) apptest.Req {
	return apptest.Req{Method: "OPTIONS", Path: path, Header: map[string]string{
		"Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization,content-type"}}
}

// allows asserts the answer lets origin read it ("" asserts it lets no one).
func allows(t *testing.T, what string, r *apptest.Resp, origin string) {
	t.Helper()
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != origin {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q (status %d)", what, got, origin, r.Status)
	}
	if r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("%s: Access-Control-Allow-Credentials is set", what)
	}
}

// TestOAuthCORS: the web origins of active clients may call the token,
// revocation, introspection and UserInfo endpoints across origins, with
// preflight; other origins and every other route get no CORS header; the
// public documents allow any origin.
func TestOAuthCORS(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		at := tok["access_token"].(string)

		for _, tc := range []struct{ path, method string }{
			{"/v1/oauth/token", "POST"}, {"/v1/oauth/revoke", "POST"}, {"/v1/oauth/introspect", "POST"}, {"/v1/oauth/userinfo", "GET"},
		} {
			r := withOrigin(t, e, preflightReq(tc.path, tc.method), appOrigin)
			if r.Status != http.StatusNoContent {
				t.Fatalf("preflight %s: %d %s", tc.path, r.Status, r.Body)
			}
			allows(t, "preflight "+tc.path, r, appOrigin)
			h := r.Header
			if !strings.Contains(h.Get("Access-Control-Allow-Methods"), tc.method) || h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
				h.Get("Access-Control-Max-Age") == "" || h.Get("Vary") != "Origin" || !strings.Contains(h.Get("Allow"), "OPTIONS") {
				t.Errorf("preflight %s headers %v", tc.path, h)
			}
			r = withOrigin(t, e, preflightReq(tc.path, tc.method), "https://evil.example")
			allows(t, "preflight from an unknown origin "+tc.path, r, "")
			if r.Status != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("unknown origin's preflight %s: %d %v", tc.path, r.Status, r.Header)
			}
		}

		// The calls themselves, successful or not, name the origin.
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		r := withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: form}, appOrigin)
		if r.Status != 200 || r.Header.Get("Vary") != "Origin" {
			t.Fatalf("token: %d %v", r.Status, r.Header)
		}
		allows(t, "token", r, appOrigin)
		at = r.JSON()["access_token"].(string)
		r = withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{"grant_type": {"refresh_token"}}}, appOrigin)
		allows(t, "token error", r, appOrigin)
		r = withOrigin(t, e, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: at}, appOrigin)
		if r.Status != 200 {
			t.Fatalf("userinfo %d %s", r.Status, r.Body)
		}
		allows(t, "userinfo", r, appOrigin)
		r = withOrigin(t, e, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo"}, appOrigin)
		allows(t, "userinfo 401", r, appOrigin)
		if r.Header.Get("Access-Control-Expose-Headers") != "WWW-Authenticate" {
			t.Errorf("userinfo 401 does not expose WWW-Authenticate: %v", r.Header)
		}
		r = withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {c.Secret}}}, appOrigin)
		allows(t, "introspect", r, appOrigin)
		r = withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {c.Secret}}}, appOrigin)
		allows(t, "revoke", r, appOrigin)

		// Unknown origins, near misses included, get nothing.
		for _, o := range []string{"https://evil.example", "http://app.example", "https://app.example:8443", "https://sub.app.example", "null", "https://app.example/"} {
			r = withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: form}, o)
			allows(t, "token from "+o, r, "")
		}

		// The public documents: any origin, no origin no header.
		for _, p := range []string{"/.well-known/openid-configuration", "/v1/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/v1/oauth/jwks"} {
			allows(t, p, withOrigin(t, e, apptest.Req{Method: "GET", Path: p}, "https://anyone.example"), "*")
			allows(t, p+" without Origin", withOrigin(t, e, apptest.Req{Method: "GET", Path: p}, ""), "")
			r = withOrigin(t, e, preflightReq(p, "GET"), "https://anyone.example")
			allows(t, "preflight "+p, r, "*")
			if r.Status != http.StatusNoContent || !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "GET") {
				t.Errorf("preflight %s: %d %v", p, r.Status, r.Header)
			}
		}

		// Nothing else is opened: not the client API under /v1/oauth, not the rest.
		for _, q := range []apptest.Req{
			{Method: "GET", Path: "/v1/users/me", Token: user.Token},
			{Method: "GET", Path: "/v1/oauth/clients", Token: user.Token},
			{Method: "GET", Path: "/v1/oauth/authorize?" + authzParams(c.ID).Encode(), Token: user.Token},
			{Method: "GET", Path: "/health"},
			{Method: "GET", Path: "/login"},
		} {
			r = withOrigin(t, e, q, appOrigin)
			allows(t, q.Path, r, "")
		}
		for _, p := range []string{"/v1/users/me", "/v1/oauth/clients", "/v1/oauth/authorize", "/login"} {
			r = withOrigin(t, e, preflightReq(p, "GET"), appOrigin)
			allows(t, "preflight "+p, r, "")
			if r.Status != http.StatusMethodNotAllowed {
				t.Errorf("OPTIONS %s: %d", p, r.Status)
			}
		}
	})
}

// TestOAuthCORSFollowsClients: an origin is allowed as soon as a client
// registers it, and no longer once the redirect URI is changed, the client
// deactivated or deleted; a change made behind this instance's back (another
// instance) is seen after oauth.OriginTTL.
func TestOAuthCORSFollowsClients(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		const spa = "http://localhost:5173"
		token := func(origin string) *apptest.Resp {
			return withOrigin(t, e, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{"grant_type": {"refresh_token"}}}, origin)
		}
		allows(t, "before registration", token(spa), "")

		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public",
			"redirect_uris": []string{spa + "/callback", "https://spa.example:443/cb", "com.example.app://cb", "http://[::1]:8000/cb"}})
		allows(t, "after registration", token(spa), spa)
		allows(t, "default port", token("https://spa.example"), "https://spa.example")
		allows(t, "IPv6 loopback", token("http://[::1]:8000"), "http://[::1]:8000")
		allows(t, "custom scheme", token("com.example.app://cb"), "")

		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"redirect_uris": []string{"https://spa.example/cb"}}, http.StatusOK)
		allows(t, "redirect URI removed", token(spa), "")
		allows(t, "redirect URI kept", token("https://spa.example"), "https://spa.example")

		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"is_active": false}, http.StatusOK)
		allows(t, "client deactivated", token("https://spa.example"), "")
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"is_active": true}, http.StatusOK)
		allows(t, "client reactivated", token("https://spa.example"), "https://spa.example")

		e.Call(t, "DELETE", "/v1/oauth/clients/"+c.ID, user.Token, nil, http.StatusNoContent)
		allows(t, "client deleted", token("https://spa.example"), "")

		// Another instance's change reaches this one within OriginTTL.
		d := mkClient(t, e, user.Token, map[string]any{"redirect_uris": []string{"https://other.example/cb"}})
		allows(t, "registered", token("https://other.example"), "https://other.example")
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE oauth_clients SET redirect_uris = '["https://moved.example/cb"]' WHERE id = $1`, d.ID); err != nil {
			t.Fatal(err)
		}
		allows(t, "cached", token("https://other.example"), "https://other.example")
		e.Clock.Advance(oauth.OriginTTL)
		allows(t, "old origin after the TTL", token("https://other.example"), "")
		allows(t, "new origin after the TTL", token("https://moved.example"), "https://moved.example")
	})
}

// TestOAuthHeadAndOptions: the GET endpoints answer HEAD like GET without a
// body, and OPTIONS without Origin lists the methods.
func TestOAuthHeadAndOptions(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		at := tokens(t, e, user.Token, c, authzParams(c.ID))["access_token"].(string)
		r := e.Do(t, apptest.Req{Method: "HEAD", Path: "/v1/oauth/userinfo", Token: at})
		if r.Status != 200 || len(r.Body) != 0 {
			t.Fatalf("HEAD userinfo: %d %q", r.Status, r.Body)
		}
		if r := e.Do(t, apptest.Req{Method: "HEAD", Path: "/v1/oauth/userinfo"}); r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("HEAD userinfo without a token: %d %v", r.Status, r.Header)
		}
		for path, methods := range map[string]string{
			"/v1/oauth/token": "POST, OPTIONS", "/v1/oauth/revoke": "POST, OPTIONS", "/v1/oauth/introspect": "POST, OPTIONS",
			"/v1/oauth/userinfo": "GET, HEAD, POST, OPTIONS", "/v1/oauth/jwks": "GET, HEAD, OPTIONS",
			"/.well-known/openid-configuration": "GET, HEAD, OPTIONS", "/.well-known/oauth-authorization-server": "GET, HEAD, OPTIONS",
		} {
			r := e.Do(t, apptest.Req{Method: "OPTIONS", Path: path})
			if r.Status != http.StatusNoContent || r.Header.Get("Allow") != methods || r.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("OPTIONS %s: %d %v", path, r.Status, r.Header)
			}
		}
	})
}

// BenchmarkTokenEndpointCORS measures the token endpoint (a confidential
// client redeeming an unknown code: client lookup, code lookup, error
// answer) without an Origin header, as server-side clients call it, and with
// an allowed and an unknown Origin, as browser apps do: the CORS check must
// not slow the hot path down.
func BenchmarkTokenEndpointCORS(b *testing.B) {
	e := apptest.New(&testing.T{}, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(b)})
	u := e.NewUser(b, apptest.UserSpec{})
	d := e.Call(b, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Bench", "redirect_uris": []string{cb}}, http.StatusCreated).JSON()["data"].(map[string]any)
	// Many registered origins, so the lookup is not trivially small.
	for i := range 50 {
		e.Call(b, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Other", "redirect_uris": []string{"https://app" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example/cb"}}, http.StatusCreated)
	}
	body := url.Values{"grant_type": {"authorization_code"}, "code": {"hm_ac_unknown"}, "redirect_uri": {cb},
		"client_id": {d["id"].(string)}, "client_secret": {d["client_secret"].(string)}}.Encode()
	for _, tc := range []struct{ name, origin, want string }{
		{"no-origin", "", ""}, {"allowed-origin", appOrigin, appOrigin}, {"unknown-origin", "https://evil.example", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/oauth/token", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if tc.origin != "" {
					req.Header.Set("Origin", tc.origin)
				}
				w := httptest.NewRecorder()
				e.Server.ServeHTTP(w, req)
				if w.Code != http.StatusBadRequest || w.Header().Get("Access-Control-Allow-Origin") != tc.want {
					b.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
				}
			}
		})
	}
}
