package app_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/events"
	"hmid/internal/realtime"
)

// wsClient is a test client of the real-time channel.
type wsClient struct {
	t  testing.TB
	ws *websocket.Conn
}

func wsURL(e *apptest.Env) string { return "ws" + strings.TrimPrefix(e.URL, "http") + "/v1/ws" }

// dialWS connects with a bearer token ("" for none) and an optional query.
func dialWS(t testing.TB, e *apptest.Env, tok, query string) (*wsClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	ws, resp, err := websocket.Dial(ctx, wsURL(e)+query, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(1 << 22)
	c := &wsClient{t: t, ws: ws}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c, resp, nil
}

func mustDial(t testing.TB, e *apptest.Env, tok string) *wsClient {
	t.Helper()
	c, _, err := dialWS(t, e, tok, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

func (c *wsClient) send(m realtime.Message) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatalf("ws write: %v", err)
	}
}

func (c *wsClient) read() realtime.Message {
	c.t.Helper()
	m, err := c.tryRead(5 * time.Second)
	if err != nil {
		c.t.Fatalf("ws read: %v", err)
	}
	return m
}

func (c *wsClient) tryRead(d time.Duration) (realtime.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var m realtime.Message
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return m, err
	}
	err = json.Unmarshal(b, &m)
	return m, err
}

// call sends a message and returns the next one.
func (c *wsClient) call(typ, id, topic string) realtime.Message {
	c.t.Helper()
	c.send(realtime.Message{Type: typ, ID: id, Topic: topic})
	return c.read()
}

func (c *wsClient) mustAck(typ, id, topic string) {
	c.t.Helper()
	if m := c.call(typ, id, topic); m.Type != "ack" || m.ID != id {
		c.t.Fatalf("%s %s: got %+v (%s)", typ, topic, m, m.Payload)
	}
}

func errKind(t testing.TB, m realtime.Message) string {
	t.Helper()
	if m.Type != "error" {
		t.Fatalf("want an error, got %+v", m)
	}
	var p realtime.ErrorPayload
	if err := json.Unmarshal(m.Payload, &p); err != nil || p.Message == "" {
		t.Fatalf("error payload %s", m.Payload)
	}
	return p.Error
}

// waitFor polls cond until it holds (events cross goroutines and sockets).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWSAuthentication(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/ws", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/ws", "hm_st_bogus", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/ws?ticket=hm_wt_nope", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/ws", u.Token, nil, http.StatusBadRequest) // not an upgrade
		// An upgrade without Sec-WebSocket-Key is refused in the API's error shape.
		req, _ := http.NewRequest("GET", e.URL+"/v1/ws", nil)
		req.Header.Set("Authorization", "Bearer "+u.Token)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error, Message string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || body.Error != "BadRequest" || body.Message == "" {
			t.Fatalf("upgrade without a key: %d %+v", resp.StatusCode, body)
		}
		// Another version is refused with the one spoken (RFC 6455 §4.4).
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Version", "8")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Sec-WebSocket-Version") != "13" {
			t.Fatalf("version 8: %d, Sec-WebSocket-Version %q", resp.StatusCode, resp.Header.Get("Sec-WebSocket-Version"))
		}
		if _, resp, err := dialWS(t, e, "", ""); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dial without token: %v %v", resp, err)
		}
		c := mustDial(t, e, u.Token)
		if m := c.call("ping", "p1", ""); m.Type != "pong" || m.ID != "p1" {
			t.Fatalf("ping: %+v", m)
		}
		if k := errKind(t, c.call("frobnicate", "x", "")); k != "BadRequest" {
			t.Fatalf("unknown type: %s", k)
		}
	})
}

