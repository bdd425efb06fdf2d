package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

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
	statuses := apptest.AtOnce(n, func(i int) int {
		q := g(i)
		return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login",
			Header: map[string]string{"X-Forwarded-For": q.addr},
			Body:   map[string]any{"email": q.email, "password": q.password}}).Status
	})
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	return count
}

// TestLoginThrottleConcurrent: an attempt is reserved before its password is
// checked, so concurrent guesses cannot all be checked (401 = checked and
// wrong, 429 = refused unchecked), per account and address, per account
// from all addresses (the backstop) and per address; the right password
// among concurrent guesses after the limit is refused at the guesser's
// address but not at the owner's.
func TestLoginThrottleConcurrent(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		// Per account and address: 40 wrong passwords at once from one address.
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		const attacker = "198.51.100.7"
		got := loginAll(t, e, 40, func(i int) guess { return guess{u.Email, "wrong password", attacker} })
		if got[401] != auth.FailPerAccount || got[429] != 40-auth.FailPerAccount {
			t.Fatalf("40 concurrent wrong passwords: %v, want %d×401 and the rest 429", got, auth.FailPerAccount)
		}
		// After the limit, the right password hidden among guesses from
		// that address is refused unchecked.
		got = loginAll(t, e, 20, func(i int) guess {
			if i == 10 {
				return guess{u.Email, pw, attacker}
			}
			return guess{u.Email, "wrong password", attacker}
		})
		if got[429] != 20 {
			t.Fatalf("guesses after the limit: %v, want 20×429", got)
		}
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Header: map[string]string{"X-Forwarded-For": attacker},
			Body: map[string]any{"email": "  " + strings.ToUpper(u.Email), "password": pw}})
		if r.Status != 429 || r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Limit") != "5" || r.Header.Get("RateLimit-Remaining") != "0" {
			t.Fatalf("right password after the limit: %d %v", r.Status, r.Header)
		}
		// The owner, at another address, is not locked out.
		if got := loginAll(t, e, 1, func(int) guess { return guess{u.Email, pw, "192.0.2.44"} }); got[200] != 1 {
			t.Fatalf("owner at another address: %v", got)
		}

		// The right password among the first guesses, from the owner's address.
		v := e.NewUser(t, apptest.UserSpec{Password: pw})
		got = loginAll(t, e, 40, func(i int) guess {
			if i == 17 {
				return guess{v.Email, pw, "198.51.100.250"}
			}
			return guess{v.Email, "wrong password", attacker}
		})
		if got[401] != auth.FailPerAccount || got[200] != 1 || got[429] != 40-1-auth.FailPerAccount {
			t.Fatalf("right password among 40 concurrent guesses: %v", got)
		}

		// The backstop: guesses spread over many addresses, all at once.
		w := e.NewUser(t, apptest.UserSpec{Password: pw})
		got = loginAll(t, e, 80, func(i int) guess {
			return guess{w.Email, "wrong password", fmt.Sprintf("10.%d.%d.1", i/200, i%200)}
		})
		if got[401] != auth.FailPerAccountDay/2 || got[429] != 80-auth.FailPerAccountDay/2 {
			t.Fatalf("80 concurrent guesses from 80 addresses: %v, want %d×401", got, auth.FailPerAccountDay/2)
		}
		if got := loginAll(t, e, 1, func(int) guess { return guess{w.Email, pw, "192.0.2.45"} }); got[429] != 1 {
			t.Fatalf("right password past the backstop without a device cookie: %v", got)
		}

		// Per address: 40 wrong guesses at once on 40 accounts from one address.
		const addr = "203.0.113.9"
		got = loginAll(t, e, 40, func(i int) guess { return guess{fmt.Sprintf("nobody%d@example.test", i), "wrong password", addr} })
		if got[401] != auth.FailPerIP || got[429] != 40-auth.FailPerIP {
			t.Fatalf("40 concurrent guesses from one address: %v, want %d×401 and the rest 429", got, auth.FailPerIP)
		}
		x := e.NewUser(t, apptest.UserSpec{Password: pw})
		if got := loginAll(t, e, 1, func(int) guess { return guess{x.Email, pw, addr} }); got[429] != 1 {
			t.Fatalf("right password from the throttled address: %v", got)
		}
		if got := loginAll(t, e, 1, func(int) guess { return guess{x.Email, pw, "203.0.113.10"} }); got[200] != 1 {
			t.Fatalf("right password from another address: %v", got)
		}
		// An IPv6 client is counted by its /64: walking through it gives no
		// fresh allowance.
		y := e.NewUser(t, apptest.UserSpec{Password: pw})
		got = loginAll(t, e, 10, func(i int) guess { return guess{y.Email, "wrong password", fmt.Sprintf("2001:db8:1:2::%x", i+1)} })
		if got[401] != auth.FailPerAccount || got[429] != 10-auth.FailPerAccount {
			t.Fatalf("10 guesses from one /64: %v", got)
		}
	}, behindProxy)
}

