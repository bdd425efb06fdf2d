package app_test

import (
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
	eventually(t, "requests succeed after PostgreSQL thaws", func() bool {
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
