package app_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
)

// reuseInterval sets HMID_REFRESH_REUSE_INTERVAL.
func reuseInterval(d time.Duration) apptest.Option {
	return func(c *config.Config) { c.RefreshReuseInterval = d }
}

// reuseEvents counts the refresh_token_reused events of a client with the status.
func reuseEvents(t *testing.T, e *apptest.Env, clientID, status string) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reused' AND resource_id = $1 AND status = $2`,
		clientID, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		rt := tokens(t, e, user.Token, c, authzParams(c.ID))["refresh_token"].(string)
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		const n = 8
		var wg sync.WaitGroup
		res := make([]*apptest.Resp, n)
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hr, err := http.PostForm(e.URL+"/v1/oauth/token", form)
				if err != nil {
					t.Error(err)
					return
				}
				defer hr.Body.Close()
				body, err := io.ReadAll(hr.Body)
				if err != nil {
					t.Error(err)
				}
				res[i] = &apptest.Resp{Status: hr.StatusCode, Header: hr.Header, Body: body}
			}()
		}
		wg.Wait()
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