// loginFrom sends one login from addr with the cookie header cookie ("" for none).
func loginFrom(t *testing.T, e *apptest.Env, email, password, addr, cookie string) *apptest.Resp {
	t.Helper()
	h := map[string]string{"X-Forwarded-For": addr}
	if cookie != "" {
		h["Cookie"] = cookie
	}
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Header: h, Body: map[string]any{"email": email, "password": password}})
}

// TestLoginBackstopPerDay: at most FailPerAccountDay failed guesses on one
// account in any 24 hours from all addresses together (NIST SP 800-63B
// §5.2.2), however the guesses are spread over addresses and time.
func TestLoginBackstopPerDay(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		n, failed := 0, 0
		guess := func() int {
			n++
			return loginFrom(t, e, u.Email, "wrong password", fmt.Sprintf("10.1.%d.%d", n/250, n%250+1), "").Status
		}
		// Guess as fast as allowed, for 24 hours (less 20 minutes) in steps of
		// 20 minutes.
		for step := 0; step < 72; step++ {
			if step > 0 {
				e.Advance(t, 20*time.Minute)
			}
			for {
				s := guess()
				if s == 429 {
					break
				}
				if s != 401 {
					t.Fatalf("guess %d: %d", n, s)
				}
				failed++
			}
			if step == 0 && failed != auth.FailPerAccountDay/2 {
				t.Fatalf("%d failures at once, want %d", failed, auth.FailPerAccountDay/2)
			}
		}
		// Within 24 hours: at most FailPerAccountDay; the allowance does come back.
		if failed > auth.FailPerAccountDay || failed < auth.FailPerAccountDay*9/10 {
			t.Fatalf("%d failures in 24 hours, want at most %d (and close to it)", failed, auth.FailPerAccountDay)
		}
		// The owner, at a fresh address and without a device cookie, waits too.
		if r := loginFrom(t, e, u.Email, pw, "192.0.2.1", ""); r.Status != 429 {
			t.Fatalf("owner without a device cookie past the backstop: %d", r.Status)
		}
	}, behindProxy)
}

