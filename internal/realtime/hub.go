// Package realtime is hmid's real-time channel: a WebSocket endpoint
// (GET /v1/ws) where authenticated clients subscribe to topics and receive
// events, and where the chat-platform bot connects to answer sync requests.
//
// The Hub implements events.Publisher (areas announce GPS points, trip status
// changes), audit.Notifier (the audit.me topic) and health.Counter. Publishing
// never blocks: fan-out workers write each event's frame, encoded once, to
// the subscribers' sockets with writes that never wait; a socket that cannot
// take a frame gets a bounded backlog, and a connection whose backlog is
// full is dropped instead of slowing anyone. With Redis configured, events
// and bot requests cross instances through Redis pub/sub.
//
// Messages are JSON {type, id, topic, payload} (DECISIONS.md, Operational data).
package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/events"
	"hmid/internal/secretbox"
)

// Defaults of the tunable limits.
const (
	DefaultSendQueue        = 256
	DefaultPingInterval     = 30 * time.Second
	DefaultMaxSubscriptions = 200
	// TicketTTL is how long a connection ticket from POST /v1/ws/ticket stays valid.
	TicketTTL = 60 * time.Second
	// maxClientMessageBytes bounds one client message; maxBotMessageBytes one
	// bot message (its answers carry whole guilds with their members).
	maxClientMessageBytes = 64 << 10
	maxBotMessageBytes    = 16 << 20
	// pingWorkers bounds the credential re-checks (database or cache reads)
	// in flight during one keep-alive round; the pings themselves never wait.
	pingWorkers = 64
)

// ErrNoBot means no chat-platform bot is connected to any instance.
var ErrNoBot = errors.New("realtime: no bot connected")

// Config holds the Hub's dependencies and limits; zero limits take the defaults.
type Config struct {
	Resolver *authn.Resolver
	Cache    cache.Cache
	Box      *secretbox.Box
	Clock    clock.Clock
	Log      *slog.Logger
	// Redis, when set, carries events, bot requests and bot responses between
	// instances; Namespace names the pub/sub channels of this deployment.
	Redis     *redis.Client
	Namespace string

	SendQueue        int           // messages a full socket may hold back before its connection is dropped
	PingInterval     time.Duration // server ping (and credential re-check) period
	MaxSubscriptions int           // per connection
}

