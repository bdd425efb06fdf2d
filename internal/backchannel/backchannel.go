// Package backchannel delivers OpenID Connect Back-Channel Logout 1.0
// logout tokens reliably. When a browser session ends, by any path (logout,
// session revocation, ban, password change or reset, account deletion), each
// client that got tokens from that session and registered a
// backchannel_logout_uri is POSTed a signed logout token (§2.5).
//
// Nothing that ends a session has to know about this: the OAuth provider
// records which client got tokens from which session (oauth_session_grants),
// triggers on sessions queue each session revoked or deleted with grants
// open (oauth_session_ends), and the worker reads that queue on every pass
// (and, once a minute, joins every open grant with its session, for the
// sessions that expired), marks the grant records ended with a conditional
// UPDATE and queues one outbox row per client in the same transaction (the
// statements are package oauth/store's, which owns the OAuth tables). Deliver claims due outbox rows through package
// outbox (the mechanism webhooks share: FOR UPDATE SKIP LOCKED on
// PostgreSQL, so several instances send each row once; SQLite has one
// writer), pushing their next attempt past a lease, then sends them outside
// any transaction. A 2xx answer deletes the row; anything else
// schedules a retry with exponential backoff, until MaxAttempts or
// GiveUpAfter, when the row is dropped and the failure logged. Rows persist,
// so a restart loses nothing: a row whose sender died becomes due again when
// its lease runs out.
//
// The URIs are the clients' choice, so every POST goes through the outbound
// client (package outbound): internal addresses are refused at dial time
// unless HMID_OUTBOUND_ALLOW_CIDRS allows them, and such a refusal drops the
// row at once, as no retry would change it.
package backchannel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/outbound"
	"hmid/internal/outbox"
)

// Delivery limits.
const (
	// Lease is how long a claimed row stays invisible to other senders.
	Lease = 2 * time.Minute
	// FirstRetry is the wait after the first failed attempt; each further
	// failure doubles it, up to MaxBackoff.
	FirstRetry = 10 * time.Second
	MaxBackoff = time.Hour
	// MaxAttempts and GiveUpAfter end the retries of one logout token.
	MaxAttempts = 15
	GiveUpAfter = 24 * time.Hour
	// DefaultInterval is how often the worker looks for ended sessions and
	// due rows when nothing kicks it.
	DefaultInterval = 2 * time.Second
	// batch is how many rows one pass claims; sends runs that many at once at most.
	batch = 32
	sends = 8
	// FullSweepInterval is how often the running worker joins every open
	// grant with its session (Sweep); between, it reads only the sessions
	// queued as ended.
	FullSweepInterval = time.Minute
	// keepEnded is how long ended grant records are kept before the sweep
	// deletes them (they only serve the sid of a late refresh).
	keepEnded = 24 * time.Hour
)

// Signer signs the logout token of one notification (the OAuth provider).
type Signer interface {
	// LogoutToken returns the client's back-channel logout URI and a logout
	// token for the session; an apperr NotFound when the client no longer
	// takes logout tokens (deleted, deactivated, unregistered).
	LogoutToken(ctx context.Context, clientID, userID, sessionID, jti string, now time.Time) (uri, token string, err error)
}

// Worker sweeps ended sessions into the outbox and delivers it.
type Worker struct {
	DB     *db.DB
	Clock  clock.Clock
	Log    *slog.Logger
	Signer Signer
	// HTTP sends the logout tokens: the outbound client (package outbound),
	// whose short timeouts (Back-Channel Logout 1.0 §2.8 leaves them to the
	// OP) keep a slow RP from holding a lease, and which follows no redirect
	// (§2.8: the RP answers 200; following one would also carry the token to
	// a host the client did not register).
	HTTP *http.Client
	// Interval is the pause between passes (New: DefaultInterval).
	Interval time.Duration

	loop     outbox.Loop
	store    *store.Store // the session grants and the logout queue
	queue    *outbox.Queue
	refused  atomic.Int64
	lastFull time.Time // when the running worker's last full Sweep began
}

