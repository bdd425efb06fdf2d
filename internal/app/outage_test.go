package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/faultproxy"
)

// faultProxy is a TCP proxy between hmid and a dependency that can freeze
// (stop forwarding without closing, as a SIGSTOPped server does) and close
// (refuse connections, as a stopped server does).
type faultProxy = faultproxy.Proxy

// newFaultProxy forwards a local port to target until the test ends.
func newFaultProxy(t testing.TB, target string) *faultProxy { return faultproxy.New(t, target) }

// hostOf returns the host:port of a URL.
func hostOf(t testing.TB, rawURL string) string { return faultproxy.HostOf(t, rawURL) }

// wantUnavailable asserts a 503 ServiceUnavailable REST error with Retry-After.
func wantUnavailable(t testing.TB, r *apptest.Resp, what string) {
	t.Helper()
	m := r.JSON()
	if r.Status != http.StatusServiceUnavailable || m["error"] != "ServiceUnavailable" || m["message"] == "" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: %d %s (Retry-After %q), want 503 ServiceUnavailable with Retry-After", what, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
}

func withConfig(f func(*config.Config)) apptest.Option { return apptest.Option(f) }

// TestInFlightCapAnswersFast503 holds the only request slot with a chat
// sync waiting for a bot that stays silent, and expects the next request to
// be refused at once with 503 and Retry-After instead of queueing. (A body
// still arriving holds no slot: TestSlowBodiesHoldNoSlot.)
func TestInFlightCapAnswersFast503(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) {
		c.MaxRequestsInFlight = 1
	}))
	bot := startBot(t, e, e.SystemKey, nil)
	e.Server.Chat.SyncTimeout = 3 * time.Second
	held := make(chan int, 1)
	hold := func() {
		go func() {
			req, _ := http.NewRequest("POST", e.URL+"/v1/chatplatform/sync", nil)
			req.Header.Set("Authorization", "Bearer "+e.SystemKey)
			res, err := e.Client.Do(req)
			if err != nil {
				held <- 0
				return
			}
			res.Body.Close()
			held <- res.StatusCode
		}()
	}
	hold()
	// The sync holds the slot once the bot has its request.
	waitFor(t, "the sync to reach the bot", func() bool {
		select {
		case <-held: // refused or failed before it reached the bot: again
			hold()
		default:
		}
		bot.mu.Lock()
		defer bot.mu.Unlock()
		return len(bot.requests) > 0
	})
	var r *apptest.Resp
	deadline := time.Now().Add(5 * time.Second)
	for {
		start := time.Now()
		r = e.Raw(t, "GET", "/v1", "", nil, nil)
		if took := time.Since(start); r.Status == http.StatusServiceUnavailable && took > 500*time.Millisecond {
			t.Fatalf("the refusal took %v, want it at once", took)
		}
		// A request of the test itself may still hold the slot: ask again.
		if r.Status == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantUnavailable(t, r, "request over the in-flight cap")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After = %q, want 1", r.Header.Get("Retry-After"))
	}
	// Probes are not refused: a busy server is alive.
	if r := e.Raw(t, "GET", "/livez", "", nil, nil); r.Status != http.StatusOK {
		t.Fatalf("/livez while busy: %d %s", r.Status, r.Body)
	}
	// The slot comes back once the held request ends.
	if st := <-held; st != http.StatusServiceUnavailable {
		t.Fatalf("the sync with a silent bot: %d, want 503", st)
	}
	for time.Now().Before(deadline) {
		if r = e.Raw(t, "GET", "/v1", "", nil, nil); r.Status == http.StatusOK {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("after the stuck request ended: %d %s", r.Status, r.Body)
}

// serveReal serves e's hmid through Server.Serve on a port of its own, the
// way cmd/hmid does, and returns its address.
func serveReal(t *testing.T, e *apptest.Env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

// TestSlowBodyIsCutOff trickles a request body a byte at a time and
// expects the server to stop waiting for it after the read timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) {
		c.ReadTimeout = 300 * time.Millisecond
	}))
	conn, err := net.Dial("tcp", serveReal(t, e))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// One byte every 50 ms would take 50 s; the server must not wait for it.
	go func() {
		for range 1000 {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still waited for the trickled body after %v", time.Since(start))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the connection ended after %v, want about the 300ms read timeout", took)
	}
}

