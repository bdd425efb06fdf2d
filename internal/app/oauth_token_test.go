package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/oauth/cors"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

func challengeOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestOAuthTokenErrorsTable covers each row of spec 1's OAuth errors table at the token endpoint.
func TestOAuthTokenErrorsTable(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		statuses := apptest.AtOnce(10, func(int) int {
			res, err := http.PostForm(e.URL+"/v1/oauth/token", form)
			if err != nil {
				t.Error(err)
				return 0
			}
			res.Body.Close()
			return res.StatusCode
		})
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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

// reuseInterval sets HMID_REFRESH_REUSE_INTERVAL.
func reuseInterval(d time.Duration) apptest.Option {
	return func(c *config.Config) { c.RefreshReuseInterval = d }
}

// reuseEvents counts the refresh_token_reused events of a client with the status.
func reuseEvents(t *testing.T, e *apptest.Env, clientID, status string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reused' AND resource_id = $1 AND status = $2`, clientID, status)
}

// refreshed asserts a successful refresh and returns its access and refresh token.
func refreshed(t *testing.T, r *apptest.Resp) (at, rt string) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("refresh %d %s", r.Status, r.Body)
	}
	return r.JSON()["access_token"].(string), r.JSON()["refresh_token"].(string)
}

// TestOAuthRefreshReuseStrictByDefault: without HMID_REFRESH_REUSE_INTERVAL
// a spent refresh token presented again, even at once, revokes its family,
// audited as a failed refresh_token_reused.
func TestOAuthRefreshReuseStrictByDefault(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt1 := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		at2, rt2 := refreshed(t, refreshReq(t, e, c, rt1))
		oauthErr(t, refreshReq(t, e, c, rt1), http.StatusBadRequest, "invalid_grant")
		e.Call(t, "GET", "/v1/oauth/userinfo", at2, nil, http.StatusUnauthorized)
		oauthErr(t, refreshReq(t, e, c, rt2), http.StatusBadRequest, "invalid_grant")
		if ok, failed := reuseEvents(t, e, c.ID, "success"), reuseEvents(t, e, c.ID, "failure"); ok != 0 || failed != 1 {
			t.Fatalf("refresh_token_reused: %d success, %d failure", ok, failed)
		}
	})
}

// TestOAuthRefreshReuseInterval: within the interval its own client gets a
// working new pair for a spent token and the family stays intact; another
// client gets invalid_grant and changes nothing; after the interval the
// reuse revokes the family (RFC 9700 §4.14.2).
func TestOAuthRefreshReuseInterval(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		other := mkClient(t, e, user.Token, nil)
		rt1 := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		at2, rt2 := refreshed(t, refreshReq(t, e, c, rt1))

		e.Clock.Advance(time.Second)
		at3, rt3 := refreshed(t, refreshReq(t, e, c, rt1, "scope", "openid"))
		if at3 == at2 || rt3 == rt2 {
			t.Fatal("the reuse got the rotation's pair again")
		}
		// Nothing was revoked: both pairs work.
		for _, at := range []string{at2, at3} {
			e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
		}
		if ok := reuseEvents(t, e, c.ID, "success"); ok != 1 {
			t.Fatalf("refresh_token_reused successes = %d", ok)
		}
		// Another client's presentation is refused and revokes nothing.
		oauthErr(t, refreshReq(t, e, other, rt1), http.StatusBadRequest, "invalid_grant")
		e.Call(t, "GET", "/v1/oauth/userinfo", at3, nil, http.StatusOK)
		// The sibling's refresh token rotates as usual.
		at4, rt4 := refreshed(t, refreshReq(t, e, c, rt3))
		e.Call(t, "GET", "/v1/oauth/userinfo", at3, nil, http.StatusUnauthorized)

		// At the end of the interval the reuse is detected again.
		e.Clock.Advance(time.Second)
		oauthErr(t, refreshReq(t, e, c, rt1), http.StatusBadRequest, "invalid_grant")
		for _, at := range []string{at2, at4} {
			e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized)
		}
		for _, rt := range []string{rt2, rt4} {
			oauthErr(t, refreshReq(t, e, c, rt), http.StatusBadRequest, "invalid_grant")
		}
		if failed := reuseEvents(t, e, c.ID, "failure"); failed != 1 {
			t.Fatalf("refresh_token_reused failures = %d", failed)
		}
	}, reuseInterval(2*time.Second))
}

