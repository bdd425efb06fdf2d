package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

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

// upgrader performs the handshake (RFC 6455 §4.2). Zero buffer sizes reuse
// the HTTP server's buffers of the hijacked connection; compression is off,
// so an event frame is encoded once for all its subscribers.
var upgrader = websocket.Upgrader{
	// Authentication is by bearer token or single-use ticket, never by
	// cookie, so a cross-origin page gains nothing: origins are not checked.
	CheckOrigin: func(*http.Request) bool { return true },
	// A handshake the upgrader refuses is answered like every other error.
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		if status == http.StatusBadRequest {
			httpx.Error(w, r, apperr.Bad("%s (RFC 6455 §4.2.1)", reason.Error()))
			return
		}
		httpx.Error(w, r, reason)
	},
}

// hijacker lets the upgrader take over the connection through the
// middleware's response writers, which expose the server's by Unwrap.
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
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

// conn is one live WebSocket connection. Its send queue is a slice that
// exists only while messages wait, and its writer goroutine runs only while
// there is something to write, so an idle connection costs its reader alone.
type conn struct {
	hub   *Hub
	ws    *websocket.Conn
	token string // re-resolved periodically so revoked credentials lose the channel
	p     *authn.Principal
	pmu   sync.Mutex // guards p

	subs map[string]string // guarded by hub.mu: internal topic → shown topic

	// awaitingPong is set when the keep-alive pings and cleared by the pong.
	awaitingPong atomic.Bool

	qmu     sync.Mutex // guards the fields below
	limit   int
	queue   []outgoing
	spare   []outgoing // the previous batch's backing array, reused
	writing bool
	closed  bool

	once sync.Once
}

// outgoing is one queued message: an event frame encoded once for all its
// subscribers, or the bytes of a message to this connection alone.
type outgoing struct {
	shared *websocket.PreparedMessage
	own    []byte
}

// enqueue queues m without blocking; false means the queue is full.
func (c *conn) enqueue(m outgoing) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.closed {
		return true // closing anyway
	}
	if len(c.queue) >= c.limit {
		return false
	}
	c.queue = append(c.queue, m)
	if !c.writing {
		c.writing = true
		go c.flush()
	}
	return true
}

// flush writes queued messages until the queue is empty; it is the only
// writer of data frames on the socket.
//
// Data frames are written without a deadline: arming one per write costs a
// timer update on each of the sockets of a fan-out. A writer stuck on a
// client that takes nothing is ended all the same, by whichever comes
// first: its queue overflows (drop), or the keep-alive's ping cannot get
// the write lock within WriteTimeout or goes unanswered for an interval
// (drop, which closes the socket and so fails the blocked write).
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
		for i, m := range batch {
			var err error
			if m.shared != nil {
				err = c.ws.WritePreparedMessage(m.shared)
			} else {
				err = c.ws.WriteMessage(websocket.TextMessage, m.own)
			}
			batch[i] = outgoing{}
			if err != nil {
				c.qmu.Lock()
				c.writing = false
				c.qmu.Unlock()
				c.drop("write failed")
				return
			}
		}
		c.qmu.Lock()
		c.spare = batch[:0]
		c.qmu.Unlock()
	}
}

// closeGrace bounds the wait for sending a close frame to a leaving client.
const closeGrace = time.Second

// drop closes the connection without waiting (slow consumers, shutdown, revoked credentials).
func (c *conn) drop(reason string) {
	c.once.Do(func() {
		c.qmu.Lock()
		c.closed = true
		c.queue, c.spare = nil, nil
		c.qmu.Unlock()
		c.hub.remove(c) // counts and fan-out forget it at once
		go func() {
			// The close frame (RFC 6455 §5.5.1) is attempted only briefly:
			// a stuck writer keeps the lock, and closing the socket frees it.
			_ = c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.ClosePolicyViolation, reason), time.Now().Add(closeGrace))
			_ = c.ws.Close()
		}()
	})
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
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		httpx.Error(w, r, apperr.Bad("this endpoint needs a WebSocket upgrade request (RFC 6455 §4.1)"))
		return
	}
	ws, err := upgrader.Upgrade(hijacker{w}, r, nil)
	if err != nil {
		return // Upgrade has answered
	}
	ws.SetReadLimit(maxClientMessageBytes)
	h.mu.RLock()
	limit := h.cfg.SendQueue
	h.mu.RUnlock()
	c := &conn{hub: h, ws: ws, token: tok, p: p, limit: limit, subs: map[string]string{}}
	ws.SetPongHandler(func(string) error {
		c.awaitingPong.Store(false)
		return nil
	})
	h.add(c)
	// The connection is hijacked: the reader runs on a fresh goroutine, whose
	// stack stays small, instead of the HTTP server's deep one.
	go func() {
		defer h.remove(c)
		c.readLoop(h.ctx)
		c.drop("connection closed")
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
func (c *conn) readLoop(ctx context.Context) {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if typ != websocket.TextMessage {
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

func errPayload(kind, msg string) json.RawMessage {
	b, _ := json.Marshal(ErrorPayload{Error: kind, Message: msg})
	return b
}

// reply queues an answer; a client that cannot take its own answers is dropped.
func (c *conn) reply(m Message) {
	frame, _ := json.Marshal(m)
	if !c.enqueue(outgoing{own: frame}) {
		c.drop("slow consumer: send queue full")
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
		c.ws.SetReadLimit(maxBotMessageBytes) // bot answers carry whole guilds
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

// IsBot reports whether p may act as the chat-platform bot: a system API key,
// or an API key holding chatplatform:* (through its scopes or roles). Session
// tokens are for people, never bots.
func IsBot(p *authn.Principal) bool {
	if p == nil || p.Kind != authn.KindAPIKey {
		return false
	}
	return p.SystemKey || p.Can("chatplatform:*")
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