// TestStreamsOutliveTheRequestTimeout opens the real-time channel on a
// server whose request timeout is short and expects it to stay open past it.
func TestStreamsOutliveTheRequestTimeout(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) {
		c.RequestTimeout = 300 * time.Millisecond
		c.ReadTimeout = 300 * time.Millisecond
	}))
	c := mustDial(t, e, e.SystemKey)
	time.Sleep(time.Second)
	if m := c.call("ping", "p1", ""); m.Type != "pong" {
		t.Fatalf("after the request timeout the channel answered %+v", m)
	}
}

// TestFrozenPostgresAnswers503 freezes PostgreSQL behind a proxy and
// expects requests to end with 503 within the request timeout, then to
// succeed again once it thaws.
func TestFrozenPostgresAnswers503(t *testing.T) {
	pg := dbtest.Postgres(t)
	px := newFaultProxy(t, hostOf(t, pg))
	e := apptest.New(t, dbtest.Engine{Name: "postgres", URL: px.Via(t, pg)}, withConfig(func(c *config.Config) {
		c.RequestTimeout = time.Second
	}))
	admin := e.Admin(t)
	e.Call(t, "GET", "/v1/users", e.SystemKey, nil, http.StatusOK)

	px.Freeze()
	for _, q := range []struct{ path, tok string }{{"/v1/users", e.SystemKey}, {"/v1/users/me", admin.Token}, {"/v1/roles", e.SystemKey}} {
		start := time.Now()
		r := e.Raw(t, "GET", q.path, q.tok, nil, nil)
		took := time.Since(start)
		wantUnavailable(t, r, "GET "+q.path+" on a frozen database")
		if took > 3*time.Second {
			t.Fatalf("GET %s took %v on a frozen database, want about the 1s request timeout", q.path, took)
		}
	}
	px.Thaw()
	// The frozen server is held as such until its next probe answers,
	// a tick (a twentieth of HMID_DEPENDENCY_TIMEOUT) away.
	waitFor(t, "requests succeed after PostgreSQL thaws", func() bool {
		return e.Raw(t, "GET", "/v1/users", e.SystemKey, nil, nil).Status == http.StatusOK
	})
	e.Call(t, "GET", "/v1/users/me", admin.Token, nil, http.StatusOK)
}

// TestPostgresDownIsAlways503 stops PostgreSQL (the proxy closes) and
// expects every route tried to answer 503, the OAuth endpoints
// temporarily_unavailable, and /health to name the database.
func TestPostgresDownIsAlways503(t *testing.T) {
	pg := dbtest.Postgres(t)
	px := newFaultProxy(t, hostOf(t, pg))
	e := apptest.New(t, dbtest.Engine{Name: "postgres", URL: px.Via(t, pg)}, withConfig(func(c *config.Config) {
		c.RequestTimeout = 2 * time.Second
	}))
	admin := e.Admin(t)
	client := mkClient(t, e, admin.Token, nil)
	e.Call(t, "GET", "/health", "", nil, http.StatusOK)

	px.Close()
	for i := range 3 { // the same route, asked again, gives the same answer
		for _, q := range []struct{ method, path, tok, body string }{
			{"GET", "/v1/users", e.SystemKey, ""},
			{"GET", "/v1/users/me", admin.Token, ""},
			{"GET", "/v1/roles", e.SystemKey, ""},
			{"POST", "/v1/devices", e.SystemKey, `{"name":"d"}`},
			{"POST", "/v1/auth/login", "", `{"email":"` + admin.Email + `","password":"whatever-it-is"}`},
		} {
			r := e.Raw(t, q.method, q.path, q.tok, strings.NewReader(q.body), map[string]string{"Content-Type": "application/json"})
			wantUnavailable(t, r, q.method+" "+q.path+" with PostgreSQL down (round "+string(rune('1'+i))+")")
		}
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client.ID}, "client_secret": {client.Secret}}
		r := e.Raw(t, "POST", "/v1/oauth/token", "", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		oauthErr(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
		r = e.Raw(t, "GET", "/v1/oauth/authorize?"+authzParams(client.ID).Encode(), admin.Token, nil, nil)
		oauthErr(t, r, http.StatusServiceUnavailable, "temporarily_unavailable")
	}
	// GraphQL answers in its own envelope, with REST's kind as the code.
	if g := gqlPost(t, e, "", `{ platforms { slug } }`, nil, http.StatusOK); g.code() != "SERVICE_UNAVAILABLE" {
		t.Fatalf("GraphQL with PostgreSQL down: %+v", g.Errors)
	}
	h := e.Call(t, "GET", "/health", "", nil, http.StatusServiceUnavailable).JSON()
	if h["status"] != "database unavailable" || h["services"].(map[string]any)["database"].(map[string]any)["status"] != "down" {
		t.Fatalf("health with PostgreSQL down: %v", h)
	}
	e.Call(t, "GET", "/readyz", "", nil, http.StatusServiceUnavailable)
	e.Call(t, "GET", "/livez", "", nil, http.StatusOK)
}