// schedule and giveUp are the retry rules of one logout token.
var (
	schedule = outbox.Backoff{First: FirstRetry, Max: MaxBackoff}
	giveUp   = outbox.Policy{MaxAttempts: MaxAttempts, GiveUpAfter: GiveUpAfter}
)

// Refused returns how many logout tokens this worker dropped because the
// client's URI led to an address the outbound rule refuses (an attempt at
// server-side request forgery, or an RP the operator must allow).
func (w *Worker) Refused() int64 { return w.refused.Load() }

// New returns a Worker that sends with client (outbound.Policy.Client)
// every DefaultInterval.
func New(d *db.DB, c clock.Clock, log *slog.Logger, s Signer, client *http.Client) *Worker {
	return &Worker{
		DB: d, Clock: c, Log: log, Signer: s, Interval: DefaultInterval, HTTP: client, store: store.New(d),
		queue: &outbox.Queue{DB: d, Table: "oauth_backchannel_outbox", Columns: "client_id, user_id, session_id", Lease: Lease, Batch: batch},
	}
}

// Kick asks the running worker for a pass now (a session just ended here).
func (w *Worker) Kick() { w.loop.Kick() }

// Start runs passes every Interval, and on Kick, until the returned stop
// function is called; stop waits for the pass under way.
func (w *Worker) Start() (stop func() error) {
	w.loop.Interval = w.Interval
	w.loop.Pass = w.pass
	w.loop.OnError = func(err error) { w.Log.Error("backchannel logout: pass failed", "err", err) }
	return w.loop.Start()
}

// RunOnce sweeps every ended session into the outbox (Sweep) and delivers
// what is due; it returns how many logout tokens were delivered.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	if _, err := w.Sweep(ctx); err != nil {
		return 0, err
	}
	return w.Deliver(ctx)
}

// pass is one pass of the running worker. The sessions queued as ended
// (oauth_session_ends) are swept on every pass; the full Sweep, which joins
// every open grant with its session and so costs in proportion to the
// sessions in use, runs at the first pass and then once every
// FullSweepInterval, for the sessions that merely expired and for a grant
// recorded after its session ended.
func (w *Worker) pass(ctx context.Context) error {
	var err error
	if w.lastFull.IsZero() || time.Since(w.lastFull) >= FullSweepInterval {
		start := time.Now()
		if _, err = w.Sweep(ctx); err == nil {
			w.lastFull = start
		}
	} else {
		_, err = w.sweepQueued(ctx, w.Clock.Now())
	}
	if err != nil {
		return err
	}
	_, err = w.Deliver(ctx)
	return err
}

// Sweep finds sessions that have grant records still open and that are
// revoked or deleted, and queues a logout token for each client of theirs
// that registered a back-channel logout URI. Sessions that merely expired
// are closed without notification: nobody ended them, and the clients'
// own token lifetimes apply. It returns how many outbox rows it queued.
func (w *Worker) Sweep(ctx context.Context) (int, error) {
	now := w.Clock.Now()
	queued, err := w.sweepQueued(ctx, now)
	if err != nil {
		return queued, err
	}
	list, err := w.store.EndedSessions(ctx, now)
	if err != nil {
		return queued, err
	}
	n, err := w.endAll(ctx, list, now)
	queued += n
	if err != nil {
		return queued, err
	}
	return queued, w.store.DeleteEndedSessionGrants(ctx, now.Add(-keepEnded))
}

// sweepQueued ends the sessions the database queued as ended with grants
// open (oauth_session_ends, filled by triggers on sessions): revoked or
// deleted, so their clients are notified.
func (w *Worker) sweepQueued(ctx context.Context, now time.Time) (int, error) {
	list, err := w.store.QueuedSessionEnds(ctx)
	if err != nil {
		return 0, err
	}
	return w.endAll(ctx, list, now)
}

// endAll ends each session of list (endSession) and asks for a pass at once
// when there was any, to deliver what it queued.
func (w *Worker) endAll(ctx context.Context, list []store.EndedSession, now time.Time) (int, error) {
	queued := 0
	for _, e := range list {
		n, err := w.endSession(ctx, e.SessionID, e.Notify, now)
		if err != nil {
			return queued, err
		}
		queued += n
	}
	if len(list) > 0 {
		w.Kick()
	}
	return queued, nil
}