// Hub is the set of live connections and their subscriptions.
type Hub struct {
	cfg      Config
	instance string // this process, to ignore its own echoes from Redis

	mu     sync.RWMutex
	topics map[string]map[*conn]string // internal topic → subscriber → topic name shown to the client
	conns  map[*conn]struct{}
	bots   []*conn

	nconns, nsubs atomic.Int64

	pmu     sync.Mutex
	pending map[string]chan json.RawMessage // request id → waiter

	botSubMu sync.Mutex    // serializes subscribing the bot-request channel
	retune   chan struct{} // wakes keepAlive after Tune

	fan    *fanout       // writes events to subscribers
	out    chan redisMsg // asynchronous Redis publishes
	ps     *redis.PubSub
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// redisMsg is one message on a Redis channel.
type redisMsg struct {
	channel string
	body    []byte
}

// wire is the JSON body of cross-instance messages.
type wire struct {
	Origin  string          `json:"o"`
	ID      string          `json:"id,omitempty"`
	Topic   string          `json:"t,omitempty"`
	Payload json.RawMessage `json:"p"`
}

// New builds a Hub and, with Redis, starts its pub/sub loops. Call Close to stop it.
func New(cfg Config) (*Hub, error) {
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = DefaultSendQueue
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &Hub{
		cfg:      cfg,
		instance: uuid.NewString(),
		topics:   map[string]map[*conn]string{},
		conns:    map[*conn]struct{}{},
		pending:  map[string]chan json.RawMessage{},
		retune:   make(chan struct{}, 1),
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.fan = startFanout(h.ctx, &h.wg)
	if cfg.Redis != nil {
		h.out = make(chan redisMsg, 4096)
		h.ps = cfg.Redis.Subscribe(h.ctx, h.chEvents(), h.chResponses())
		// Receive confirms the subscription, so events published after New returns arrive.
		if _, err := h.ps.Receive(h.ctx); err != nil {
			h.ps.Close()
			h.cancel()
			return nil, err
		}
		h.wg.Add(2)
		go h.publishLoop()
		go h.receiveLoop()
	}
	h.wg.Add(1)
	go h.keepAlive()
	return h, nil
}

func (h *Hub) chEvents() string    { return h.cfg.Namespace + ":events" }
func (h *Hub) chResponses() string { return h.cfg.Namespace + ":responses" }
func (h *Hub) chBot() string       { return h.cfg.Namespace + ":bot" }

// Close disconnects every client and stops the Redis loops.
func (h *Hub) Close() error {
	h.cancel()
	h.mu.Lock()
	all := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		all = append(all, c)
	}
	h.mu.Unlock()
	for _, c := range all {
		c.drop(ws.StatusGoingAway, "server shutting down")
	}
	if h.ps != nil {
		h.ps.Close()
	}
	h.wg.Wait()
	return nil
}

// Tune changes the send-queue size of connections opened from now on and the
// keep-alive interval (tests and benchmarks use it; zero keeps a value).
func (h *Hub) Tune(sendQueue int, pingInterval time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sendQueue > 0 {
		h.cfg.SendQueue = sendQueue
	}
	if pingInterval > 0 {
		h.cfg.PingInterval = pingInterval
		select {
		case h.retune <- struct{}{}:
		default:
		}
	}
}

// Counts reports this instance's open connections and subscriptions (health.Counter).
func (h *Hub) Counts() (connections, subscriptions int) {
	return int(h.nconns.Load()), int(h.nsubs.Load())
}

// Publish delivers payload to the subscribers of topic on every instance
// (events.Publisher). It never blocks: with nobody subscribed locally and no
// Redis it returns after one map lookup.
func (h *Hub) Publish(_ context.Context, topic string, payload any) {
	if h.cfg.Redis == nil {
		h.mu.RLock()
		n := len(h.topics[topic])
		h.mu.RUnlock()
		if n == 0 {
			return
		}
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		h.cfg.Log.Error("realtime: event payload does not encode", slog.String("topic", topic), slog.String("error", err.Error()))
		return
	}
	h.deliver(topic, raw)
	if h.cfg.Redis != nil {
		body, _ := json.Marshal(wire{Origin: h.instance, Topic: topic, Payload: raw})
		select {
		case h.out <- redisMsg{channel: h.chEvents(), body: body}:
		default:
			h.cfg.Log.Warn("realtime: Redis publish queue full; event not forwarded to other instances", slog.String("topic", topic))
		}
	}
}

// AuditRecorded pushes a stored audit event to the user's audit.me subscribers (audit.Notifier).
func (h *Hub) AuditRecorded(ctx context.Context, userID string, event map[string]any) {
	h.Publish(ctx, events.AuditUser(userID), event)
}

// deliver fans an encoded payload out to this instance's subscribers of topic.
func (h *Hub) deliver(topic string, payload json.RawMessage) {
	h.mu.RLock()
	subs := h.topics[topic]
	if len(subs) == 0 {
		h.mu.RUnlock()
		return
	}
	// One frame per shown topic name (audit.user.<id> is shown as
	// audit.me), encoded once for every subscriber; one job per worker.
	type key struct {
		worker int
		shown  string
	}
	frames := map[string][]byte{}
	jobs := map[key]*fanJob{}
	for c, shown := range subs {
		k := key{c.worker, shown}
		j := jobs[k]
		if j == nil {
			frame, ok := frames[shown]
			if !ok {
				frame = textFrame(eventFrame(shown, payload))
				frames[shown] = frame
			}
			j = &fanJob{frame: frame, conns: make([]*conn, 0, len(subs)/len(h.fan.workers)+1)}
			jobs[k] = j
		}
		j.conns = append(j.conns, c)
	}
	h.mu.RUnlock()
	for k, j := range jobs {
		h.fan.push(k.worker, *j)
	}
}

// eventFrame encodes {type: "event", topic, payload} around an already
// encoded payload, without validating it a second time.
func eventFrame(topic string, payload json.RawMessage) []byte {
	t, _ := json.Marshal(topic)
	b := make([]byte, 0, len(payload)+len(t)+40)
	b = append(b, `{"type":"event","topic":`...)
	b = append(b, t...)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// keepAlive runs every ping interval: it re-checks each connection's
// credential and pings it (RFC 6455 §5.5.2), dropping connections whose
// credential is gone or that do not answer within the interval. One loop for
// all connections keeps idle connections free of timers and goroutines.
func (h *Hub) keepAlive() {
	defer h.wg.Done()
	for {
		h.mu.RLock()
		interval := h.cfg.PingInterval
		h.mu.RUnlock()
		t := time.NewTimer(interval)
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-h.retune:
			t.Stop()
			continue
		case <-t.C:
		}
		h.mu.RLock()
		all := make([]*conn, 0, len(h.conns))
		for c := range h.conns {
			all = append(all, c)
		}
		h.mu.RUnlock()
		jobs := make(chan *conn)
		var wg sync.WaitGroup
		for range min(pingWorkers, len(all)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range jobs {
					if !c.recheck() {
						c.drop(ws.StatusPolicyViolation, "credential no longer valid")
						continue
					}
					// The previous round's ping is still unanswered: the
					// client has not read for a whole interval.
					if c.awaitingPong.Swap(true) {
						c.drop(ws.StatusPolicyViolation, "no pong")
						continue
					}
					if !c.send(pingFrame) {
						c.drop(ws.StatusPolicyViolation, "slow consumer: send queue full")
					}
				}
			}()
		}
		for _, c := range all {
			jobs <- c
		}
		close(jobs)
		wg.Wait()
	}
}

