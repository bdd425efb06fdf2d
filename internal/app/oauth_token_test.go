package app_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
)

func challengeOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestOAuthTokenErrorsTable covers each row of spec 1's OAuth errors table at the token endpoint.
func TestOAuthTokenErrorsTable(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		other := mkClient(t, e, user.Token, nil)
		code := func() string { return getCode(t, e, user.Token, authzParams(c.ID)) }

		// invalid_request: missing parameters, wrong body type, repeated parameters.
		oauthErr(t, tokenReq(t, e, url.Values{"client_id": {c.ID}, "client_secret": {c.Secret}}, nil), 400, "invalid_request")
		oauthErr(t, exchange(t, e, c, "", "code", ""), 400, "invalid_request")
		oauthErr(t, exchange(t, e, c, code(), "redirect_uri", ""), 400, "invalid_request")
		oauthErr(t, refreshReq(t, e, c, ""), 400, "invalid_request")
		oauthErr(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: `{"grant_type":"authorization_code"}`}), 400, "invalid_request")
		dup := url.Values{"grant_type": {"authorization_code", "refresh_token"}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		oauthErr(t, tokenReq(t, e, dup, nil), 400, "invalid_request")
		both := url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {cb}, "client_secret": {c.Secret}}
		oauthErr(t, tokenReq(t, e, both, basicAuth(c.ID, c.Secret)), 400, "invalid_request")

		// invalid_client: unknown, inactive, bad secret, missing secret; Basic gets WWW-Authenticate.
		oauthErr(t, exchange(t, e, testClient{ID: "8d7b2f0e-1111-4222-8333-944455556666", Secret: c.Secret}, "x"), 401, "invalid_client")
		oauthErr(t, exchange(t, e, testClient{ID: c.ID, Secret: c.Secret + "x"}, "x"), 401, "invalid_client")
		oauthErr(t, exchange(t, e, testClient{ID: c.ID}, "x"), 401, "invalid_client")
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {cb}}, nil), 401, "invalid_client")
		r := tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {cb}}, basicAuth(c.ID, "wrong"))
		oauthErr(t, r, 401, "invalid_client")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
		}
		if r := exchange(t, e, testClient{ID: c.ID}, "x"); r.Header.Get("WWW-Authenticate") != "" {
			t.Fatalf("client_secret_post failure carries WWW-Authenticate")
		}
		cd := code()
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"is_active": false}, http.StatusOK)
		oauthErr(t, exchange(t, e, c, cd), 401, "invalid_client")
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, user.Token, map[string]any{"is_active": true}, http.StatusOK)

		// invalid_grant: unknown code, redirect_uri mismatch, another client's code, expired code.
		oauthErr(t, exchange(t, e, c, "hm_ac_unknown"), 400, "invalid_grant")
		oauthErr(t, exchange(t, e, c, code(), "redirect_uri", cb+"/"), 400, "invalid_grant")
		oauthErr(t, exchange(t, e, other, code()), 400, "invalid_grant")
		old := code()
		e.Clock.Advance(10*time.Minute + time.Second)
		oauthErr(t, exchange(t, e, c, old), 400, "invalid_grant")
		oauthErr(t, refreshReq(t, e, c, "hm_rt_unknown"), 400, "invalid_grant")

		// unsupported_grant_type; a grant hmid knows but the client is not
		// registered for is unauthorized_client (its grant_types).
		for _, gt := range []string{"password", "implicit"} {
			f := url.Values{"grant_type": {gt}, "client_id": {c.ID}, "client_secret": {c.Secret}, "username": {"u"}, "password": {"p"}}
			oauthErr(t, tokenReq(t, e, f, nil), 400, "unsupported_grant_type")
		}
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {c.Secret}}, nil), 400, "unauthorized_client")

		// invalid_scope: a refresh may not widen the scope.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID, "scope", "openid"))
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string), "scope", "openid email"), 400, "invalid_scope")

		// Every answer of the token endpoint is uncacheable.
		r = exchange(t, e, c, "hm_ac_unknown")
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
			t.Fatalf("headers %v", r.Header)
		}
		r = exchange(t, e, c, code())
		if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
			t.Fatalf("success %d headers %v", r.Status, r.Header)
		}
	})
}

