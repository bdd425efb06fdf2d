package app_test

import (
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/token"
)

// introspect posts form to the introspection endpoint.
func introspect(t *testing.T, e *apptest.Env, form url.Values, hdr map[string]string) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: form, Header: hdr})
}

// introspectAs introspects tok as client c (client_secret_post) and returns the answer.
func introspectAs(t *testing.T, e *apptest.Env, c testClient, tok string, extra ...string) map[string]any {
	t.Helper()
	f := url.Values{"token": {tok}, "client_id": {c.ID}, "client_secret": {c.Secret}}
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	r := introspect(t, e, f, nil)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("introspect: %d %v %s", r.Status, r.Header, r.Body)
	}
	return r.JSON()
}

// inactive asserts the answer is exactly {"active": false}: nothing else is
// told about a token that is not active (RFC 7662 §2.2).
func inactive(t *testing.T, what string, m map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(m, map[string]any{"active": false}) {
		t.Fatalf("%s: %v, want only active false", what, m)
	}
}

// TestOAuthIntrospectActiveTokens introspects a live access and refresh
// token as their client (post and Basic) and as a system key, and checks
// every field of RFC 7662 §2.2 hmid answers.
func TestOAuthIntrospectActiveTokens(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		at, rt := tok["access_token"].(string), tok["refresh_token"].(string)
		now := e.Clock.Now().Unix()

		m := introspectAs(t, e, c, at)
		want := map[string]any{"active": true, "scope": "email openid profile", "client_id": c.ID, "username": user.Username,
			"token_type": "Bearer", "exp": float64(now + 3600), "iat": float64(now), "sub": user.ID, "aud": c.ID, "iss": e.URL}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("access token %s = %v, want %v", k, m[k], v)
			}
		}
		if jti, _ := m["jti"].(string); jti == "" {
			t.Errorf("access token has no jti: %v", m)
		}

		r := introspect(t, e, url.Values{"token": {rt}, "token_type_hint": {"refresh_token"}}, basicAuth(c.ID, c.Secret))
		m = r.JSON()
		if r.Status != 200 || m["active"] != true || m["token_type"] != "refresh_token" || m["exp"] != float64(now+30*24*3600) ||
			m["client_id"] != c.ID || m["sub"] != user.ID || m["scope"] != "email openid profile" || m["jti"] == "" {
			t.Fatalf("refresh token by Basic: %d %s", r.Status, r.Body)
		}
		// The hint is only a hint: a wrong or unknown one changes nothing (RFC 7662 §2.1).
		for _, hint := range []string{"refresh_token", "access_token", "id_token", "made_up"} {
			if m := introspectAs(t, e, c, at, "token_type_hint", hint); m["active"] != true || m["token_type"] != "Bearer" {
				t.Errorf("hint %s: %v", hint, m)
			}
		}
		// A system key may introspect any client's tokens.
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Token: e.SystemKey, Body: url.Values{"token": {at}}})
		if r.Status != 200 || r.JSON()["active"] != true || r.JSON()["client_id"] != c.ID {
			t.Fatalf("system key: %d %s", r.Status, r.Body)
		}
		// Discovery names the endpoint and its client authentication methods.
		d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
		if d["introspection_endpoint"] != e.URL+"/v1/oauth/introspect" ||
			!reflect.DeepEqual(d["introspection_endpoint_auth_methods_supported"], []any{"client_secret_post", "client_secret_basic", "private_key_jwt"}) {
			t.Fatalf("discovery: %v %v", d["introspection_endpoint"], d["introspection_endpoint_auth_methods_supported"])
		}
	})
}