// maxPublishBatch bounds how many queued messages one pipeline to Redis carries.
const maxPublishBatch = 128

// publishLoop sends queued messages to Redis so publishers never wait for
// the network, pipelining the messages that queued up during the last send.
func (h *Hub) publishLoop() {
	defer h.wg.Done()
	batch := make([]redisMsg, 0, maxPublishBatch)
	for {
		select {
		case <-h.ctx.Done():
			return
		case m := <-h.out:
			batch = append(batch[:0], m)
		}
		// Whatever queued up meanwhile goes in the same round trip.
	drain:
		for len(batch) < maxPublishBatch {
			select {
			case m := <-h.out:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
		_, err := h.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, m := range batch {
				p.Publish(ctx, m.channel, m.body)
			}
			return nil
		})
		cancel()
		if err != nil && h.ctx.Err() == nil {
			h.cfg.Log.Warn("realtime: Redis publish failed", slog.String("error", err.Error()))
		}
	}
}

// receiveLoop handles messages from other instances.
func (h *Hub) receiveLoop() {
	defer h.wg.Done()
	ch := h.ps.Channel(redis.WithChannelSize(4096))
	for {
		select {
		case <-h.ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			var w wire
			if err := json.Unmarshal([]byte(m.Payload), &w); err != nil {
				continue
			}
			switch m.Channel {
			case h.chEvents():
				if w.Origin != h.instance {
					h.deliver(w.Topic, w.Payload)
				}
			case h.chResponses():
				h.resolve(w.ID, w.Payload)
			case h.chBot():
				if b := h.localBot(); b != nil {
					h.sendRequest(b, w.ID, w.Topic, w.Payload)
				}
			}
		}
	}
}

// subscribe adds c to topic (shown to the client as shown).
func (h *Hub) subscribe(c *conn, topic, shown string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, live := h.conns[c]; !live {
		return nil // dropped meanwhile: nothing to deliver to
	}
	if _, ok := c.subs[topic]; ok {
		return nil
	}
	if len(c.subs) >= h.cfg.MaxSubscriptions {
		return errTooMany
	}
	m := h.topics[topic]
	if m == nil {
		m = map[*conn]string{}
		h.topics[topic] = m
	}
	m[c] = shown
	c.subs[topic] = shown
	h.nsubs.Add(1)
	return nil
}

var errTooMany = errors.New("too many subscriptions on this connection")

// unsubscribe removes c from topic, reporting whether it was subscribed.
func (h *Hub) unsubscribe(c *conn, topic string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unsubscribeLocked(c, topic)
}

func (h *Hub) unsubscribeLocked(c *conn, topic string) bool {
	if _, ok := c.subs[topic]; !ok {
		return false
	}
	delete(c.subs, topic)
	if m := h.topics[topic]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(h.topics, topic)
		}
	}
	h.nsubs.Add(-1)
	return true
}

func (h *Hub) add(c *conn) {
	h.mu.Lock()
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	h.nconns.Add(1)
}

// remove forgets c and all its subscriptions.
func (h *Hub) remove(c *conn) {
	h.mu.Lock()
	if _, ok := h.conns[c]; !ok {
		h.mu.Unlock()
		return
	}
	delete(h.conns, c)
	for t := range c.subs {
		h.unsubscribeLocked(c, t)
	}
	wasBot := false
	for i, b := range h.bots {
		if b == c {
			h.bots = append(h.bots[:i], h.bots[i+1:]...)
			wasBot = true
			break
		}
	}
	noBots := len(h.bots) == 0
	h.mu.Unlock()
	h.nconns.Add(-1)
	if wasBot && noBots && h.ps != nil {
		// Off the caller's path: remove may run inside a publisher.
		go func() {
			h.botSubMu.Lock()
			defer h.botSubMu.Unlock()
			h.mu.RLock()
			still := len(h.bots) == 0
			h.mu.RUnlock()
			if still {
				_ = h.ps.Unsubscribe(h.ctx, h.chBot())
			}
		}()
	}
}

