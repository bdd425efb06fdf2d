package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/outbound"
	"hmid/internal/outbox"
)

// Delivery limits.
const (
	// Lease is how long a claimed delivery stays invisible to other
	// senders: well past the outbound client's RequestTimeout.
	Lease = time.Minute
	// DefaultInterval is how often the worker looks for due deliveries when
	// nothing kicks it.
	DefaultInterval = 2 * time.Second
	// WatchInterval is how often an instance on PostgreSQL looks whether
	// another changed an endpoint.
	WatchInterval = time.Second
	// Keep is how long finished deliveries, and messages no delivery needs,
	// stay for the console before the hourly purge removes them.
	Keep = 30 * 24 * time.Hour
	// purgeEvery is how often the worker purges.
	purgeEvery = time.Hour
	// batch is how many deliveries one pass claims; sends how many run at once.
	batch = 64
	sends = 16
)

// Schedule is the retry schedule: 5 s after the first failure, doubling up
// to 4 h, each wait ±20 % (the Standard Webhooks specification suggests
// retries from seconds to hours with jitter); GiveUp ends them after 18
// attempts or a day, about 26 h of waiting at most.
var (
	Schedule = outbox.Backoff{First: 5 * time.Second, Max: 4 * time.Hour, Jitter: 0.2}
	GiveUp   = outbox.Policy{MaxAttempts: 18, GiveUpAfter: 24 * time.Hour}
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Worker sends due deliveries.
type Worker struct {
	S *Service
	// HTTP sends the messages: the outbound client (package outbound).
	HTTP *http.Client
	// Interval is the pause between passes (NewWorker: DefaultInterval).
	Interval time.Duration

	queue     *outbox.Queue
	loop      outbox.Loop
	delivered atomic.Int64
	purged    time.Time // when the loop last purged
}

// NewWorker returns a worker for s that sends with client and plugs its
// kick into s.
func NewWorker(s *Service, client *http.Client) *Worker {
	w := &Worker{S: s, HTTP: client, Interval: DefaultInterval,
		queue: &outbox.Queue{DB: s.DB, Table: "webhook_deliveries", Columns: "endpoint_id, message_id", Lease: Lease, Batch: batch}}
	s.Kick = w.loop.Kick
	return w
}

// Delivered returns how many messages this worker delivered (answered 2xx).
func (w *Worker) Delivered() int64 { return w.delivered.Load() }

// Start runs passes every Interval, and on Kick, until the returned stop
// function is called; stop waits for the pass under way.
func (w *Worker) Start() (stop func() error) {
	w.loop.Interval = w.Interval
	w.loop.Pass = func(ctx context.Context) error {
		if _, err := w.RunOnce(ctx); err != nil {
			return err
		}
		if now := w.S.Clock.Now(); now.Sub(w.purged) >= purgeEvery {
			w.purged = now
			return w.Purge(ctx)
		}
		return nil
	}
	w.loop.OnError = func(err error) { w.S.Log.Error("webhooks: pass failed", "err", err) }
	return w.loop.Start()
}

// Purge removes finished deliveries older than Keep and the messages no
// delivery refers to any more (a pending delivery is never removed, however
// old: it is still being retried or its endpoint was turned off meanwhile).
func (w *Worker) Purge(ctx context.Context) error {
	before := db.TS(w.S.Clock.Now().Add(-Keep))
	if _, err := w.S.DB.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE next_attempt_at IS NULL AND created_at < $1`, before); err != nil {
		return err
	}
	_, err := w.S.DB.ExecContext(ctx, `DELETE FROM webhook_messages WHERE created_at < $1
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = webhook_messages.id)`, before)
	return err
}

// job is one claimed delivery.
type job struct {
	outbox.Claimed
	endpoint, message string
}

// RunOnce claims the due deliveries and sends them; it returns how many
// were delivered.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	jobs, err := outbox.Claim(ctx, w.queue, w.S.Clock.Now(), func(r *outbox.Row) (job, error) {
		var j job
		err := r.Scan(&j.endpoint, &j.message)
		j.Claimed = r.Claimed
		return j, err
	})
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	n, err := outbox.Each(len(jobs), sends, func(i int) (bool, error) { return w.deliver(ctx, jobs[i]) })
	w.delivered.Add(int64(n))
	return n, err
}

// target is what one delivery needs: where, with which secrets, what.
type target struct {
	url     string
	enabled bool
	secrets []string
	body    []byte
	sealErr error // the endpoint's secret could not be opened
}

// load reads the delivery's endpoint and message; ok is false when the
// delivery is gone (its endpoint was deleted meanwhile).
func (w *Worker) load(ctx context.Context, j job, now time.Time) (target, bool, error) {
	var (
		t            target
		sealed, body string
		prev         sql.NullString
		prevUntil    sql.NullInt64
		endpointID   string
	)
	err := w.S.DB.QueryRowContext(ctx, `SELECT e.id, e.url, e.enabled, e.secret, e.previous_secret, e.previous_secret_expires_at, m.body
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN webhook_messages m ON m.id = d.message_id
		WHERE d.id = $1`, j.ID).Scan(&endpointID, &t.url, &t.enabled, &sealed, &prev, &prevUntil, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	t.body = []byte(body)
	if t.secrets, err = w.S.secrets(endpointID, sealed, prev, prevUntil, now); err != nil {
		// A secret that does not open (HMID_SECRET_KEY changed) fails the
		// delivery, not the pass: no retry would open it.
		t.sealErr = err
	}
	return t, true, nil
}

// outcome is what one attempt found.
type outcome struct {
	code     int // HTTP status, 0 when none came
	duration time.Duration
	err      error // nil for a 2xx answer
}

// deliver makes one attempt of a claimed delivery and records it. ok
// reports a 2xx answer; err is a failure to record (the delivery is then
// tried again when its lease ends).
func (w *Worker) deliver(ctx context.Context, j job) (ok bool, err error) {
	now := w.S.Clock.Now()
	t, found, err := w.load(ctx, j, now)
	if err != nil || !found {
		return false, err
	}
	if t.sealErr != nil {
		w.S.Log.Error("webhooks: the endpoint's secret does not open; rotate it", "endpoint_id", j.endpoint, "err", t.sealErr.Error())
		return false, w.finish(ctx, j, StatusFailed, outcome{err: fmt.Errorf("the signing secret cannot be opened: %w", t.sealErr)}, now)
	}
	if !t.enabled {
		// Turned off since it was queued: nothing is sent; a resend after it
		// is turned on again delivers it.
		return false, w.finish(ctx, j, StatusFailed, outcome{err: errors.New("the endpoint is disabled")}, now)
	}
	o := w.post(ctx, j.message, t, now)
	switch refused := (*outbound.RefusedError)(nil); {
	case o.err == nil:
		return true, w.finish(ctx, j, StatusDelivered, o, now)
	case errors.As(o.err, &refused):
		// An internal address the operator did not allow: no retry would
		// change that.
		w.S.Log.Error("webhooks: delivery refused, the endpoint's URL leads to an internal address", "endpoint_id", j.endpoint, "err", o.err.Error())
		return false, w.finish(ctx, j, StatusFailed, o, now)
	case GiveUp.Exhausted(j.Attempts, j.Created, now):
		w.S.Log.Error("webhooks: delivery given up, the endpoint is turned off", "endpoint_id", j.endpoint, "delivery_id", j.ID,
			"attempts", j.Attempts, "err", o.err.Error())
		if err := w.finish(ctx, j, StatusFailed, o, now); err != nil {
			return false, err
		}
		return false, w.S.disable(ctx, j.endpoint, fmt.Sprintf("Deliveries failed for %d attempts since %s: %s",
			j.Attempts, j.Created.Format(time.RFC3339), outbox.Cause(o.err)))
	}
	w.S.Log.Warn("webhooks: delivery failed, will retry", "endpoint_id", j.endpoint, "delivery_id", j.ID,
		"attempts", j.Attempts, "err", o.err.Error())
	_, err = w.S.DB.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $1, last_attempt_at = $2, last_status_code = $3,
		last_duration_ms = $4, last_error = $5 WHERE id = $6`,
		db.TS(now.Add(Schedule.Delay(j.Attempts))), db.TS(now), nullCode(o.code), o.duration.Milliseconds(), outbox.Cause(o.err), j.ID)
	return false, err
}