// TestOAuthIntrospectInactiveTokens: expired, revoked (by /revoke and by
// refresh rotation), unknown, malformed, another client's and oversized
// tokens are all just {"active": false}.
func TestOAuthIntrospectInactiveTokens(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		other := mkClient(t, e, user.Token, nil)

		// Another client's token is not revealed, neither the access nor the refresh token.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		at, rt := tok["access_token"].(string), tok["refresh_token"].(string)
		inactive(t, "another client's access token", introspectAs(t, e, other, at))
		inactive(t, "another client's refresh token", introspectAs(t, e, other, rt))

		// Revoked through /revoke: the access token and the refresh token issued with it.
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {c.Secret}}})
		if r.Status != 200 {
			t.Fatalf("revoke %d %s", r.Status, r.Body)
		}
		inactive(t, "revoked access token", introspectAs(t, e, c, at))
		inactive(t, "refresh token revoked with its access token", introspectAs(t, e, c, rt))

		// Rotation: the spent refresh token and its access token die, the new pair lives.
		tok = tokens(t, e, user.Token, c, authzParams(c.ID))
		at, rt = tok["access_token"].(string), tok["refresh_token"].(string)
		r = refreshReq(t, e, c, rt)
		if r.Status != 200 {
			t.Fatalf("refresh %d %s", r.Status, r.Body)
		}
		at2, rt2 := r.JSON()["access_token"].(string), r.JSON()["refresh_token"].(string)
		inactive(t, "rotated refresh token", introspectAs(t, e, c, rt))
		inactive(t, "access token of a rotated refresh token", introspectAs(t, e, c, at))
		if introspectAs(t, e, c, at2)["active"] != true || introspectAs(t, e, c, rt2)["active"] != true {
			t.Fatal("the new pair is not active")
		}

		// Expiry: the access token after an hour, the refresh token lives on.
		e.Clock.Advance(time.Hour)
		inactive(t, "expired access token", introspectAs(t, e, c, at2))
		if introspectAs(t, e, c, rt2)["active"] != true {
			t.Fatal("refresh token inactive after an hour")
		}

		// Unknown and malformed tokens, and the other kinds of hmid secrets.
		for name, tk := range map[string]string{
			"unknown access token":  token.New(token.PrefixAccessToken),
			"unknown refresh token": token.New(token.PrefixRefreshToken),
			"session token":         user.Token,
			"client secret":         c.Secret,
			"malformed":             "hm_at_not*base62!",
			"garbage":               "not a token at all",
			"prefix only":           "hm_at_",
		} {
			inactive(t, name, introspectAs(t, e, c, tk))
		}
		// A huge token is refused or inactive, never a 500.
		r = introspect(t, e, url.Values{"token": {"hm_at_" + strings.Repeat("A", 200_000)}, "client_id": {c.ID}, "client_secret": {c.Secret}}, nil)
		if r.Status == 200 {
			inactive(t, "huge token", r.JSON())
		} else if r.Status != 400 && r.Status != 413 {
			t.Fatalf("huge token: %d %s", r.Status, r.Body)
		}

		// A deleted client's tokens are gone; a deactivated client's are revoked.
		tok = tokens(t, e, user.Token, other, authzParams(other.ID))
		e.Call(t, "PATCH", "/v1/oauth/clients/"+other.ID, user.Token, map[string]any{"is_active": false}, http.StatusOK)
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Token: e.SystemKey, Body: url.Values{"token": {tok["access_token"].(string)}}})
		inactive(t, "token of a deactivated client", r.JSON())
	})
}