// redisEngines are the engines with Redis reached through a fresh fault
// proxy each; it skips without HMID_TEST_REDIS_URL.
func redisEngines(t *testing.T, fn func(t *testing.T, e *apptest.Env, px *faultProxy)) {
	rurl := dbtest.RedisURL()
	if rurl == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		px := newFaultProxy(t, hostOf(t, rurl))
		eng.RedisURL = px.Via(t, rurl)
		fn(t, apptest.New(t, eng), px)
	})
}

// TestRedisDownKeepsSessionsAndKeys takes Redis away and expects session
// tokens and API keys to keep authenticating from the database, revocations
// made meanwhile to hold, login to answer 503 rather than 500, and /health
// to name Redis and the real-time channel that depends on it.
func TestRedisDownKeepsSessionsAndKeys(t *testing.T) {
	redisEngines(t, func(t *testing.T, e *apptest.Env, px *faultProxy) {
		user := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		other, otherID := e.NewSession(t, user.ID)
		key, keyID := e.NewAPIKey(t, user.ID, "users:read")
		revokedKey, revokedKeyID := e.NewAPIKey(t, user.ID, "users:read")
		for _, tok := range []string{user.Token, other, key, revokedKey} {
			e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusOK) // cached while Redis is up
		}

		px.Close()
		for _, tok := range []string{user.Token, other, key, revokedKey} {
			e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusOK)
		}
		e.Call(t, "GET", "/v1/users", e.SystemKey, nil, http.StatusOK)

		// Revocations made while Redis is down take effect at once.
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+otherID, user.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/api-keys/"+revokedKeyID, e.SystemKey, nil, http.StatusNoContent)
		e.Call(t, "GET", "/v1/users/me", other, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", revokedKey, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", user.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK)
		_ = keyID

		body, _ := json.Marshal(map[string]string{"email": user.Email, "password": user.Password})
		r := e.Raw(t, "POST", "/v1/auth/login", "", bytes.NewReader(body), map[string]string{"Content-Type": "application/json"})
		wantUnavailable(t, r, "login with Redis down")

		h := e.Call(t, "GET", "/health", "", nil, http.StatusServiceUnavailable).JSON()
		svc := h["services"].(map[string]any)
		if h["status"] != "redis and websocket unavailable" || svc["redis"].(map[string]any)["status"] != "down" ||
			svc["websocket"].(map[string]any)["status"] != "down" || svc["database"].(map[string]any)["status"] != "up" {
			t.Fatalf("health with Redis down: %v", h)
		}
		e.Call(t, "GET", "/readyz", "", nil, http.StatusServiceUnavailable)
	})
}

// TestFullDiskIs503AndInHealth fills SQLite (its page limit stands in for
// the disk) and expects writes to answer 503, not 500, and /health to say
// that the database's disk is full.
func TestFullDiskIs503AndInHealth(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
	h := e.Call(t, "GET", "/health", "", nil, http.StatusOK).JSON()
	disk := h["services"].(map[string]any)["database"].(map[string]any)["disk"].(map[string]any)
	if disk["status"] != "ok" || disk["freeBytes"].(float64) <= 0 {
		t.Fatalf("health disk = %v", disk)
	}
	ctx := context.Background()
	var pages int
	if err := e.Server.DB.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Server.DB.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	var r *apptest.Resp
	for i := range 500 { // until a write needs a page the database may not have
		body := fmt.Sprintf(`{"name":"device %d %s"}`, i, strings.Repeat("x", 200))
		r = e.Raw(t, "POST", "/v1/devices", e.SystemKey, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
		if r.Status != http.StatusCreated {
			break
		}
	}
	wantUnavailable(t, r, "a write on a full disk")
	h = e.Call(t, "GET", "/health", "", nil, http.StatusServiceUnavailable).JSON()
	disk = h["services"].(map[string]any)["database"].(map[string]any)["disk"].(map[string]any)
	if h["status"] != "database disk full" || disk["status"] != "full" {
		t.Fatalf("health with a full disk: %v", h)
	}
	// Reads go on, so the instance stays ready.
	e.Call(t, "GET", "/readyz", "", nil, http.StatusOK)
	e.Call(t, "GET", "/v1/devices", e.SystemKey, nil, http.StatusOK)
}

// TestSQLiteSyncSetting checks that HMID_SQLITE_SYNC reaches the database
// connections.
func TestSQLiteSyncSetting(t *testing.T) {
	for mode, want := range map[string]int{"": 1, "full": 2} {
		e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) { c.SQLiteSync = mode }))
		var n int
		if err := e.Server.DB.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&n); err != nil || n != want {
			t.Fatalf("HMID_SQLITE_SYNC=%q: PRAGMA synchronous = %d, %v; want %d", mode, n, err, want)
		}
	}
}

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
	waitFor(t, "requests succeed after PostgreSQL thaws", func() bool {
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
		waitFor(t, "sign-in succeeds after Redis thaws", signedIn)
		e.Call(t, "GET", "/health", "", nil, http.StatusOK)

		// The probes' own pings are bounded when they are the first to
		// meet the freeze.
		px.Freeze()
		wantHealthNames(t, e, "redis and websocket unavailable", "redis unavailable", "redis")
		px.Thaw()
		waitFor(t, "sign-in succeeds after Redis thaws again", signedIn)
		e.Call(t, "GET", "/readyz", "", nil, http.StatusOK)
	})
}

