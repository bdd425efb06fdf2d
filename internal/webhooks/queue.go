package webhooks

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"hmid/internal/audit"
	"hmid/internal/db"
)

// subscriptions is the in-memory set of which enabled endpoints want which
// event type.
type subscriptions struct {
	mu     sync.RWMutex
	byType map[string][]string // event type → ids of enabled endpoints
	local  uint64              // DB.Version("webhook_endpoints") when loaded
	shared int64               // webhook_state.version when loaded
	loaded bool
}

// Load reads the subscription set. New services call it at start, so the
// first event written pays no load.
func (s *Service) Load(ctx context.Context) error {
	// Both versions are read before the endpoints: a change committed in
	// between leaves them behind, and the next check loads again.
	local := s.DB.Version("webhook_endpoints")
	var shared int64
	if err := s.DB.QueryRowContext(ctx, `SELECT version FROM webhook_state WHERE id = 1`).Scan(&shared); err != nil {
		return err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT id, event_types FROM webhook_endpoints WHERE enabled`)
	if err != nil {
		return err
	}
	defer rows.Close()
	byType := map[string][]string{}
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return err
		}
		var types []string
		if err := json.Unmarshal([]byte(raw), &types); err != nil {
			return err
		}
		for _, t := range types {
			byType[t] = append(byType[t], id)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.subs.mu.Lock()
	s.subs.byType, s.subs.local, s.subs.shared, s.subs.loaded = byType, local, shared, true
	s.subs.mu.Unlock()
	return nil
}

// subscribers returns the ids of the enabled endpoints that want
// eventType, loading the set again first when this process changed an
// endpoint since it was loaded.
func (s *Service) subscribers(ctx context.Context, eventType string) []string {
	s.subs.mu.RLock()
	fresh := s.subs.loaded && s.subs.local == s.DB.Version("webhook_endpoints")
	ids := s.subs.byType[eventType]
	s.subs.mu.RUnlock()
	if fresh {
		return ids
	}
	if err := s.Load(ctx); err != nil {
		// The set as it was is the best answer; the event's own write
		// reports a database that is gone.
		s.Log.Warn("webhooks: loading the subscriptions failed", "err", err)
		return ids
	}
	s.subs.mu.RLock()
	defer s.subs.mu.RUnlock()
	return s.subs.byType[eventType]
}

// Subscribed reports whether some enabled endpoint wants eventType; it
// runs no statement unless the set must be loaded again (audit.Forwarder).
func (s *Service) Subscribed(ctx context.Context, eventType string) bool {
	return len(s.subscribers(ctx, eventType)) > 0
}

// Watch checks the shared counter every interval and loads the set again
// when another instance changed an endpoint, until the returned stop
// function is called. Only PostgreSQL needs it: SQLite has one process.
func (s *Service) Watch(interval time.Duration) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Every(ctx, interval, func() {
			var v int64
			if err := s.DB.QueryRowContext(ctx, `SELECT version FROM webhook_state WHERE id = 1`).Scan(&v); err != nil {
				return // the database is away; the next tick tries again
			}
			s.subs.mu.RLock()
			stale := v != s.subs.shared
			s.subs.mu.RUnlock()
			if stale {
				if err := s.Load(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("webhooks: loading the subscriptions failed", "err", err)
				}
			}
		})
	}()
	return func() error { cancel(); <-done; return nil }
}

// Message is the body of every webhook (Standard Webhooks, "Payload
// structure"): the event type, when it happened, and the event as the audit
// log shows it.
type Message struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// Forward queues e for every enabled endpoint that wants its type, through
// q, the transaction that stores e (audit.Forwarder): one message and one
// delivery per endpoint, in two statements whatever the number of
// endpoints. The worker is kicked once the transaction commits.
func (s *Service) Forward(ctx context.Context, q db.Querier, e audit.Entry) error {
	ids := s.subscribers(ctx, e.EventType)
	if len(ids) == 0 {
		return nil
	}
	body, err := json.Marshal(Message{Type: e.EventType, Timestamp: e.CreatedAt, Data: e})
	if err != nil {
		return err
	}
	// The message id is the audit event's, so a receiver can find the event.
	msgID := "msg_" + e.ID
	if err := insertMessage(ctx, q, msgID, e.EventType, body, e.CreatedAt); err != nil {
		return err
	}
	if err := insertDeliveries(ctx, q, msgID, ids, e.CreatedAt); err != nil {
		return err
	}
	s.afterCommit(q)
	return nil
}

// afterCommit kicks the worker once q's transaction commits (at once when q
// is no transaction).
func (s *Service) afterCommit(q db.Querier) {
	if s.Kick == nil {
		return
	}
	if tx, ok := q.(*db.Tx); ok {
		tx.AfterCommit(s.Kick)
		return
	}
	s.Kick()
}

func insertMessage(ctx context.Context, q db.Querier, id, eventType string, body []byte, at time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO webhook_messages (id, event_type, body, created_at) VALUES ($1, $2, $3, $4)`,
		id, eventType, string(body), db.TS(at))
	return err
}

// insertDeliveries queues message msgID for the endpoints ids, due at once,
// each delivery with a new id. The endpoints are read, not trusted: one
// deleted or turned off since the in-memory set was loaded gets nothing, and
// no foreign key fails the event's transaction. The new ids are picked by a
// CASE on the endpoint's id rather than joined from a list of rows, which
// SQLite would materialize in a temporary table on every event.
func insertDeliveries(ctx context.Context, q db.Querier, msgID string, ids []string, at time.Time) error {
	var pick, in strings.Builder
	args := make([]any, 0, 2*len(ids)+2)
	args = append(args, msgID, db.TS(at))
	for i, id := range ids {
		n := strconv.Itoa(len(args) + 1)
		pick.WriteString(" WHEN $" + n + " THEN CAST($" + strconv.Itoa(len(args)+2) + " AS TEXT)")
		if i > 0 {
			in.WriteString(", ")
		}
		in.WriteString("$" + n)
		args = append(args, id, db.NewID())
	}
	_, err := q.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, message_id, status, next_attempt_at, created_at)
		SELECT CASE e.id`+pick.String()+` END, e.id, $1, 'pending', $2, $2 FROM webhook_endpoints e
		WHERE e.enabled AND e.id IN (`+in.String()+`)`, args...)
	return err
}
