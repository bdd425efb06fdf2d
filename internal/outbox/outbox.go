// Package outbox is the one durable delivery mechanism of hmid, shared by
// back-channel logout tokens (package backchannel) and webhooks (package
// webhooks): what is to be sent is written as a row in the transaction of
// the event that caused it, so it exists exactly when the event committed
// and survives a crash or restart; a worker sends it after commit.
//
// A row is claimed by pushing its next_attempt_at past a lease and counting
// the attempt, in one UPDATE: on PostgreSQL its inner SELECT takes the row
// with FOR UPDATE SKIP LOCKED, so several instances claim disjoint rows
// without waiting and each row is sent by one instance per lease; SQLite has
// one writer, which serializes claims. A row whose sender died becomes due
// again when its lease runs out, so delivery is at least once.
//
// A failed attempt is retried after Backoff.Delay: exponential, capped,
// with optional jitter so that retries after an outage of a receiver do not
// all arrive at the same instant (the Standard Webhooks specification,
// "Retry schedule", and AWS Architecture Blog "Exponential Backoff And
// Jitter"). Policy.Exhausted says when to give up.
//
// A table used as an outbox needs the columns id (text primary key),
// attempts (integer), created_at and next_attempt_at (BIGINT microseconds as
// db.TS writes them; a NULL next_attempt_at is never due, for tables that
// keep finished rows) and last_error (text), and an index on next_attempt_at.
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"hmid/internal/db"
)

// Queue claims due rows of one outbox table.
type Queue struct {
	DB *db.DB
	// Table is the outbox table's name.
	Table string
	// Columns are the table's own columns a claim returns after id,
	// attempts and created_at ("client_id, user_id, session_id").
	Columns string
	// Lease is how long a claimed row stays invisible to other senders; it
	// must exceed the longest send (the outbound client's timeouts).
	Lease time.Duration
	// Batch is how many rows one claim takes at most.
	Batch int

	once    sync.Once
	claimQ  string
	retryQ  string
	deleteQ string
}

// Claimed is the part of a claimed row every outbox has.
type Claimed struct {
	ID       string
	Attempts int // this attempt's number, from 1
	Created  time.Time
}

// Row is one claimed row being read: Scan reads id, attempts and
// created_at into Claimed, then the columns of Queue.Columns into dest.
type Row struct {
	Claimed
	rows *sql.Rows
}

// Scan reads the row; call it once.
func (r *Row) Scan(dest ...any) error {
	var created int64
	if err := r.rows.Scan(append([]any{&r.ID, &r.Attempts, &created}, dest...)...); err != nil {
		return err
	}
	r.Created = db.FromTS(created)
	return nil
}

// prepare builds the statements once; the table and column names come from
// code, never from input.
func (q *Queue) prepare() {
	q.once.Do(func() {
		lock := ""
		if q.DB.Flavor == db.Postgres {
			// SKIP LOCKED lets instances claim disjoint rows without waiting;
			// the outer condition is re-checked on the locked row.
			lock = " FOR UPDATE SKIP LOCKED"
		}
		ret := "id, attempts, created_at"
		if q.Columns != "" {
			ret += ", " + q.Columns
		}
		q.claimQ = `UPDATE ` + q.Table + ` SET next_attempt_at = $1, attempts = attempts + 1
	WHERE next_attempt_at <= $2 AND id IN (
		SELECT id FROM ` + q.Table + ` WHERE next_attempt_at <= $2 ORDER BY next_attempt_at LIMIT $3` + lock + `)
	RETURNING ` + ret
		q.retryQ = `UPDATE ` + q.Table + ` SET next_attempt_at = $1, last_error = $2 WHERE id = $3`
		q.deleteQ = `DELETE FROM ` + q.Table + ` WHERE id = $1`
	})
}

// Claim claims the rows of q due at now, in one transaction, and returns
// them as read reads each (read calls Row.Scan once).
func Claim[T any](ctx context.Context, q *Queue, now time.Time, read func(r *Row) (T, error)) ([]T, error) {
	q.prepare()
	var got []T
	err := q.DB.Tx(ctx, func(tx *db.Tx) error {
		got = got[:0]
		rows, err := tx.QueryContext(ctx, q.claimQ, db.TS(now.Add(q.Lease)), db.TS(now), q.Batch)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := read(&Row{rows: rows})
			if err != nil {
				return err
			}
			got = append(got, v)
		}
		return rows.Err()
	})
	return got, err
}

// Retry makes row id due again at next, recording why the attempt failed
// (cut to 500 bytes).
func (q *Queue) Retry(ctx context.Context, id string, next time.Time, cause error) error {
	q.prepare()
	_, err := q.DB.ExecContext(ctx, q.retryQ, db.TS(next), Cause(cause), id)
	return err
}

// Delete removes row id: delivered, given up, or nothing left to send.
func (q *Queue) Delete(ctx context.Context, id string) error {
	q.prepare()
	_, err := q.DB.ExecContext(ctx, q.deleteQ, id)
	return err
}

// Cause is err's text as stored in last_error: at most 500 bytes, "" for nil.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return msg
}

// Backoff is a retry schedule: First after the first failed attempt,
// doubling with each further one, at most Max.
type Backoff struct {
	First, Max time.Duration
	// Jitter spreads each wait uniformly over ±Jitter of itself (0.2 is
	// ±20 %); 0 gives the exact schedule.
	Jitter float64
}

// Delay is the wait after the attempts-th failed attempt.
func (b Backoff) Delay(attempts int) time.Duration {
	d := b.First
	for i := 1; i < attempts && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter > 0 {
		f := 1 + b.Jitter*(2*rand.Float64()-1)
		d = time.Duration(float64(d) * f)
	}
	return d
}

// Policy ends the retries of one row.
type Policy struct {
	MaxAttempts int
	GiveUpAfter time.Duration
}

// Exhausted reports whether a row that has had attempts attempts since
// created should not be tried again at now.
func (p Policy) Exhausted(attempts int, created, now time.Time) bool {
	return attempts >= p.MaxAttempts || now.Sub(created) >= p.GiveUpAfter
}

// Each runs send for each of n claimed rows, at most parallel at once, and
// returns how many reported success, with the errors joined.
func Each(n, parallel int, send func(i int) (ok bool, err error)) (int, error) {
	var (
		mu   sync.Mutex
		sent int
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, max(parallel, 1))
	)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ok, err := send(i)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				sent++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return sent, errors.Join(errs...)
}

// Loop runs a worker's passes: every Interval, and at once on Kick.
type Loop struct {
	Interval time.Duration
	// Pass is one pass; its error is given to OnError unless stopping.
	Pass    func(ctx context.Context) error
	OnError func(err error)

	kickOnce sync.Once
	kick     chan struct{}
}

func (l *Loop) kicks() chan struct{} {
	l.kickOnce.Do(func() { l.kick = make(chan struct{}, 1) })
	return l.kick
}

// Kick asks the running loop for a pass now (something was just queued).
func (l *Loop) Kick() {
	select {
	case l.kicks() <- struct{}{}:
	default:
	}
}

// Start runs passes until the returned stop function is called; stop waits
// for the pass under way.
func (l *Loop) Start() (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	kick := l.kicks()
	go func() {
		defer close(done)
		t := time.NewTicker(l.Interval)
		defer t.Stop()
		for {
			if err := l.Pass(ctx); err != nil && ctx.Err() == nil && l.OnError != nil {
				l.OnError(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-kick:
			}
		}
	}()
	return func() error { cancel(); <-done; return nil }
}
