package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Delivery is one message's delivery to one endpoint as the API shows it:
// its state and its last attempt.
type Delivery struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
	// MessageID is the webhook-id header: the same for every attempt and
	// every resend of the message.
	MessageID     string     `json:"message_id"`
	EventType     string     `json:"event_type"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastAttemptAt *time.Time `json:"last_attempt_at"`
	// LastStatusCode is the HTTP status of the last answer; nil when none came.
	LastStatusCode *int      `json:"last_status_code"`
	LastDurationMS *int64    `json:"last_duration_ms"`
	LastError      string    `json:"last_error"`
	CreatedAt      time.Time `json:"created_at"`
}

const deliveryCols = `d.id, d.endpoint_id, d.message_id, m.event_type, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at,
	d.last_status_code, d.last_duration_ms, d.last_error, d.created_at`

func scanDelivery(row db.Scanner) (Delivery, error) {
	var (
		d                 Delivery
		next, last, durMS sql.NullInt64
		code              sql.NullInt64
		created           int64
	)
	err := row.Scan(&d.ID, &d.EndpointID, &d.MessageID, &d.EventType, &d.Status, &d.Attempts, &next, &last, &code, &durMS, &d.LastError, &created)
	if err != nil {
		return d, err
	}
	d.NextAttemptAt, d.LastAttemptAt = tsPtr(next), tsPtr(last)
	if code.Valid {
		c := int(code.Int64)
		d.LastStatusCode = &c
	}
	if durMS.Valid {
		d.LastDurationMS = &durMS.Int64
	}
	d.CreatedAt = db.FromTS(created)
	return d, nil
}

// Deliveries returns one page of an endpoint's deliveries, newest first,
// and how many it has.
func (s *Service) Deliveries(ctx context.Context, endpointID string, pg httpx.Page) ([]Delivery, int, error) {
	if _, err := s.Get(ctx, endpointID); err != nil {
		return nil, 0, err
	}
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = $1`, endpointID).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, s.DB, scanDelivery, `SELECT `+deliveryCols+` FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
		WHERE d.endpoint_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2 OFFSET $3`, endpointID, pg.Limit, pg.Offset())
	return out, total, err
}

func getDelivery(ctx context.Context, q db.Querier, id string) (Delivery, error) {
	d, err := scanDelivery(q.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
		WHERE d.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, apperr.NotFoundf("delivery not found")
	}
	return d, err
}

// Resend queues the message of one of the endpoint's deliveries again, as
// a new delivery with the same webhook-id (Standard Webhooks: the id stays
// when a message is resent, so receivers can drop duplicates).
func (s *Service) Resend(ctx context.Context, endpointID, deliveryID string) (Delivery, error) {
	var out Delivery
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		e, err := getEndpoint(ctx, tx, endpointID)
		if err != nil {
			return err
		}
		d, err := getDelivery(ctx, tx, deliveryID)
		if err != nil || d.EndpointID != endpointID {
			return apperr.NotFoundf("delivery not found")
		}
		if !e.Enabled {
			return apperr.Conflictf("the endpoint is disabled; enable it before resending")
		}
		out, err = s.queueOne(ctx, tx, endpointID, d.MessageID)
		return err
	})
	return out, err
}

// Test sends the endpoint a message of type webhook_test, whatever event
// types it wants, so an operator sees a delivery arrive (or fail).
func (s *Service) Test(ctx context.Context, endpointID string) (Delivery, error) {
	var out Delivery
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		e, err := getEndpoint(ctx, tx, endpointID)
		if err != nil {
			return err
		}
		if !e.Enabled {
			return apperr.Conflictf("the endpoint is disabled; enable it before sending a test event")
		}
		now := db.FromTS(db.TS(s.Clock.Now()))
		msgID := "msg_" + db.NewID()
		body, err := json.Marshal(Message{Type: TestEventType, Timestamp: now, Data: map[string]any{
			"endpoint_id": e.ID, "message": "This is a test event sent from hmid.",
		}})
		if err != nil {
			return err
		}
		if err := insertMessage(ctx, tx, msgID, TestEventType, body, now); err != nil {
			return err
		}
		out, err = s.queueOne(ctx, tx, endpointID, msgID)
		return err
	})
	return out, err
}

// queueOne queues message msgID for one endpoint, due at once, and kicks the
// worker after commit.
func (s *Service) queueOne(ctx context.Context, tx *db.Tx, endpointID, msgID string) (Delivery, error) {
	id := db.NewID()
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, message_id, status, next_attempt_at, created_at)
		VALUES ($1, $2, $3, 'pending', $4, $4)`, id, endpointID, msgID, db.TS(s.Clock.Now())); err != nil {
		return Delivery{}, err
	}
	s.afterCommit(tx)
	return getDelivery(ctx, tx, id)
}