// TestOAuthRefreshReuseIntervalRevokedFamily: a family revoked meanwhile
// (here by RFC 7009 revocation) is not revived by the reuse interval.
func TestOAuthRefreshReuseIntervalRevokedFamily(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt1 := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		_, rt2 := refreshed(t, refreshReq(t, e, c, rt1))
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {rt2}, "client_id": {c.ID}, "client_secret": {c.Secret}}})
		if r.Status != http.StatusOK {
			t.Fatalf("revoke %d %s", r.Status, r.Body)
		}
		oauthErr(t, refreshReq(t, e, c, rt1), http.StatusBadRequest, "invalid_grant")
		if ok := reuseEvents(t, e, c.ID, "success"); ok != 0 {
			t.Fatalf("refresh_token_reused successes = %d", ok)
		}
	}, reuseInterval(time.Minute))
}

// TestOAuthRefreshReuseIntervalConcurrent: with an interval, parallel
// refreshes with one token all succeed, each with a pair of its own that works.
func TestOAuthRefreshReuseIntervalConcurrent(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		const n = 8
		res := apptest.AtOnce(n, func(int) *apptest.Resp {
			hr, err := http.PostForm(e.URL+"/v1/oauth/token", form)
			if err != nil {
				t.Error(err)
				return nil
			}
			defer hr.Body.Close()
			body, err := io.ReadAll(hr.Body)
			if err != nil {
				t.Error(err)
			}
			return &apptest.Resp{Status: hr.StatusCode, Header: hr.Header, Body: body}
		})
		if t.Failed() {
			return
		}
		seen := map[string]bool{}
		for _, r := range res {
			at, next := refreshed(t, r)
			if seen[next] {
				t.Fatal("two requests got the same refresh token")
			}
			seen[next] = true
			e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
		}
		if ok := reuseEvents(t, e, c.ID, "success"); ok != n-1 {
			t.Fatalf("refresh_token_reused successes = %d, want %d", ok, n-1)
		}
		for next := range seen {
			refreshed(t, refreshReq(t, e, c, next))
		}
	}, reuseInterval(2*time.Second))
}

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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
// instance) is seen after cors.OriginTTL.
func TestOAuthCORSFollowsClients(t *testing.T) {
	t.Parallel()
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
		e.Clock.Advance(cors.OriginTTL)
		allows(t, "old origin after the TTL", token("https://other.example"), "")
		allows(t, "new origin after the TTL", token("https://moved.example"), "https://moved.example")
	})
}

// TestOAuthHeadAndOptions: the GET endpoints answer HEAD like GET without a
// body, and OPTIONS without Origin lists the methods.
func TestOAuthHeadAndOptions(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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

func TestOAuthAuthorizeByPOST(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize", Token: user.Token, Body: authzParams(c.ID)})
		u := location(t, r)
		if u.Query().Get("code") == "" || u.Query().Get("state") != "st4te" {
			t.Fatalf("POST authorize %s", u)
		}
		if r := exchange(t, e, c, u.Query().Get("code")); r.Status != http.StatusOK {
			t.Fatalf("exchange %d %s", r.Status, r.Body)
		}
		// Without a session the form parameters travel in return_to.
		u = location(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize", Body: authzParams(c.ID)}))
		back, _ := url.Parse(u.Query().Get("return_to"))
		if back.Query().Get("client_id") != c.ID || back.Query().Get("redirect_uri") != cb {
			t.Fatalf("return_to %s", back)
		}
	})
}

func TestOAuthRevokeUserTokensEndsCodesAndPending(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		code := getCode(t, e, user.Token, authzParams(c.ID))
		pending := authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid profile email", "prompt", "consent"), nil).JSON()["pending_authorization_id"].(string)
		if err := e.Server.OAuth.RevokeUserTokens(context.Background(), user.ID); err != nil {
			t.Fatal(err)
		}
		oauthErr(t, exchange(t, e, c, code), http.StatusBadRequest, "invalid_grant")
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": pending, "approved": true}, http.StatusNotFound)
	})
}

func TestOAuthPurge(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		count := func(table string) int {
			var n int
			if err := e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 2 || count("oauth_codes") != 1 {
			t.Fatalf("purge removed live rows: %v", err)
		}
		// A day after expiry the code and the access token go; the refresh token stays for reuse detection.
		e.Clock.Advance(26 * time.Hour)
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 1 || count("oauth_codes") != 0 {
			t.Fatalf("after a day: tokens %d codes %d, %v", count("oauth_tokens"), count("oauth_codes"), err)
		}
		e.Clock.Advance(60 * 24 * time.Hour)
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 0 {
			t.Fatalf("after 60 days: tokens %d, %v", count("oauth_tokens"), err)
		}
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
	})
}