func TestOAuthCodeReuseRevokesTokens(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		code := getCode(t, e, user.Token, authzParams(c.ID))
		first := exchange(t, e, c, code)
		if first.Status != 200 {
			t.Fatalf("first exchange %d %s", first.Status, first.Body)
		}
		tok := first.JSON()
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusOK)
		oauthErr(t, exchange(t, e, c, code), 400, "invalid_grant")
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), 400, "invalid_grant")
	})
}

func TestOAuthFailedRedemptionBurnsCode(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		for _, bad := range [][]string{
			{"redirect_uri", "https://app.example/other"},
			{"code_verifier", strings.Repeat("v", 43)},
		} {
			code := getCode(t, e, user.Token, authzParams(c.ID))
			oauthErr(t, exchange(t, e, c, code, bad...), 400, "invalid_grant")
			oauthErr(t, exchange(t, e, c, code), 400, "invalid_grant")
		}
	})
}

func TestOAuthPKCE(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		conf := mkClient(t, e, user.Token, nil)
		pub := mkClient(t, e, user.Token, map[string]any{"client_type": "public"})
		verifier := strings.Repeat("abcDEF123-._~", 4)
		withPKCE := func(c testClient) string {
			return getCode(t, e, user.Token, authzParams(c.ID, "code_challenge", challengeOf(verifier), "code_challenge_method", "S256"))
		}
		// Downgrade one way: a challenge was sent, the verifier is left out.
		oauthErr(t, exchange(t, e, pub, withPKCE(pub)), 400, "invalid_grant")
		oauthErr(t, exchange(t, e, conf, withPKCE(conf)), 400, "invalid_grant")
		// Downgrade the other way: no challenge was sent, a verifier appears.
		oauthErr(t, exchange(t, e, conf, getCode(t, e, user.Token, authzParams(conf.ID)), "code_verifier", verifier), 400, "invalid_grant")
		// Wrong verifier; malformed verifiers (too short, too long, bad characters).
		oauthErr(t, exchange(t, e, pub, withPKCE(pub), "code_verifier", verifier+"x"), 400, "invalid_grant")
		for _, v := range []string{strings.Repeat("a", 42), strings.Repeat("a", 129), strings.Repeat("a", 42) + "!"} {
			oauthErr(t, exchange(t, e, pub, withPKCE(pub), "code_verifier", v), 400, "invalid_request")
		}
		// The right verifier works, for public and confidential clients.
		for _, c := range []testClient{pub, conf} {
			if r := exchange(t, e, c, withPKCE(c), "code_verifier", verifier); r.Status != 200 {
				t.Fatalf("PKCE exchange %d %s", r.Status, r.Body)
			}
		}
		// 128-character verifiers are allowed.
		long := strings.Repeat("x", 128)
		code := getCode(t, e, user.Token, authzParams(pub.ID, "code_challenge", challengeOf(long), "code_challenge_method", "S256"))
		if r := exchange(t, e, pub, code, "code_verifier", long); r.Status != 200 {
			t.Fatalf("128-char verifier %d %s", r.Status, r.Body)
		}
	})
}

