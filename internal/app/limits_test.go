package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
)

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