// TestOAuthIntrospectCallers: only confidential clients with their secret
// and system keys may introspect; the others get 401 invalid_client (with
// WWW-Authenticate after a Basic attempt), a request without a token 400,
// and GET 405.
func TestOAuthIntrospectCallers(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		pub := mkClient(t, e, user.Token, map[string]any{"client_type": "public"})
		at := tokens(t, e, user.Token, c, authzParams(c.ID))["access_token"].(string)
		userKey, _ := e.NewAPIKey(t, user.ID, "users:read")

		basicChallenge := func(what string, r *apptest.Resp, want bool) {
			t.Helper()
			oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
			if got := strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic"); got != want {
				t.Errorf("%s: WWW-Authenticate %q", what, r.Header.Get("WWW-Authenticate"))
			}
		}
		basicChallenge("public client", introspect(t, e, url.Values{"token": {at}, "client_id": {pub.ID}}, nil), false)
		basicChallenge("public client by Basic", introspect(t, e, url.Values{"token": {at}}, basicAuth(pub.ID, "")), true)
		basicChallenge("wrong secret", introspect(t, e, url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {"hm_sec_wrong"}}, nil), false)
		basicChallenge("wrong secret by Basic", introspect(t, e, url.Values{"token": {at}}, basicAuth(c.ID, "hm_sec_wrong")), true)
		basicChallenge("no credentials", introspect(t, e, url.Values{"token": {at}}, nil), false)
		for _, bearer := range []string{userKey, user.Token, at, "hm_" + strings.Repeat("x", 40)} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Token: bearer, Body: url.Values{"token": {at}}})
			oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
		}

		oauthErr(t, introspect(t, e, url.Values{"client_id": {c.ID}, "client_secret": {c.Secret}}, nil), 400, "invalid_request")
		oauthErr(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Token: e.SystemKey, Body: url.Values{}}), 400, "invalid_request")
		oauthErr(t, introspect(t, e, url.Values{"token": {at, at}, "client_id": {c.ID}, "client_secret": {c.Secret}}, nil), 400, "invalid_request")
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Token: e.SystemKey, Body: `{"token":"x"}`})
		oauthErr(t, r, 400, "invalid_request")
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/introspect?token=" + at, Token: e.SystemKey}); r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("GET: %d %s", r.Status, r.Body)
		}
	})
}

// TestOAuthAuthorizationServerMetadata: the RFC 8414 document is the
// discovery document, answers HEAD, and with an issuer that has a path is
// also served at the path-inserted well-known URL (RFC 8414 §3.1).
func TestOAuthAuthorizationServerMetadata(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		m := e.Call(t, "GET", "/.well-known/oauth-authorization-server", "", nil, http.StatusOK).JSON()
		d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
		if !reflect.DeepEqual(m, d) {
			t.Fatalf("metadata %v differs from discovery %v", m, d)
		}
		for k, v := range map[string]any{"issuer": e.URL, "token_endpoint": e.URL + "/v1/oauth/token", "introspection_endpoint": e.URL + "/v1/oauth/introspect",
			"revocation_endpoint": e.URL + "/v1/oauth/revoke", "jwks_uri": e.URL + "/v1/oauth/jwks", "authorization_endpoint": e.URL + "/v1/oauth/authorize"} {
			if m[k] != v {
				t.Errorf("%s = %v, want %v", k, m[k], v)
			}
		}
		var methods []string
		for _, x := range m["code_challenge_methods_supported"].([]any) {
			methods = append(methods, x.(string))
		}
		if !slices.Equal(methods, []string{"S256"}) {
			t.Errorf("code_challenge_methods_supported %v", methods)
		}
		for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/v1/.well-known/openid-configuration", "/v1/oauth/jwks"} {
			r := e.Do(t, apptest.Req{Method: "HEAD", Path: p})
			if r.Status != 200 || len(r.Body) != 0 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Errorf("HEAD %s: %d %q %v", p, r.Status, r.Body, r.Header)
			}
		}
	})

	withPath := func(c *config.Config) { c.PublicURL += "/id" }
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withPath)
	res, err := e.Client.Get(e.URL + "/.well-known/oauth-authorization-server/id")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := &apptest.Resp{Status: res.StatusCode, Body: body}
	if r.Status != 200 || r.JSON()["issuer"] != e.URL+"/id" || r.JSON()["token_endpoint"] != e.URL+"/id/v1/oauth/token" {
		t.Fatalf("path-inserted metadata: %d %s", r.Status, r.Body)
	}
}
