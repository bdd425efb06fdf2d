package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/cache"
	"hmid/internal/config"
)

// behindProxy makes the test client a trusted proxy, so X-Forwarded-For sets
// the client address of each request.
func behindProxy(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// guess is one login attempt of loginAll.
type guess struct{ email, password, addr string }

// loginAll sends n logins at once and counts the answers by status.
func loginAll(t *testing.T, e *apptest.Env, n int, g func(i int) guess) map[int]int {
	t.Helper()
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := g(i)
			statuses[i] = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login",
				Header: map[string]string{"X-Forwarded-For": q.addr},
				Body:   map[string]any{"email": q.email, "password": q.password}}).Status
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	return count
}

// TestLoginThrottleConcurrent: an attempt is reserved before its password is
// checked, so concurrent guesses cannot all be checked (401 = checked and
// wrong, 429 = refused unchecked), per account and per address, and the
// right password among concurrent guesses after the limit is refused.
func TestLoginThrottleConcurrent(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		// Per account: 40 wrong passwords at once, each from its own address.
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		got := loginAll(t, e, 40, func(i int) guess {
			return guess{u.Email, "wrong password", fmt.Sprintf("198.51.100.%d", i+1)}
		})
		if got[401] != auth.FailPerAccount || got[429] != 40-auth.FailPerAccount {
			t.Fatalf("40 concurrent wrong passwords: %v, want %d×401 and the rest 429", got, auth.FailPerAccount)
		}
		// After the limit, the right password hidden among guesses is refused unchecked.
		got = loginAll(t, e, 40, func(i int) guess {
			if i == 20 {
				return guess{u.Email, pw, "198.51.100.200"}
			}
			return guess{u.Email, "wrong password", fmt.Sprintf("198.51.100.%d", i+1)}
		})
		if got[429] != 40 {
			t.Fatalf("guesses after the limit: %v, want 40×429", got)
		}
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Header: map[string]string{"X-Forwarded-For": "198.51.100.201"},
			Body: map[string]any{"email": "  " + strings.ToUpper(u.Email), "password": pw}})
		if r.Status != 429 || r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Limit") != "5" || r.Header.Get("RateLimit-Remaining") != "0" {
			t.Fatalf("right password after the limit: %d %v", r.Status, r.Header)
		}

		// The right password among the first guesses: still no more than
		// the allowance of wrong ones is checked.
		v := e.NewUser(t, apptest.UserSpec{Password: pw})
		got = loginAll(t, e, 40, func(i int) guess {
			if i == 17 {
				return guess{v.Email, pw, "198.51.100.250"}
			}
			return guess{v.Email, "wrong password", fmt.Sprintf("198.51.100.%d", i+1)}
		})
		// The right password gives its attempt back when it succeeds; whether
		// a wrong guess still gets that attempt depends on which finishes
		// first, so one fewer wrong guess may be checked, never one more.
		if got[401] > auth.FailPerAccount || got[401] < auth.FailPerAccount-got[200] || got[200] > 1 || got[401]+got[200]+got[429] != 40 {
			t.Fatalf("right password among 40 concurrent guesses: %v", got)
		}

		// Per address: 40 wrong guesses at once on 40 accounts from one address.
		const addr = "203.0.113.9"
		got = loginAll(t, e, 40, func(i int) guess { return guess{fmt.Sprintf("nobody%d@example.test", i), "wrong password", addr} })
		if got[401] != auth.FailPerIP || got[429] != 40-auth.FailPerIP {
			t.Fatalf("40 concurrent guesses from one address: %v, want %d×401 and the rest 429", got, auth.FailPerIP)
		}
		w := e.NewUser(t, apptest.UserSpec{Password: pw})
		if got := loginAll(t, e, 1, func(int) guess { return guess{w.Email, pw, addr} }); got[429] != 1 {
			t.Fatalf("right password from the throttled address: %v", got)
		}
		if got := loginAll(t, e, 1, func(int) guess { return guess{w.Email, pw, "203.0.113.10"} }); got[200] != 1 {
			t.Fatalf("right password from another address: %v", got)
		}
	}, behindProxy)
}

// TestLoginThrottleKeysAreBounded: the account is keyed by a hash of the
// normalized address, so a long email does not become a long Redis key.
func TestLoginThrottleKeysAreBounded(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		rc, ok := e.Server.Cache.(*cache.Redis)
		if !ok {
			t.Skip("the in-process limiter has no keys to look at")
		}
		long := strings.Repeat("a", 64<<10) + "@example.test"
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]any{"email": long, "password": "wrong password"}})
		if r.Status != 400 && r.Status != 401 {
			t.Fatalf("long email: %d %s", r.Status, r.Body)
		}
		ctx := context.Background()
		iter := rc.Client.Scan(ctx, 0, "*"+rc.Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if len(iter.Val()) > 200 {
				t.Fatalf("a key of %d bytes", len(iter.Val()))
			}
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// downLimiter is a rate-limit store that cannot be reached.
type downLimiter struct{}

func (downLimiter) AllowN(context.Context, string, cache.Limit, int) (cache.Decision, error) {
	return cache.Decision{}, fmt.Errorf("dial tcp: connection refused")
}

func (downLimiter) Refund(context.Context, string, cache.Limit, int) (cache.Decision, error) {
	return cache.Decision{}, fmt.Errorf("dial tcp: connection refused")
}

// TestLoginThrottleUnavailable: without the rate-limit store, login fails
// closed with 503 before any password is checked.
func TestLoginThrottleUnavailable(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		svc := &auth.Service{DB: e.Server.DB, Clock: e.Clock, Audit: e.Server.Audit, Limiter: downLimiter{}, Epoch: e.Server.Epoch}
		h := &auth.Handler{S: svc}
		for _, body := range []string{
			fmt.Sprintf(`{"email": %q, "password": %q}`, u.Email, pw),
			fmt.Sprintf(`{"email": %q, "password": "wrong password"}`, u.Email),
		} {
			w := httptest.NewRecorder()
			h.Login(w, httptest.NewRequest(http.MethodPost, "/v1/auth/login", strings.NewReader(body)))
			if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"ServiceUnavailable"`) {
				t.Fatalf("login without the limiter: %d %s", w.Code, w.Body)
			}
		}
		if n := auditCount(t, e, u.ID, "login_failed", "failure"); n != 0 {
			t.Fatalf("%d failures audited: a password was checked", n)
		}
	})
}