func TestWSTicket(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/ws/ticket", "", nil, http.StatusUnauthorized)
		var tk realtime.Ticket
		e.Call(t, "POST", "/v1/ws/ticket", u.Token, nil, http.StatusCreated).Decode(t, &tk)
		if !strings.HasPrefix(tk.Ticket, "hm_wt_") || tk.ExpiresIn != 60 {
			t.Fatalf("ticket %+v", tk)
		}
		c, _, err := dialWS(t, e, "", "?ticket="+tk.Ticket)
		if err != nil {
			t.Fatalf("dial with ticket: %v", err)
		}
		c.mustAck("subscribe", "1", "audit.me")
		// Single use.
		if _, resp, err := dialWS(t, e, "", "?ticket="+tk.Ticket); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("reused ticket: %v", err)
		}
		// Tickets expire after 60 seconds.
		var old realtime.Ticket
		e.Call(t, "POST", "/v1/ws/ticket", u.Token, nil, http.StatusCreated).Decode(t, &old)
		e.Clock.Advance(61 * time.Second)
		if _, resp, err := dialWS(t, e, "", "?ticket="+old.Ticket); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("expired ticket: %v", err)
		}
		// The ticket carries the caller's identity: audit.me is theirs.
		if _, err := e.Server.Audit.Record(context.Background(), e.Server.DB, audit.Event{UserID: u.ID, EventType: audit.Login}); err != nil {
			t.Fatal(err)
		}
		if m := c.read(); m.Type != "event" || m.Topic != "audit.me" || !strings.Contains(string(m.Payload), `"login"`) {
			t.Fatalf("audit event %+v %s", m, m.Payload)
		}
	})
}

func TestWSSubscriptionsAndEvents(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		reader, _ := e.NewAPIKey(t, "", "gps:read")

		plain := mustDial(t, e, u.Token)
		if k := errKind(t, plain.call("subscribe", "1", "gps.device.d1")); k != "Forbidden" {
			t.Fatalf("gps without permission: %s", k)
		}
		if k := errKind(t, plain.call("subscribe", "2", "trips.t1")); k != "Forbidden" {
			t.Fatalf("trips without permission: %s", k)
		}
		if k := errKind(t, plain.call("subscribe", "3", "weather.today")); k != "NotFound" {
			t.Fatalf("unknown topic: %s", k)
		}
		if k := errKind(t, plain.call("subscribe", "4", "gps.device.a b")); k != "NotFound" {
			t.Fatalf("bad id: %s", k)
		}
		if k := errKind(t, plain.call("subscribe", "", "audit.me")); k != "BadRequest" {
			t.Fatalf("no id: %s", k)
		}
		plain.mustAck("subscribe", "5", "audit.me")

		a := mustDial(t, e, admin.Token)
		a.mustAck("subscribe", "1", "gps.device.d1")
		a.mustAck("subscribe", "2", "trips.t1")
		a.mustAck("subscribe", "3", "gps.device.d1") // idempotent
		k := mustDial(t, e, reader)
		k.mustAck("subscribe", "1", "gps.device.d1")
		if kd := errKind(t, k.call("subscribe", "2", "audit.me")); kd != "Forbidden" {
			t.Fatalf("ownerless key audit.me: %s", kd)
		}

		h := e.Call(t, "GET", "/health", "", nil, http.StatusOK).JSON()["services"].(map[string]any)["websocket"].(map[string]any)
		if h["connections"] != 3.0 || h["subscriptions"] != 4.0 {
			t.Fatalf("health websocket %v", h)
		}

		events.Publish(ctx, e.Server.Events, events.GPSDevice("d2"), map[string]any{"n": 0}) // nobody listens
		events.Publish(ctx, e.Server.Events, events.GPSDevice("d1"), map[string]any{"latitude": 52.5, "n": 1})
		for _, c := range []*wsClient{a, k} {
			m := c.read()
			var p map[string]any
			_ = json.Unmarshal(m.Payload, &p)
			if m.Type != "event" || m.Topic != "gps.device.d1" || p["n"] != 1.0 || p["latitude"] != 52.5 {
				t.Fatalf("event %+v %s", m, m.Payload)
			}
		}
		events.Publish(ctx, e.Server.Events, events.Trip("t1"), map[string]any{"status": "active"})
		if m := a.read(); m.Topic != "trips.t1" || !strings.Contains(string(m.Payload), "active") {
			t.Fatalf("trip event %+v", m)
		}
		a.mustAck("unsubscribe", "9", "gps.device.d1")
		events.Publish(ctx, e.Server.Events, events.GPSDevice("d1"), map[string]any{"n": 2})
		if m := a.call("ping", "p", ""); m.Type != "pong" {
			t.Fatalf("after unsubscribe the next message should be the pong, got %+v", m)
		}
		// The plain user got nothing but answers.
		if m := plain.call("ping", "p", ""); m.Type != "pong" {
			t.Fatalf("plain user received %+v", m)
		}

		_ = a.ws.Close(websocket.StatusNormalClosure, "")
		waitFor(t, "counts after close", func() bool {
			c, s := e.Server.Hub.Counts()
			return c == 2 && s == 2
		})
	})
}