// keepAliveConn is one client connection to a real listener, sending
// requests one after another on it, as a keep-alive client does.
type keepAliveConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAliveConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAliveConn{t: t, conn: c, br: bufio.NewReader(c)}
}

// do sends one request (body "" for none) and reads its whole answer; the
// connection must stay open for the next one.
func (k *keepAliveConn) do(method, path, tok, body string) (int, map[string]any) {
	k.t.Helper()
	req := method + " " + path + " HTTP/1.1\r\nHost: hmid\r\n"
	if tok != "" {
		req += "Authorization: Bearer " + tok + "\r\n"
	}
	if body != "" {
		req += "Content-Type: application/json\r\n"
	}
	req += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	_ = k.conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(k.conn, req); err != nil {
		k.t.Fatalf("%s %s: write: %v", method, path, err)
	}
	res, err := http.ReadResponse(k.br, nil)
	if err != nil {
		k.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		k.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if res.Close {
		k.t.Fatalf("%s %s: the server closes the keep-alive connection (%d %s)", method, path, res.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		k.t.Fatalf("%s %s: %d, body %q is not a JSON object", method, path, res.StatusCode, b)
	}
	return res.StatusCode, m
}

// TestLongHandlerKeepsItsConnection: a handler still running when the read
// timeout passes answers in full, and the keep-alive connection it ran on
// serves the next requests. The chat syncs are the real case: they wait for
// the bot, and POST /v1/chatplatform/sync may come without a body. The
// member sync waits past HMID_REQUEST_TIMEOUT too, as its route declares
// (spec 3: a 60-second wait).
func TestLongHandlerKeepsItsConnection(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pause = 700 * time.Millisecond // past both timeouts below
		startBot(t, e, e.SystemKey, func(topic string, payload json.RawMessage) any {
			time.Sleep(pause)
			return goodAnswer(topic, payload)
		})
		k := dialKeepAlive(t, serveReal(t, e))
		sys := e.SystemKey
		gid := sampleGuild().GuildID

		for _, body := range []string{"", `{"guild_id":"` + gid + `"}`} {
			start := time.Now()
			st, m := k.do("POST", "/v1/chatplatform/sync", sys, body)
			if st != http.StatusOK || m["success"] != true || m["guilds_synced"] != 1.0 {
				t.Fatalf("sync with body %q: %d %v", body, st, m)
			}
			if took := time.Since(start); took < pause {
				t.Fatalf("sync answered after %v, before the bot did", took)
			}
			if st, m := k.do("GET", "/v1/chatplatform/guilds", sys, ""); st != http.StatusOK || len(m["data"].([]any)) != 1 {
				t.Fatalf("next request on the connection: %d %v", st, m)
			}
		}
		// The member sync outlives the 300 ms request timeout: its route has
		// the bot's wait on top.
		if st, m := k.do("POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", sys, ""); st != http.StatusOK || m["success"] != true || m["members_synced"] != 2.0 {
			t.Fatalf("member sync: %d %v", st, m)
		}
		// A write after the long requests, on the same connection, is saved.
		if st, m := k.do("PUT", "/v1/chatplatform/settings", sys, `{"default_language":"de"}`); st != http.StatusOK || m["success"] != true {
			t.Fatalf("settings after the syncs: %d %v", st, m)
		}
		if st, m := k.do("GET", "/v1/chatplatform/settings", sys, ""); st != http.StatusOK || m["default_language"] != "de" {
			t.Fatalf("settings read back: %d %v", st, m)
		}
	}, withConfig(func(c *config.Config) {
		c.ReadTimeout = 200 * time.Millisecond
		c.RequestTimeout = 300 * time.Millisecond
	}))
}