// addBot registers c as a chat-platform bot; with Redis this instance then
// listens for bot requests made on other instances.
func (h *Hub) addBot(ctx context.Context, c *conn) error {
	h.mu.Lock()
	if _, live := h.conns[c]; !live {
		h.mu.Unlock()
		return nil
	}
	for _, b := range h.bots {
		if b == c {
			h.mu.Unlock()
			return nil
		}
	}
	h.bots = append(h.bots, c)
	h.mu.Unlock()
	if h.ps == nil {
		return nil
	}
	h.botSubMu.Lock()
	defer h.botSubMu.Unlock()
	if err := h.ps.Subscribe(ctx, h.chBot()); err != nil {
		return err
	}
	// Wait until Redis has registered the subscription, so a request made on
	// another instance right after the bot's hello is acknowledged finds it.
	for i := 0; i < 200; i++ {
		n, err := h.cfg.Redis.PubSubNumSub(ctx, h.chBot()).Result()
		if err != nil {
			return err
		}
		if n[h.chBot()] > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return errors.New("realtime: Redis did not confirm the bot subscription")
}

func (h *Hub) localBot() *conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.bots) == 0 {
		return nil
	}
	return h.bots[len(h.bots)-1] // the most recently connected bot
}

// BotConnected reports whether a bot is connected to this instance.
func (h *Hub) BotConnected() bool { return h.localBot() != nil }

// Request sends a request to the chat-platform bot, wherever it is connected,
// and waits for its response or the end of ctx. It returns ErrNoBot at once
// when no bot is connected, and ctx.Err() on timeout.
func (h *Hub) Request(ctx context.Context, topic string, payload any) (json.RawMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	id := uuid.NewString()
	ch := make(chan json.RawMessage, 1)
	h.pmu.Lock()
	h.pending[id] = ch
	h.pmu.Unlock()
	defer func() {
		h.pmu.Lock()
		delete(h.pending, id)
		h.pmu.Unlock()
	}()
	if b := h.localBot(); b != nil {
		if !h.sendRequest(b, id, topic, raw) {
			return nil, ErrNoBot
		}
	} else if h.cfg.Redis != nil {
		body, _ := json.Marshal(wire{Origin: h.instance, ID: id, Topic: topic, Payload: raw})
		// PUBLISH answers how many subscribers received it: only instances
		// with a connected bot subscribe to the bot channel.
		n, err := h.cfg.Redis.Publish(ctx, h.chBot(), body).Result()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, ErrNoBot
		}
	} else {
		return nil, ErrNoBot
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sendRequest queues a request frame on bot connection b.
func (h *Hub) sendRequest(b *conn, id, topic string, payload json.RawMessage) bool {
	msg, _ := json.Marshal(Message{Type: "request", ID: id, Topic: topic, Payload: payload})
	if !b.send(textFrame(msg)) {
		b.drop(ws.StatusPolicyViolation, "slow consumer: send queue full")
		return false
	}
	return true
}

// botResponse routes a bot's response to the waiting request, on this
// instance or, through Redis, on the instance that made it.
func (h *Hub) botResponse(id string, payload json.RawMessage) {
	if h.resolve(id, payload) {
		return
	}
	if h.cfg.Redis != nil {
		body, _ := json.Marshal(wire{Origin: h.instance, ID: id, Payload: payload})
		select {
		case h.out <- redisMsg{channel: h.chResponses(), body: body}:
		default:
			h.cfg.Log.Warn("realtime: Redis publish queue full; bot response dropped")
		}
	}
}

// resolve hands payload to the local waiter of request id, if there is one.
func (h *Hub) resolve(id string, payload json.RawMessage) bool {
	h.pmu.Lock()
	ch, ok := h.pending[id]
	if ok {
		delete(h.pending, id)
	}
	h.pmu.Unlock()
	if ok {
		ch <- payload
	}
	return ok
}

// resolveTopic maps a topic a client asks for to the internal topic and
// checks the principal may read it.
func resolveTopic(p *authn.Principal, topic string) (internal string, err error) {
	if topic == "audit.me" {
		if p.UserID == "" {
			return "", errForbidden("audit.me needs a credential acting for a user")
		}
		return events.AuditUser(p.UserID), nil
	}
	// The topics of one device or trip: the id after the prefix, readable
	// with the permission named.
	for _, t := range []struct{ prefix, perm string }{{"gps.device.", "gps:read"}, {"trips.", "trips:read"}} {
		id, ok := strings.CutPrefix(topic, t.prefix)
		if !ok {
			continue
		}
		if !validID(id) {
			return "", errBadTopic(topic)
		}
		if !p.Can(t.perm) {
			return "", errForbidden("missing permission " + t.perm)
		}
		return topic, nil
	}
	return "", errBadTopic(topic)
}

// validID accepts the ids used in topics: 1 to 64 letters, digits, '-' or '_'.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
