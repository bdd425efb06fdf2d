package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
)

// frozenBound is what a request may take while a dependency is frozen: the
// dependency timeout (HMID_DEPENDENCY_TIMEOUT's default, 2 s, which these
// tests keep) and a second for the rest of the request on a shared machine.
// The request timeout stays at its default (30 s), so an answer within the
// bound can only come from the dependency timeout.
const frozenBound = config.DefaultDependencyTimeout + time.Second

// timedDo is Env.Raw that also reports how long the answer took.
func timedDo(t *testing.T, e *apptest.Env, method, path, tok, body string) (*apptest.Resp, time.Duration) {
	t.Helper()
	hdr := map[string]string{}
	if body != "" {
		hdr["Content-Type"] = "application/json"
	}
	start := time.Now()
	r := e.Raw(t, method, path, tok, strings.NewReader(body), hdr)
	return r, time.Since(start)
}

// wantFast503 asserts a 503 ServiceUnavailable answered within frozenBound.
func wantFast503(t *testing.T, e *apptest.Env, method, path, tok, body string) {
	t.Helper()
	r, took := timedDo(t, e, method, path, tok, body)
	t.Logf("%s %s while frozen: %d in %v", method, path, r.Status, took.Round(time.Millisecond))
	wantUnavailable(t, r, method+" "+path+" with a frozen dependency")
	if took > frozenBound {
		t.Errorf("%s %s took %v with a frozen dependency, want under %v", method, path, took, frozenBound)
	}
}

// wantHealthNames asserts that /health and /readyz answer 503 within
// frozenBound, with status naming the frozen dependency (/readyz leaves the
// real-time channel out) and its service down.
func wantHealthNames(t *testing.T, e *apptest.Env, healthStatus, readyStatus, service string) {
	t.Helper()
	for path, status := range map[string]string{"/health": healthStatus, "/readyz": readyStatus} {
		r, took := timedDo(t, e, "GET", path, "", "")
		t.Logf("GET %s while frozen: %d in %v", path, r.Status, took.Round(time.Millisecond))
		if took > frozenBound {
			t.Errorf("GET %s took %v with a frozen dependency, want under %v", path, took, frozenBound)
		}
		var h struct {
			Status   string                    `json:"status"`
			Services map[string]map[string]any `json:"services"`
		}
		if err := json.Unmarshal(r.Body, &h); err != nil || r.Status != http.StatusServiceUnavailable ||
			h.Status != status || h.Services[service]["status"] != "down" {
			t.Fatalf("GET %s with %s frozen: %d %s; want 503 with status %q", path, service, r.Status, r.Body, status)
		}
	}
}