// endSession closes the open grant records of one session and, when notify,
// queues a logout token per client, in one transaction. The conditional
// UPDATE decides which instance does it: a second one finds no open record.
func (w *Worker) endSession(ctx context.Context, sessionID string, notify bool, now time.Time) (int, error) {
	queued := 0
	err := w.DB.Tx(ctx, func(tx *db.Tx) error {
		queued = 0
		users, err := w.store.EndSessionGrants(ctx, tx, sessionID, now)
		if err != nil || !notify {
			return err
		}
		for client, user := range users {
			ok, err := w.store.QueueLogout(ctx, tx, store.Logout{ClientID: client, UserID: user, SessionID: sessionID}, now)
			if err != nil {
				return err
			}
			if ok {
				queued++
			}
		}
		return nil
	})
	return queued, err
}

// job is one claimed outbox row.
type job struct {
	outbox.Claimed
	client, user, session string
}

// Deliver claims the due outbox rows and sends them; it returns how many
// were delivered (answered 2xx).
func (w *Worker) Deliver(ctx context.Context) (int, error) {
	jobs, err := outbox.Claim(ctx, w.queue, w.Clock.Now(), func(r *outbox.Row) (job, error) {
		var j job
		err := r.Scan(&j.client, &j.user, &j.session)
		j.Claimed = r.Claimed
		return j, err
	})
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	return outbox.Each(len(jobs), sends, func(i int) (bool, error) { return w.deliver(ctx, jobs[i]) })
}

// deliver sends one claimed row and records the outcome. ok reports a 2xx
// answer; err is a failure to record it (the row then becomes due again
// when its lease ends).
func (w *Worker) deliver(ctx context.Context, j job) (ok bool, err error) {
	now := w.Clock.Now()
	uri, tok, err := w.Signer.LogoutToken(ctx, j.client, j.user, j.session, j.ID, now)
	if apperr.Is(err, apperr.NotFound) {
		// The client is gone or stopped taking logout tokens: nothing to send.
		return false, w.queue.Delete(ctx, j.ID)
	}
	if err == nil {
		err = w.post(ctx, uri, tok)
		if err == nil {
			err = w.queue.Delete(ctx, j.ID)
			return err == nil, err
		}
	}
	if refused := (*outbound.RefusedError)(nil); errors.As(err, &refused) {
		// The URI leads to an internal address the operator did not allow:
		// no retry would change that (docs/decisions.md, Outbound calls to URLs
		// users supply).
		w.Log.Error("backchannel logout: delivery refused, the client's URI leads to an internal address", "client_id", j.client,
			"logout_id", j.ID, "err", err.Error())
		derr := w.queue.Delete(ctx, j.ID)
		if derr == nil {
			w.refused.Add(1)
		}
		return false, derr
	}
	if giveUp.Exhausted(j.Attempts, j.Created, now) {
		w.Log.Error("backchannel logout: delivery given up", "client_id", j.client, "logout_id", j.ID,
			"attempts", j.Attempts, "err", err.Error())
		return false, w.queue.Delete(ctx, j.ID)
	}
	w.Log.Warn("backchannel logout: delivery failed, will retry", "client_id", j.client, "logout_id", j.ID,
		"attempts", j.Attempts, "err", err.Error())
	return false, w.queue.Retry(ctx, j.ID, now.Add(Backoff(j.Attempts)), err)
}

// Backoff is the wait after the attempts-th failed attempt: FirstRetry,
// doubling, at most MaxBackoff (no jitter: sessions end one by one, not in
// bursts that would retry together).
func Backoff(attempts int) time.Duration { return schedule.Delay(attempts) }

// post sends the logout token as the logout_token form parameter
// (Back-Channel Logout 1.0 §2.5); a 2xx answer is success (§2.8).
func (w *Worker) post(ctx context.Context, uri, tok string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, strings.NewReader(url.Values{"logout_token": {tok}}.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := w.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("the client answered %d", res.StatusCode)
	}
	return nil
}