// TestOAuthPurgeKeepsWhatReuseDetectionNeeds: spent refresh tokens are kept
// while their family can still be used (so presenting one still revokes the
// family), revoked access tokens go at once, and every row of a revoked or
// expired family goes, in batches of store.PurgeBatch rows. /metrics shows
// the tables' sizes.
func TestOAuthPurgeKeepsWhatReuseDetectionNeeds(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		count := func() int { return scalar[int](t, e, `SELECT COUNT(*) FROM oauth_tokens`) }
		purge := func() {
			t.Helper()
			if err := e.Server.OAuth.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}

		// A chain of three rotations: R0..R2 spent, R3 and its access token live.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		spent := []string{tok["refresh_token"].(string)}
		rt := spent[0]
		for range 3 {
			r := refreshReq(t, e, c, rt)
			if r.Status != http.StatusOK {
				t.Fatalf("refresh %d %s", r.Status, r.Body)
			}
			rt = r.JSON()["refresh_token"].(string)
			spent = append(spent, rt)
		}
		if n := count(); n != 8 {
			t.Fatalf("tokens before purge = %d", n)
		}
		purge()
		// The three revoked access tokens go; the spent refresh tokens stay.
		if n := count(); n != 5 {
			t.Fatalf("tokens after purge = %d, want 5 (4 refresh, 1 access)", n)
		}
		// Reuse detection still works: R0 revokes the family, R3 with it.
		oauthErr(t, refreshReq(t, e, c, spent[0]), http.StatusBadRequest, "invalid_grant")
		oauthErr(t, refreshReq(t, e, c, rt), http.StatusBadRequest, "invalid_grant")
		purge()
		if n := count(); n != 0 {
			t.Fatalf("tokens of a revoked family left: %d", n)
		}

		// A family revoked at the revocation endpoint goes too; a live one stays.
		dead := tokens(t, e, user.Token, c, authzParams(c.ID))
		live := tokens(t, e, user.Token, c, authzParams(c.ID))
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {dead["refresh_token"].(string)},
			"client_id": {c.ID}, "client_secret": {c.Secret}}})
		if r.Status != http.StatusOK {
			t.Fatalf("revoke %d %s", r.Status, r.Body)
		}
		// Many dead rows: more than one batch of expired families.
		past := db.TS(e.Clock.Now().Add(-time.Hour))
		const deadRows = 2*store.PurgeBatch + 17
		for i := 0; i < deadRows; i += 500 {
			var vals []string
			for j := i; j < min(i+500, deadRows); j++ {
				vals = append(vals, fmt.Sprintf("('dead-%05d', 'refresh', 'hash-%05d', 'fam-%05d', 'pair-%05d', '%s', '%s', '[]', %d, %d, %d)",
					j, j, j/3, j, c.ID, user.ID, past, past, past))
			}
			execSQL(t, e, `INSERT INTO oauth_tokens (id, kind, token_hash, family_id, pair_id, client_id, user_id, scopes, auth_time, created_at, expires_at) VALUES `+strings.Join(vals, ", "))
		}
		if n := count(); n != 4+deadRows {
			t.Fatalf("tokens before the big purge = %d", n)
		}
		if got := metricValue(t, e, `hmid_oauth_table_rows{table="oauth_tokens"}`); e.Server.DB.Flavor == db.SQLite && got != float64(4+deadRows) {
			t.Fatalf("hmid_oauth_table_rows = %v, want %d", got, 4+deadRows)
		}
		purge()
		if n := count(); n != 2 {
			t.Fatalf("tokens after the big purge = %d, want the live pair", n)
		}
		if got := metricValue(t, e, `hmid_oauth_table_rows{table="oauth_tokens"}`); e.Server.DB.Flavor == db.SQLite && got != 2 {
			t.Fatalf("hmid_oauth_table_rows after purge = %v", got)
		}
		metricValue(t, e, `hmid_oauth_table_rows{table="oauth_codes"}`)
		metricValue(t, e, `hmid_oauth_table_rows{table="oauth_pending_authorizations"}`)
		if r := refreshReq(t, e, c, live["refresh_token"].(string)); r.Status != http.StatusOK {
			t.Fatalf("the live family stopped working: %d %s", r.Status, r.Body)
		}
	})
}

// metricValue reads one sample of /metrics by its name and labels.
func metricValue(t *testing.T, e *apptest.Env, series string) float64 {
	t.Helper()
	body := string(e.Do(t, apptest.Req{Method: "GET", Path: "/metrics", Token: e.SystemKey}).Body)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// TestOAuthBasicCredentialsAreFormDecoded checks RFC 6749 §2.3.1: the client
// id and secret inside the Basic header are application/x-www-form-urlencoded.
func TestOAuthBasicCredentialsAreFormDecoded(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		encodedID := strings.ReplaceAll(c.ID, "-", "%2D")
		hdr := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(encodedID+":"+c.Secret))}
		code := getCode(t, e, user.Token, authzParams(c.ID))
		r := tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}}, hdr)
		if r.Status != http.StatusOK {
			t.Fatalf("percent-encoded Basic credentials: %d %s", r.Status, r.Body)
		}
		bad := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(c.ID+":%zz"))}
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {cb}}, bad), http.StatusUnauthorized, "invalid_client")
	})
}