// deviceCookie is the device cookie a login answer set, as a Cookie header.
func deviceCookie(t *testing.T, r *apptest.Resp) string {
	t.Helper()
	c := cookies(r)[auth.DeviceCookieName]
	if c == nil || c.Value == "" {
		t.Fatalf("no device cookie: %v", r.Header)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge < 364*24*3600 || c.MaxAge > 366*24*3600 {
		t.Fatalf("device cookie attributes: %+v", c)
	}
	return auth.DeviceCookieName + "=" + c.Value
}

// TestLoginDeviceCookie: a browser that signed in to the account before
// gets through the per-address lockout and the backstop with its device
// cookie, on its own, bounded allowance; a forged cookie, an expired one or
// another user's does not.
func TestLoginDeviceCookie(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		other := e.NewUser(t, apptest.UserSpec{Password: pw})
		const home = "192.0.2.10"
		dev := deviceCookie(t, must(t, loginFrom(t, e, u.Email, pw, home, ""), 200))
		otherDev := deviceCookie(t, must(t, loginFrom(t, e, other.Email, pw, home, ""), 200))
		// A wrong password issues no cookie.
		if r := loginFrom(t, e, other.Email, "wrong password", "192.0.2.99", ""); cookies(r)[auth.DeviceCookieName] != nil {
			t.Fatal("a failed login set a device cookie")
		}

		// An attacker at the owner's address, then at many addresses, uses
		// up the per-address allowance and the backstop.
		for range auth.FailPerAccount {
			must(t, loginFrom(t, e, u.Email, "wrong password", home, ""), 401)
		}
		got := loginAll(t, e, 60, func(i int) guess { return guess{u.Email, "wrong password", fmt.Sprintf("10.9.%d.1", i)} })
		if got[401] != auth.FailPerAccountDay/2-auth.FailPerAccount {
			t.Fatalf("spread guesses: %v", got)
		}
		must(t, loginFrom(t, e, u.Email, pw, home, ""), 429)
		must(t, loginFrom(t, e, u.Email, pw, "192.0.2.11", ""), 429)

		// Forged and foreign cookies do not help.
		name, val, _ := strings.Cut(dev, "=")
		parts := strings.Split(val, ".")
		forged := []string{
			name + "=" + other.ID + "." + parts[1] + "." + parts[2] + "." + parts[3], // another user under u's MAC
			name + "=" + parts[0] + "." + parts[1] + "." + parts[2] + "." + strings.Repeat("A", len(parts[3])),
			name + "=" + parts[0] + "." + parts[1] + "." + fmt.Sprint(apptest.Start.Add(-400*24*time.Hour).Unix()) + "." + parts[3],
			name + "=garbage",
			otherDev, // a valid cookie, of another account
		}
		for i, c := range forged {
			if r := loginFrom(t, e, u.Email, pw, home, c); r.Status != 429 {
				t.Fatalf("cookie %d let the owner's password through the lockout: %d", i, r.Status)
			}
		}
		// The owner's browser gets through, and gets a fresh cookie.
		r := must(t, loginFrom(t, e, u.Email, pw, home, dev), 200)
		dev2 := deviceCookie(t, r)
		if dev2 == dev {
			t.Fatal("the device cookie was not renewed")
		}
		// The old cookie still works until it expires: another of the owner's
		// browsers may hold it.
		must(t, loginFrom(t, e, u.Email, pw, "192.0.2.12", dev), 200)

		// A stolen cookie gives its own, bounded allowance.
		for range auth.FailPerDevice {
			must(t, loginFrom(t, e, u.Email, "wrong password", "198.51.100.66", dev2), 401)
		}
		must(t, loginFrom(t, e, u.Email, pw, "198.51.100.66", dev2), 429)
		// … which is not the owner's other browser's.
		must(t, loginFrom(t, e, u.Email, pw, home, dev), 200)
		// The daily bound of a device: over a day no more than FailPerDeviceDay.
		failed := auth.FailPerDevice
		for step := 0; step < 24*4; step++ {
			e.Advance(t, 15*time.Minute)
			for {
				s := loginFrom(t, e, u.Email, "wrong password", "198.51.100.66", dev2).Status
				if s == 429 {
					break
				}
				failed++
			}
		}
		if failed > auth.FailPerDeviceDay+auth.FailPerDeviceDay/2 || failed < auth.FailPerDeviceDay/2 {
			t.Fatalf("%d failures with one device cookie in a day", failed)
		}

		// A device cookie expires after DeviceCookieTTL.
		fresh := deviceCookie(t, must(t, loginFrom(t, e, other.Email, pw, "192.0.2.13", ""), 200))
		e.Advance(t, auth.DeviceCookieTTL+time.Hour)
		for range auth.FailPerAccount {
			must(t, loginFrom(t, e, other.Email, "wrong password", "192.0.2.13", ""), 401)
		}
		must(t, loginFrom(t, e, other.Email, pw, "192.0.2.13", fresh), 429)
	}, behindProxy)
}

// TestLoginThrottleKeysAreBounded: the account is keyed by a hash of the
// normalized address, so a long email does not become a long Redis key.
func TestLoginThrottleKeysAreBounded(t *testing.T) {
	t.Parallel()
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

func (downLimiter) AllowWindow(context.Context, string, cache.Window) (cache.Decision, error) {
	return cache.Decision{}, fmt.Errorf("dial tcp: connection refused")
}

// TestLoginThrottleUnavailable: without the rate-limit store, login fails
// closed with 503 before any password is checked.
func TestLoginThrottleUnavailable(t *testing.T) {
	t.Parallel()
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