func TestOAuthRefreshRotationAndReuse(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		other := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		rt1 := tok["refresh_token"].(string)
		// Another client cannot use it, and trying does not spend it.
		oauthErr(t, refreshReq(t, e, other, rt1), 400, "invalid_grant")
		// Narrowing is allowed for the access token; the refresh token keeps the original scope.
		r := refreshReq(t, e, c, rt1, "scope", "openid")
		if r.Status != 200 || r.JSON()["scope"] != "openid" {
			t.Fatalf("narrow %d %s", r.Status, r.Body)
		}
		rt2 := r.JSON()["refresh_token"].(string)
		r = refreshReq(t, e, c, rt2)
		if r.Status != 200 || r.JSON()["scope"] != "email openid profile" {
			t.Fatalf("original scope after narrowing: %d %s", r.Status, r.Body)
		}
		at3, rt3 := r.JSON()["access_token"].(string), r.JSON()["refresh_token"].(string)
		e.Call(t, "GET", "/v1/oauth/userinfo", at3, nil, http.StatusOK)
		// Presenting the rotated rt1 again revokes the whole family, including rt3 and at3.
		oauthErr(t, refreshReq(t, e, c, rt1), 400, "invalid_grant")
		e.Call(t, "GET", "/v1/oauth/userinfo", at3, nil, http.StatusUnauthorized)
		oauthErr(t, refreshReq(t, e, c, rt3), 400, "invalid_grant")
		// Refresh tokens expire after 30 days.
		tok = tokens(t, e, user.Token, c, authzParams(c.ID))
		e.Clock.Advance(30*24*time.Hour + time.Second)
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), 400, "invalid_grant")
	})
}

func TestOAuthAccessTokenExpires(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		e.Clock.Advance(time.Hour - time.Second)
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusOK)
		e.Clock.Advance(time.Second)
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
	})
}

func TestOAuthParallelRefreshOneWinner(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		var wg sync.WaitGroup
		statuses := make([]int, 10)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := http.PostForm(e.URL+"/v1/oauth/token", form)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				statuses[i] = res.StatusCode
			}()
		}
		wg.Wait()
		ok := 0
		for _, s := range statuses {
			switch s {
			case 200:
				ok++
			case 400:
			default:
				t.Fatalf("status %d in %v", s, statuses)
			}
		}
		if ok != 1 {
			t.Fatalf("%d successes of 10 parallel refreshes: %v", ok, statuses)
		}
	})
}

func TestOAuthRevoke(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		other := mkClient(t, e, user.Token, nil)
		revoke := func(cl testClient, tok, hint string, hdr map[string]string) *apptest.Resp {
			f := url.Values{"token": {tok}}
			if hint != "" {
				f.Set("token_type_hint", hint)
			}
			if hdr == nil {
				f.Set("client_id", cl.ID)
				if cl.Secret != "" {
					f.Set("client_secret", cl.Secret)
				}
			}
			return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: f, Header: hdr})
		}
		must200 := func(r *apptest.Resp) {
			t.Helper()
			if r.Status != 200 {
				t.Fatalf("revoke %d %s", r.Status, r.Body)
			}
		}
		// Access token (type from the prefix): its refresh token goes too.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		must200(revoke(c, tok["access_token"].(string), "", nil))
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), 400, "invalid_grant")
		// Refresh token with a hint and Basic authentication: its access token goes too.
		tok = tokens(t, e, user.Token, c, authzParams(c.ID))
		must200(revoke(c, tok["refresh_token"].(string), "refresh_token", basicAuth(c.ID, c.Secret)))
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		// A wrong hint does not matter.
		tok = tokens(t, e, user.Token, c, authzParams(c.ID))
		must200(revoke(c, tok["access_token"].(string), "refresh_token", nil))
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusUnauthorized)
		// Another client's token is silently left alone.
		tok = tokens(t, e, user.Token, c, authzParams(c.ID))
		must200(revoke(other, tok["access_token"].(string), "", nil))
		must200(revoke(other, tok["refresh_token"].(string), "", nil))
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusOK)
		// Unknown tokens answer 200; missing token 400; unauthenticated clients 401.
		must200(revoke(c, "hm_at_doesnotexist", "", nil))
		must200(revoke(c, "garbage", "", nil))
		oauthErr(t, revoke(c, "", "", nil), 400, "invalid_request")
		oauthErr(t, revoke(testClient{ID: c.ID, Secret: "bad"}, tok["access_token"].(string), "", nil), 401, "invalid_client")
		oauthErr(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {"x"}}}), 401, "invalid_client")
		e.Call(t, "GET", "/v1/oauth/userinfo", tok["access_token"].(string), nil, http.StatusOK)
	})
}