func TestWSSlowConsumerDropped(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Server.Hub.Tune(4, 0)
		admin := e.Admin(t)
		slow := dialSmallBuffer(t, e, admin.Token)
		slow.mustAck("subscribe", "1", "gps.device.slow")
		fast := mustDial(t, e, admin.Token)
		fast.mustAck("subscribe", "1", "gps.device.fast")
		big := strings.Repeat("x", 64<<10)
		start := time.Now()
		n := 0
		for i := 0; i < 4000; i++ {
			n++
			e.Server.Events.Publish(context.Background(), "gps.device.slow", map[string]any{"pad": big})
			if c, _ := e.Server.Hub.Counts(); c == 1 {
				break
			}
		}
		if c, _ := e.Server.Hub.Counts(); c != 1 {
			waitFor(t, "slow consumer dropped", func() bool { c, _ := e.Server.Hub.Counts(); return c == 1 })
		}
		t.Logf("dropped after %d events in %v", n, time.Since(start))
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("publishing took %v: publishers must not wait for slow consumers", d)
		}
		// The slow client finds its connection closed once it reads what got through.
		var err error
		got := 0
		for i := 0; i < 10000 && err == nil; i++ {
			_, err = slow.tryRead(5 * time.Second)
			got++
		}
		t.Logf("slow client read %d messages before %v", got, err)
		if err == nil {
			t.Fatal("slow consumer still connected")
		}
		// Others are unaffected.
		e.Server.Events.Publish(context.Background(), "gps.device.fast", map[string]any{"ok": true})
		if m := fast.read(); m.Topic != "gps.device.fast" {
			t.Fatalf("fast consumer: %+v", m)
		}
	})
}

// dialSmallBuffer connects with a tiny socket receive buffer (which also
// turns off the kernel's autotuning), so a client that stops reading fills the
// server's send path after a few messages.
func dialSmallBuffer(t *testing.T, e *apptest.Env, tok string) *wsClient {
	t.Helper()
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}},
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(1 << 22)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &wsClient{t: t, ws: ws}
}

func TestWSRevokedCredentialDropped(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Server.Hub.Tune(0, 20*time.Millisecond)
		u := e.NewUser(t, apptest.UserSpec{})
		c := mustDial(t, e, u.Token)
		c.mustAck("subscribe", "1", "audit.me")
		ctx := context.Background()
		if _, err := e.Server.DB.ExecContext(ctx, `UPDATE sessions SET revoked_at = $1 WHERE id = $2`, db.TS(e.Clock.Now()), u.SessionID); err != nil {
			t.Fatal(err)
		}
		if err := e.Server.Epoch.Bump(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.tryRead(10 * time.Second); err == nil {
			t.Fatal("connection of a revoked session stayed open")
		}
		waitFor(t, "connection removed", func() bool { n, _ := e.Server.Hub.Counts(); return n == 0 })
	})
}

