package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/token"
)

// Message is one JSON message of the real-time channel, in either direction.
type Message struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Topic   string          `json:"topic,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// ErrorPayload is the payload of an error message, shaped like a REST error.
type ErrorPayload struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

type topicError struct{ kind, msg string }

func (e *topicError) Error() string { return e.msg }

func errForbidden(msg string) error { return &topicError{kind: "Forbidden", msg: msg} }
func errBadTopic(t string) error {
	return &topicError{kind: "NotFound", msg: fmt.Sprintf("unknown topic %q: use gps.device.<device_id>, trips.<trip_id> or audit.me", t)}
}

// conn is one live WebSocket connection. Frames are written at once when
// the socket takes them; a backlog, and a goroutine writing it, exist only
// while a socket is full, so an idle connection costs its reader alone.
type conn struct {
	hub    *Hub
	nc     net.Conn
	raw    syscall.RawConn // nc's descriptor, for writes that never wait (nil: none)
	br     *bufio.Reader   // buffered reads of nc (may hold bytes sent right after the handshake)
	rd     *wsutil.Reader  // owned by the reader goroutine
	worker int             // fan-out worker of this connection's events, fixed so their order holds
	token  string          // re-resolved periodically so revoked credentials lose the channel
	p      *authn.Principal
	pmu    sync.Mutex // guards p

	subs map[string]string // guarded by hub.mu: internal topic → shown topic

	// awaitingPong is set when the keep-alive pings and cleared by the pong.
	awaitingPong atomic.Bool

	qmu     sync.Mutex // guards the fields below
	limit   int
	queue   [][]byte // frames (or their unwritten rest) waiting for the writer
	spare   [][]byte // the previous batch's backing array, reused
	writing bool     // a writer goroutine owns the socket
	closed  bool

	once sync.Once
}

// send writes frame, or queues it behind earlier ones, without ever
// blocking: while nothing waits, it writes what the socket takes at once,
// and what is left, with everything after it, goes to a writer goroutine.
// false means the queue is full: the caller drops a slow consumer.
func (c *conn) send(frame []byte) bool {
	c.qmu.Lock()
	if c.closed {
		c.qmu.Unlock()
		return true // closing anyway
	}
	if c.writing {
		if len(c.queue) >= c.limit {
			c.qmu.Unlock()
			return false
		}
		c.queue = append(c.queue, frame)
		c.qmu.Unlock()
		return true
	}
	n, err := tryWrite(c.raw, frame)
	if err == nil && n < len(frame) {
		c.queue = append(c.queue, frame[n:])
		c.writing = true
		go c.flush()
	}
	c.qmu.Unlock()
	if err != nil {
		c.drop(0, "write failed")
	}
	return true
}

// flush writes the backlog until it is empty, all queued frames in one
// (vectored) write at a time.
//
// The writes have no deadline: arming one per write costs a timer update
// on each socket of a fan-out. A writer stuck on a client that takes
// nothing ends all the same: its queue overflows, or the keep-alive's ping,
// queued behind it, goes unanswered for an interval; either drops the
// connection, and closing the socket fails the blocked write.
func (c *conn) flush() {
	for {
		c.qmu.Lock()
		if len(c.queue) == 0 || c.closed {
			c.writing = false
			c.qmu.Unlock()
			return
		}
		batch := c.queue
		c.queue = c.spare[:0]
		c.qmu.Unlock()
		bufs := net.Buffers(batch)
		_, err := bufs.WriteTo(c.nc)
		clear(batch)
		if err != nil {
			c.qmu.Lock()
			c.writing = false
			c.qmu.Unlock()
			c.drop(0, "write failed")
			return
		}
		c.qmu.Lock()
		c.spare = batch[:0]
		c.qmu.Unlock()
	}
}

// drop closes the connection without waiting (slow consumers, shutdown,
// revoked credentials). With a code, a close frame saying why is sent
// first (RFC 6455 §5.5.1), if the socket takes it at once.
func (c *conn) drop(code ws.StatusCode, reason string) {
	c.shut(code, reason)
	_ = c.nc.Close()
}

// shut is drop without closing the socket: the hub forgets the connection,
// nothing more is written but the close frame, and reading may go on.
func (c *conn) shut(code ws.StatusCode, reason string) {
	c.once.Do(func() {
		c.qmu.Lock()
		if code != 0 && !c.writing {
			_, _ = tryWrite(c.raw, closeFrame(code, reason))
		}
		c.closed = true
		c.queue, c.spare = nil, nil
		c.qmu.Unlock()
		c.hub.remove(c) // counts and fan-out forget it at once
	})
}

// lingerTime bounds how long a refused client's remaining input is read.
const lingerTime = time.Second

// refuse ends a connection whose client broke the protocol: it sends the
// close frame and reads what the client still sends until it closes, for at
// most lingerTime. Closing with unread input would make the kernel reset
// the connection, and the client would lose the close frame and its code.
func (c *conn) refuse(code ws.StatusCode, reason string) {
	c.shut(code, reason)
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, c.br)
}

func (c *conn) principal() *authn.Principal {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.p
}

// ServeWS serves GET /v1/ws: authenticates with the Authorization header or a
// ticket, upgrades to a WebSocket (RFC 6455) and runs the connection.
func (h *Hub) ServeWS(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var tok string
	if header := r.Header.Get("Authorization"); header != "" {
		t, ok := authn.ParseBearer(header)
		if !ok {
			httpx.Error(w, r, apperr.Unauthorizedf("malformed Authorization header: expected Bearer <token>"))
			return
		}
		tok = t
	} else if ticket := r.URL.Query().Get("ticket"); ticket != "" {
		t, err := h.redeemTicket(ctx, ticket)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		tok = t
	} else {
		httpx.Error(w, r, apperr.Unauthorizedf("authentication required: send Authorization: Bearer <token> or ?ticket= from POST /v1/ws/ticket"))
		return
	}
	p, err := h.cfg.Resolver.Resolve(ctx, tok)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if p.Kind == authn.KindOAuth {
		httpx.Error(w, r, apperr.Forbiddenf("OAuth access tokens are not accepted on the real-time channel; use a session token or an API key"))
		return
	}
	if err := checkHandshake(w, r); err != nil {
		httpx.Error(w, r, err)
		return
	}
	nc, rw, _, err := ws.HTTPUpgrader{}.Upgrade(r, w)
	if err != nil {
		return // the upgrader has answered
	}
	_ = nc.SetDeadline(time.Time{}) // none of the HTTP server's timeouts apply any more
	// A connection without a descriptor (TLS ended in process, say) writes
	// every frame from its writer goroutine: tryWrite takes a nil raw.
	var raw syscall.RawConn
	if sc, ok := nc.(syscall.Conn); ok {
		raw, _ = sc.SyscallConn()
	}
	h.mu.RLock()
	limit := h.cfg.SendQueue
	h.mu.RUnlock()
	// The hijacked writer is left behind: frames go to the socket directly.
	c := &conn{hub: h, nc: nc, raw: raw, br: rw.Reader, token: tok, p: p, limit: limit, subs: map[string]string{},
		worker: h.fan.assign()}
	h.add(c)
	// The connection is hijacked: the reader runs on a fresh goroutine, whose
	// stack stays small, instead of the HTTP server's deep one.
	go func() {
		defer h.remove(c)
		c.readLoop(h.ctx)
		c.drop(0, "connection closed")
	}()
}

// recheck resolves the credential again and drops subscriptions the principal
// may no longer read; false means the credential is gone.
func (c *conn) recheck() bool {
	h := c.hub
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	p, err := h.cfg.Resolver.Resolve(ctx, c.token)
	if err != nil {
		return !apperr.Is(err, apperr.Unauthorized) // keep the connection through an outage
	}
	c.pmu.Lock()
	c.p = p
	c.pmu.Unlock()
	h.mu.Lock()
	for internal, shown := range c.subs {
		if got, err := resolveTopic(p, shown); err != nil || got != internal {
			h.unsubscribeLocked(c, internal)
		}
	}
	h.mu.Unlock()
	return true
}

// readLoop reads and handles client messages until the connection ends.
// Control frames are answered here, also between the fragments of a message.
func (c *conn) readLoop(ctx context.Context) {
	c.rd = &wsutil.Reader{Source: c.br, State: ws.StateServerSide, CheckUTF8: true,
		MaxMessageSize: maxClientMessageBytes, OnIntermediate: c.control}
	for {
		hdr, err := c.rd.NextFrame()
		if err == nil && hdr.OpCode.IsControl() {
			if err := c.control(hdr, c.rd); err != nil {
				return
			}
			continue
		}
		var data []byte
		if err == nil {
			data, err = io.ReadAll(c.rd)
		}
		if err != nil {
			if code, reason := closeCodeFor(err); code != 0 {
				c.refuse(code, reason)
			}
			return
		}
		if hdr.OpCode != ws.OpText {
			c.reply(Message{Type: "error", Payload: errPayload("BadRequest", "messages are JSON text frames")})
			continue
		}
		var m Message
		if err := json.Unmarshal(data, &m); err != nil {
			c.reply(Message{Type: "error", Payload: errPayload("BadRequest", "malformed JSON message")})
			continue
		}
		c.handle(ctx, m)
	}
}

// errClosing ends the read loop after a close frame.
var errClosing = errors.New("realtime: connection closing")

// control answers a control frame (RFC 6455 §5.5): a ping with a pong, a
// close with a close echoing its code; a pong ends the keep-alive's wait.
func (c *conn) control(h ws.Header, r io.Reader) error {
	payload, err := io.ReadAll(r) // at most 125 bytes: the reader checked the header
	if err != nil {
		return err
	}
	switch h.OpCode {
	case ws.OpPing:
		if !c.send(ws.MustCompileFrame(ws.NewPongFrame(payload))) {
			c.drop(ws.StatusPolicyViolation, "slow consumer: send queue full")
			return errClosing
		}
	case ws.OpPong:
		c.awaitingPong.Store(false)
	case ws.OpClose:
		code, reason := ws.ParseCloseFrameData(payload)
		if err := ws.CheckCloseFrameData(code, reason); err != nil && len(payload) > 0 {
			c.refuse(ws.StatusProtocolError, err.Error())
			return errClosing
		}
		if code == 0 {
			code = ws.StatusNormalClosure
		}
		c.drop(code, "")
		return errClosing
	}
	return nil
}

func errPayload(kind, msg string) json.RawMessage {
	b, _ := json.Marshal(ErrorPayload{Error: kind, Message: msg})
	return b
}

// reply queues an answer; a client that cannot take its own answers is dropped.
func (c *conn) reply(m Message) {
	b, _ := json.Marshal(m)
	if !c.send(textFrame(b)) {
		c.drop(ws.StatusPolicyViolation, "slow consumer: send queue full")
	}
}

func (c *conn) handle(ctx context.Context, m Message) {
	h := c.hub
	switch m.Type {
	case "subscribe", "unsubscribe":
		if m.ID == "" {
			c.reply(Message{Type: "error", Payload: errPayload("BadRequest", m.Type+" needs an id to acknowledge")})
			return
		}
		internal, err := resolveTopic(c.principal(), m.Topic)
		if err != nil {
			var te *topicError
			errors.As(err, &te)
			c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload(te.kind, te.msg)})
			return
		}
		if m.Type == "subscribe" {
			if err := h.subscribe(c, internal, m.Topic); err != nil {
				c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload("BadRequest", err.Error())})
				return
			}
		} else {
			h.unsubscribe(c, internal)
		}
		c.reply(Message{Type: "ack", ID: m.ID})
	case "ping":
		c.reply(Message{Type: "pong", ID: m.ID})
	case "hello":
		var body struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m.Payload, &body)
		if body.Role != "bot" {
			c.reply(Message{Type: "ack", ID: m.ID})
			return
		}
		if !IsBot(c.principal()) {
			c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload("Forbidden", "a bot connects with a system API key or an API key holding chatplatform:*")})
			return
		}
		c.rd.MaxMessageSize = maxBotMessageBytes // bot answers carry whole guilds
		if err := h.addBot(ctx, c); err != nil {
			h.cfg.Log.Error("realtime: register bot", slog.String("error", err.Error()))
			c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload("ServiceUnavailable", "the bot could not be registered")})
			return
		}
		c.reply(Message{Type: "ack", ID: m.ID})
	case "response":
		if !c.isBot() {
			c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload("Forbidden", "only a bot that said hello answers requests")})
			return
		}
		h.botResponse(m.ID, m.Payload)
	default:
		c.reply(Message{Type: "error", ID: m.ID, Payload: errPayload("BadRequest", fmt.Sprintf("unknown message type %q", m.Type))})
	}
}

func (c *conn) isBot() bool {
	c.hub.mu.RLock()
	defer c.hub.mu.RUnlock()
	for _, b := range c.hub.bots {
		if b == c {
			return true
		}
	}
	return false
}

// BotPermissions are the chatplatform permissions of spec 3 (Chat platform);
// holding every one of them is holding chatplatform:*. The catalogue has no
// chatplatform:* entry, so a role can give a key only these five.
var BotPermissions = []string{"chatplatform:read", "chatplatform:edit", "chatplatform:sync", "chatplatform:delete", "chatplatform:guild.sync"}

// IsBot reports whether p may act as the chat-platform bot: a system API key,
// or an API key holding chatplatform:* (through its scopes or roles), either
// as the wildcard or as all of BotPermissions. Session tokens are for people,
// never bots.
func IsBot(p *authn.Principal) bool {
	if p == nil || p.Kind != authn.KindAPIKey {
		return false
	}
	if p.SystemKey || p.Can("chatplatform:*") {
		return true
	}
	for _, perm := range BotPermissions {
		if !p.Can(perm) {
			return false
		}
	}
	return true
}

// Ticket is the answer of POST /v1/ws/ticket.
type Ticket struct {
	Ticket    string    `json:"ticket"`
	ExpiresIn int       `json:"expires_in"`
	ExpiresAt time.Time `json:"expires_at"`
}

// IssueTicket serves POST /v1/ws/ticket: a single-use ticket, valid for 60
// seconds, that authenticates one connection as ?ticket= (browsers cannot set
// headers on a WebSocket). The caller's bearer is kept sealed in the shared
// cache under the ticket's hash.
func (h *Hub) IssueTicket(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tok, ok := authn.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		httpx.Error(w, r, apperr.Unauthorizedf("authentication required"))
		return
	}
	if p := authn.From(ctx); p != nil && p.Kind == authn.KindOAuth {
		httpx.Error(w, r, apperr.Forbiddenf("OAuth access tokens are not accepted on the real-time channel"))
		return
	}
	ticket := token.New("hm_wt_")
	expires := h.cfg.Clock.Now().Add(TicketTTL)
	// The expiry travels sealed with the bearer, so it holds by the service
	// clock whatever the cache's own expiry does.
	body, _ := json.Marshal(ticketBody{Token: tok, Expires: expires.Unix()})
	sealed, err := h.cfg.Box.Seal(body, []byte("ws-ticket"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.cfg.Cache.Set(ctx, "ws:ticket:"+token.Hash(ticket), []byte(sealed), TicketTTL); err != nil {
		httpx.Error(w, r, apperr.Unavailablef("the cache is unavailable"))
		return
	}
	httpx.JSON(w, http.StatusCreated, Ticket{Ticket: ticket, ExpiresIn: int(TicketTTL.Seconds()), ExpiresAt: expires})
}

// ticketBody is what a ticket stands for, sealed in the cache.
type ticketBody struct {
	Token   string `json:"t"`
	Expires int64  `json:"e"` // Unix seconds
}

// redeemTicket returns the bearer behind a ticket and makes the ticket unusable.
func (h *Hub) redeemTicket(ctx context.Context, ticket string) (string, error) {
	bad := apperr.Unauthorizedf("invalid, expired or already used ticket")
	if !token.HasShape(ticket, "hm_wt_") {
		return "", bad
	}
	key := "ws:ticket:" + token.Hash(ticket)
	// The used-marker makes redemption single-use even when two connections race.
	first, err := h.cfg.Cache.SetNX(ctx, key+":used", []byte{1}, TicketTTL)
	if err != nil {
		return "", apperr.Unavailablef("the cache is unavailable")
	}
	if !first {
		return "", bad
	}
	sealed, err := h.cfg.Cache.Get(ctx, key)
	if err != nil {
		return "", bad
	}
	_ = h.cfg.Cache.Delete(ctx, key)
	plain, err := h.cfg.Box.Open(string(sealed), []byte("ws-ticket"))
	if err != nil {
		return "", bad
	}
	var tb ticketBody
	if json.Unmarshal(plain, &tb) != nil || h.cfg.Clock.Now().Unix() >= tb.Expires {
		return "", bad
	}
	return tb.Token, nil
}