// dripBody opens a connection and sends a login's headers and then its
// body a byte at a time, every gap, until the server closes the connection
// or stop is closed. It returns the status the server answered (0 for none).
func dripBody(addr string, gap time.Duration, stop <-chan struct{}) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	const head = "POST /v1/auth/login HTTP/1.1\r\nHost: hmid\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{"
	if _, err := io.WriteString(c, head); err != nil {
		return 0
	}
	status := make(chan int, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			status <- 0
			return
		}
		res.Body.Close()
		status <- res.StatusCode
	}()
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for {
		select {
		case st := <-status:
			return st
		case <-stop:
			return 0
		case <-tick.C:
			if _, err := io.WriteString(c, " "); err != nil {
				return <-status
			}
		}
	}
}

// TestSlowBodiesHoldNoSlot: hundreds of unauthenticated clients dripping
// request bodies, many more than HMID_MAX_REQUESTS_IN_FLIGHT, next to normal
// clients. The normal requests, /health included, are answered, since a
// body being received holds no in-flight slot; the drippers are cut off
// with 408 when the read timeout passes.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	const drippers = 300
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) {
		c.MaxRequestsInFlight = 16
		c.ReadTimeout = 3 * time.Second
	}))
	addr := serveReal(t, e)
	stop := make(chan struct{})
	statuses := make(chan int, drippers)
	var wg sync.WaitGroup
	for range drippers {
		wg.Go(func() { statuses <- dripBody(addr, 100*time.Millisecond, stop) })
	}
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	// Let the drippers connect and start.
	time.Sleep(500 * time.Millisecond)

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path, tok, body string) int {
		method := "GET"
		var rd io.Reader
		if body != "" {
			method, rd = "POST", strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, "http://"+addr+path, rd)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s next to %d slow bodies: %v", method, path, drippers, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	deadline := time.Now().Add(2 * time.Second) // within the drippers' read timeout
	n := 0
	for n == 0 || time.Now().Before(deadline) {
		for _, q := range []struct {
			path, tok, body string
			want            int
		}{
			{"/health", "", "", http.StatusOK},
			{"/v1", "", "", http.StatusOK},
			{"/v1/users?limit=1", e.SystemKey, "", http.StatusOK},
			{"/v1/graphql", "", `{"query":"{ platforms { slug } }"}`, http.StatusOK},
		} {
			if st := get(q.path, q.tok, q.body); st != q.want {
				t.Fatalf("%s next to %d slow bodies: %d, want %d", q.path, drippers, st, q.want)
			}
			n++
		}
	}
	// The drippers are answered 408 once their read timeout passes.
	timedOut := 0
	for range drippers {
		select {
		case st := <-statuses:
			if st == http.StatusRequestTimeout {
				timedOut++
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of %d slow bodies still open 15 s after the read timeout", drippers-timedOut, drippers)
		}
	}
	if timedOut < drippers*9/10 {
		t.Fatalf("%d of %d slow bodies were answered 408", timedOut, drippers)
	}
	t.Logf("%d normal requests answered next to %d slow bodies", n, drippers)
}

// TestIdleConnectionsMakeRoom: at HMID_MAX_CONNECTIONS, a new client is
// served at once, since the keep-alive connection idle longest is closed
// to make room for it, rather than waiting for idle connections to time out.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, withConfig(func(c *config.Config) {
		c.MaxConnections = 2
	}))
	addr := serveReal(t, e)
	first, second := dialKeepAlive(t, addr), dialKeepAlive(t, addr)
	for _, k := range []*keepAliveConn{first, second} {
		if st, m := k.do("GET", "/v1", "", ""); st != http.StatusOK {
			t.Fatalf("GET /v1: %d %v", st, m)
		}
		time.Sleep(50 * time.Millisecond) // first is idle longer
	}
	start := time.Now()
	third := dialKeepAlive(t, addr)
	if st, m := third.do("GET", "/health", "", ""); st != http.StatusOK {
		t.Fatalf("GET /health at the connection cap: %d %v", st, m)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a new client at the connection cap waited %v", took)
	}
	// The idlest connection was the one closed; the other still serves.
	_ = first.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := first.br.ReadByte(); err != io.EOF {
		t.Fatalf("the idlest connection: read %v %v, want it closed", n, err)
	}
	if st, m := second.do("GET", "/v1", "", ""); st != http.StatusOK {
		t.Fatalf("the other idle connection: %d %v", st, m)
	}
}