// finish records the last attempt of a delivery and takes it off the queue.
func (w *Worker) finish(ctx context.Context, j job, status string, o outcome, now time.Time) error {
	_, err := w.S.DB.ExecContext(ctx, `UPDATE webhook_deliveries SET status = $1, next_attempt_at = NULL, last_attempt_at = $2,
		last_status_code = $3, last_duration_ms = $4, last_error = $5 WHERE id = $6`,
		status, db.TS(now), nullCode(o.code), o.duration.Milliseconds(), outbox.Cause(o.err), j.ID)
	return err
}

func nullCode(code int) any {
	if code == 0 {
		return nil
	}
	return code
}

// post sends the message with the Standard Webhooks headers; a 2xx answer
// is success, anything else (a redirect included: none is followed) a
// failure to retry.
func (w *Worker) post(ctx context.Context, msgID string, t target, now time.Time) outcome {
	sig, err := SignatureHeader(t.secrets, msgID, now, t.body)
	if err != nil {
		return outcome{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return outcome{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hmid-webhooks")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	res, err := w.HTTP.Do(req)
	if err != nil {
		return outcome{duration: time.Since(start), err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	o := outcome{code: res.StatusCode, duration: time.Since(start)}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		o.err = fmt.Errorf("the endpoint answered %d", res.StatusCode)
	}
	return o
}

// disable turns an endpoint off after its deliveries kept failing, with
// the reason the console shows, and writes the audit event (which other
// endpoints may subscribe to).
func (s *Service) disable(ctx context.Context, id, reason string) error {
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = $1, disabled_at = $2, updated_at = $2
			WHERE id = $3 AND enabled`, reason, db.TS(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // already off, or deleted
		}
		e, err := getEndpoint(ctx, tx, id)
		if err != nil {
			return err
		}
		ev := audit.Event{EventType: audit.WebhookDisabled, ResourceType: "webhook", ResourceID: id, Failed: true,
			Description: "Webhook endpoint " + e.URL + " turned off", ErrorMessage: reason,
			Metadata: map[string]any{"url": e.URL}}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_state SET version = version + 1 WHERE id = 1`); err != nil {
			return err
		}
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
}