// eventually calls f until it reports true, for up to 10 s.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFrozenPostgresIsAnsweredWithinTheDependencyTimeout freezes PostgreSQL
// behind a proxy (its connections stay open and swallow every byte, as a
// SIGSTOPped server's or a black-holed network's do) and expects requests,
// more of them at once than the pool has connections, to answer 503 within
// the dependency timeout although the request timeout is 30 s; /health and
// /readyz to name the database; and the service to recover, without a
// restart, once PostgreSQL answers again.
func TestFrozenPostgresIsAnsweredWithinTheDependencyTimeout(t *testing.T) {
	pg := dbtest.Postgres(t)
	px := newFaultProxy(t, hostOf(t, pg))
	e := apptest.New(t, dbtest.Engine{Name: "postgres", URL: px.Via(t, pg)}, withConfig(func(c *config.Config) {
		c.MaxRequestsInFlight = 1000
	}))
	admin := e.Admin(t)
	e.Call(t, "GET", "/v1/users", e.SystemKey, nil, http.StatusOK)
	e.Call(t, "GET", "/health", "", nil, http.StatusOK)

	// The first request that meets the freeze waits for it to be noticed.
	px.Freeze()
	wantFast503(t, e, "GET", "/v1/users", e.SystemKey, "")
	wantFast503(t, e, "GET", "/v1/users/me", admin.Token, "")
	wantFast503(t, e, "POST", "/v1/devices", e.SystemKey, `{"name":"d"}`)
	wantHealthNames(t, e, "database unavailable", "database unavailable", "database")
	px.Thaw()
	recovered(t, e, admin.Token)

	// More requests at once than the pool's 32 connections, the first to
	// meet a second freeze: those waiting for a connection behind the stuck
	// ones are bounded too.
	px.Freeze()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for range 48 {
		wg.Go(func() {
			r, took := timedDo(t, e, "GET", "/v1/roles", e.SystemKey, "")
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, took)
			if r.Status != http.StatusServiceUnavailable {
				t.Errorf("GET /v1/roles at once with a frozen database: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	t.Logf("48 requests at once while frozen: the slowest answered in %v", slowest.Round(time.Millisecond))
	if slowest > frozenBound {
		t.Errorf("48 requests at once with a frozen database: the slowest took %v, want under %v", slowest, frozenBound)
	}
	wantHealthNames(t, e, "database unavailable", "database unavailable", "database")
	px.Thaw()
	recovered(t, e, admin.Token)

	// The probes' own pings are bounded when they are the first to meet
	// the freeze.
	px.Freeze()
	wantHealthNames(t, e, "database unavailable", "database unavailable", "database")
	px.Thaw()
	recovered(t, e, admin.Token)
}

// recovered waits for requests to succeed again after the database thaws,
// then expects reads, a write and the probes to succeed.
func recovered(t *testing.T, e *apptest.Env, tok string) {
	t.Helper()
	eventually(t, "requests succeed after PostgreSQL thaws", func() bool {
		return e.Raw(t, "GET", "/v1/users", e.SystemKey, nil, nil).Status == http.StatusOK
	})
	e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusOK)
	e.Call(t, "POST", "/v1/devices", e.SystemKey, map[string]string{"name": "after"}, http.StatusCreated)
	e.Call(t, "GET", "/health", "", nil, http.StatusOK)
	e.Call(t, "GET", "/readyz", "", nil, http.StatusOK)
}

// TestFrozenRedisIsAnsweredWithinTheDependencyTimeout freezes Redis behind
// a proxy and expects what needs it (sign-in, through its rate limiter) to
// answer 503 within the dependency timeout, what can do without it (a
// session's reads) to go on, /health and /readyz to name Redis, and
// sign-in to work again once Redis answers, on both engines.
func TestFrozenRedisIsAnsweredWithinTheDependencyTimeout(t *testing.T) {
	redisEngines(t, func(t *testing.T, e *apptest.Env, px *faultProxy) {
		user := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		login, _ := json.Marshal(map[string]string{"email": user.Email, "password": user.Password})
		e.Call(t, "GET", "/v1/users/me", user.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/health", "", nil, http.StatusOK)

		px.Freeze()
		wantFast503(t, e, "POST", "/v1/auth/login", "", string(login))
		r, took := timedDo(t, e, "GET", "/v1/users/me", user.Token, "")
		t.Logf("GET /v1/users/me while Redis is frozen: %d in %v", r.Status, took.Round(time.Millisecond))
		if took > frozenBound || (r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable) {
			t.Errorf("GET /v1/users/me with a frozen Redis: %d %s in %v, want an answer under %v", r.Status, r.Body, took, frozenBound)
		}
		wantHealthNames(t, e, "redis and websocket unavailable", "redis unavailable", "redis")

		px.Thaw()
		signedIn := func() bool {
			return e.Raw(t, "POST", "/v1/auth/login", "", bytes.NewReader(login),
				map[string]string{"Content-Type": "application/json"}).Status == http.StatusOK
		}
		eventually(t, "sign-in succeeds after Redis thaws", signedIn)
		e.Call(t, "GET", "/health", "", nil, http.StatusOK)

		// The probes' own pings are bounded when they are the first to
		// meet the freeze.
		px.Freeze()
		wantHealthNames(t, e, "redis and websocket unavailable", "redis unavailable", "redis")
		px.Thaw()
		eventually(t, "sign-in succeeds after Redis thaws again", signedIn)
		e.Call(t, "GET", "/readyz", "", nil, http.StatusOK)
	})
}