func TestWSUnansweredPingsDrop(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		live := mustDial(t, e, u.Token)
		mute := mustDial(t, e, u.Token) // never reads, so never answers a ping
		live.mustAck("subscribe", "1", "audit.me")
		e.Server.Hub.Tune(0, 30*time.Millisecond)
		// The reading client answers pings and stays; the mute one is dropped.
		go func() {
			for {
				if _, err := live.tryRead(time.Minute); err != nil {
					return
				}
			}
		}()
		waitFor(t, "mute client dropped", func() bool { n, _ := e.Server.Hub.Counts(); return n == 1 })
		if _, subs := e.Server.Hub.Counts(); subs != 1 {
			t.Fatal("the subscribed, reading client was dropped instead of the mute one")
		}
		_ = mute
	})
}

// TestWSAcrossInstances runs two instances on one PostgreSQL and Redis: a
// client on A receives an event published on B.
func TestWSAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := apptest.NewRedisPair(t)
	admin := a.Admin(t)
	c := mustDial(t, a, admin.Token)
	c.mustAck("subscribe", "1", "gps.device.shared")
	b.Server.Events.Publish(context.Background(), events.GPSDevice("shared"), map[string]any{"from": "b"})
	if m := c.read(); m.Topic != "gps.device.shared" || !strings.Contains(string(m.Payload), `"b"`) {
		t.Fatalf("cross-instance event %+v", m)
	}
	// A's own events reach its clients once (no echo through Redis).
	a.Server.Events.Publish(context.Background(), events.GPSDevice("shared"), map[string]any{"from": "a"})
	if m := c.read(); !strings.Contains(string(m.Payload), `"a"`) {
		t.Fatalf("local event %+v", m)
	}
	if m := c.call("ping", "p", ""); m.Type != "pong" {
		t.Fatalf("echoed event %+v", m)
	}
}

// TestWSProtocol holds the server to RFC 6455 where the library leaves it to
// the application: pings are answered, a close is echoed, a fragmented
// message counts as one, and a message too big or not UTF-8 closes the
// connection with the code that says why (§7.4.1).
func TestWSProtocol(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		c := mustDial(t, e, u.Token)
		// The client's Ping returns once the server's pong arrives, which
		// needs a reader running.
		go func() {
			for {
				if _, _, err := c.ws.Read(ctx); err != nil {
					return
				}
			}
		}()
		if err := c.ws.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		// Close returns nil only when the server echoes the close frame.
		if err := c.ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("close handshake: %v", err)
		}

		frag := mustDial(t, e, u.Token)
		w, err := frag.ws.Writer(ctx, websocket.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{`{"type":"ping",`, `"id":"f1"}`} {
			if _, err := w.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if m := frag.read(); m.Type != "pong" || m.ID != "f1" {
			t.Fatalf("fragmented ping: %+v", m)
		}

		closedWith := func(c *wsClient) websocket.StatusCode {
			t.Helper()
			for {
				if _, _, err := c.ws.Read(ctx); err != nil {
					return websocket.CloseStatus(err)
				}
			}
		}
		big := mustDial(t, e, u.Token)
		// The server may close before the whole message is sent: the write's own result does not matter.
		_ = big.ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":"`+strings.Repeat("x", 70<<10)+`"}`))
		if code := closedWith(big); code != websocket.StatusMessageTooBig {
			t.Fatalf("a 70 KiB message closed with %d, want 1009", code)
		}
		bad := mustDial(t, e, u.Token)
		if err := bad.ws.Write(ctx, websocket.MessageText, []byte("{\"type\":\"\xff\"}")); err != nil {
			t.Fatal(err)
		}
		if code := closedWith(bad); code != websocket.StatusInvalidFramePayloadData {
			t.Fatalf("invalid UTF-8 closed with %d, want 1007", code)
		}
		waitFor(t, "every connection removed", func() bool { n, _ := e.Server.Hub.Counts(); return n == 1 })
	})
}
