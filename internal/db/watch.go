package db

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotAnswering is the error of every read, write and connect on
// PostgreSQL while the watchdog holds it frozen: it took a connection and
// never answered, and a probe on a connection of its own went unanswered
// too. It is a net.Error whose Timeout is true, so apperr and IsUnavailable
// make it a 503.
var ErrNotAnswering error = notAnswering{}

type notAnswering struct{}

func (notAnswering) Error() string   { return "db: PostgreSQL is not answering" }
func (notAnswering) Timeout() bool   { return true }
func (notAnswering) Temporary() bool { return true }

// ProbeApplicationName is the application_name of the watchdog's own
// connection (after the URL's application_name, if it sets one).
const ProbeApplicationName = "hmid-watchdog"

// watchdog bounds how long anyone waits for a PostgreSQL server that stopped
// answering without closing its connections: a process stopped with
// SIGSTOP, or a network that swallows packets. The kernel of a stopped
// server still accepts connections and acknowledges bytes, so neither the
// connect timeout nor TCP notices; only a reply that does not come does.
//
// A deadline per statement would notice it too, but would also cut a
// statement that is slow for good reasons (a migration, a purge, a large
// export) and cost a timer for every query on the hot path. The watchdog
// instead looks at the connections themselves: each records when it started
// waiting in Read. When one has waited longer than suspect, the watchdog
// asks the server, on a connection of its own, for an empty query. A server
// that answers it is alive, and the slow statement goes on. A server that
// does not answer within probeTimeout is frozen: every connection's pending
// read and write fails at once with ErrNotAnswering, new connections fail
// before dialling, and the watchdog probes each tick until the server
// answers again, which thaws the pool without a restart.
//
// With HMID_DEPENDENCY_TIMEOUT as bound, a statement sent to a frozen server
// fails within suspect + tick + probeTimeout, 0.65 of the bound (0.75 when a
// probe begun just before the freeze was still out), leaving the rest of
// the bound to answer the request; one sent while the server is held frozen
// fails at once.
type watchdog struct {
	suspect      time.Duration // a read waiting this long makes the watchdog ask the server
	probeTimeout time.Duration // the server's time to answer that question
	tick         time.Duration // how often the watchdog looks

	dial  pgconn.DialFunc // the plain dialer, for pool connections and the probe
	probe *pgconn.Config  // the probe connection's configuration

	frozen atomic.Bool
	mu     sync.Mutex
	conns  map[*watchedConn]struct{}

	probeConn *pgconn.PgConn     // owned by the loop
	ctx       context.Context    // ends when Close is called
	cancel    context.CancelFunc // ends ctx
	done      chan struct{}      // closed when the loop has returned
}

// newWatchdog watches the connections that cfg's DialFunc will open from now
// on and starts its loop. Close stops it.
func newWatchdog(cfg *pgconn.Config, bound time.Duration) *watchdog {
	w := &watchdog{
		suspect:      bound / 4,
		probeTimeout: bound * 7 / 20,
		tick:         bound / 20,
		dial:         cfg.DialFunc,
		conns:        map[*watchedConn]struct{}{},
		done:         make(chan struct{}),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.probe = cfg.Copy()
	w.probe.ConnectTimeout = w.probeTimeout
	w.probe.OnNotice, w.probe.OnNotification = nil, nil
	// Named in pg_stat_activity, so an operator can tell it from the pool.
	if w.probe.RuntimeParams == nil {
		w.probe.RuntimeParams = map[string]string{}
	}
	w.probe.RuntimeParams["application_name"] = strings.TrimSpace(w.probe.RuntimeParams["application_name"] + " " + ProbeApplicationName)
	cfg.DialFunc = w.dialWatched
	go w.loop()
	return w
}

// Close stops the loop and closes the probe connection.
func (w *watchdog) Close() {
	w.cancel()
	<-w.done
}

// dialWatched is the pool's DialFunc: the plain dial, refused while the
// server is held frozen (a black-holed network would otherwise keep the
// caller for the dial timeout), its connection watched.
func (w *watchdog) dialWatched(ctx context.Context, network, addr string) (net.Conn, error) {
	if w.frozen.Load() {
		return nil, ErrNotAnswering
	}
	c, err := w.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	wc := &watchedConn{Conn: c, w: w}
	w.mu.Lock()
	w.conns[wc] = struct{}{}
	w.mu.Unlock()
	return wc, nil
}

// watchedConn is a pool connection that records when it began to wait for
// the server and fails at once while the server is held frozen.
type watchedConn struct {
	net.Conn
	w       *watchdog
	waiting atomic.Int64 // Unix nanoseconds when the pending Read began; 0 when none is
}

// Read reads from the server, noting how long it waits.
func (c *watchedConn) Read(b []byte) (int, error) {
	if c.w.frozen.Load() {
		return 0, ErrNotAnswering
	}
	c.waiting.Store(time.Now().UnixNano())
	n, err := c.Conn.Read(b)
	c.waiting.Store(0)
	if err != nil && c.w.frozen.Load() {
		err = ErrNotAnswering
	}
	return n, err
}

// Write writes to the server unless it is held frozen.
func (c *watchedConn) Write(b []byte) (int, error) {
	if c.w.frozen.Load() {
		return 0, ErrNotAnswering
	}
	return c.Conn.Write(b)
}

// Close closes the connection and stops watching it.
func (c *watchedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}

// oldestWait returns when the longest pending read began, zero when none is.
func (w *watchdog) oldestWait() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var oldest int64
	for c := range w.conns {
		if t := c.waiting.Load(); t != 0 && (oldest == 0 || t < oldest) {
			oldest = t
		}
	}
	if oldest == 0 {
		return time.Time{}
	}
	return time.Unix(0, oldest)
}

// freeze holds the server frozen and ends every connection's pending read
// and write: their callers get ErrNotAnswering now.
func (w *watchdog) freeze() {
	w.frozen.Store(true)
	past := time.Unix(1, 0)
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.conns {
		_ = c.SetDeadline(past)
	}
}

func (w *watchdog) loop() {
	defer close(w.done)
	defer w.dropProbe()
	Every(w.ctx, w.tick, func() {
		if w.frozen.Load() {
			if w.ask() == nil {
				w.frozen.Store(false)
			}
			return
		}
		if oldest := w.oldestWait(); oldest.IsZero() || time.Since(oldest) < w.suspect {
			return
		}
		if err := w.ask(); err != nil && w.ctx.Err() == nil { // a probe cut by Close is no freeze
			w.freeze()
		}
	})
}

// ask sends the server an empty query on the probe connection, connecting
// it first if needed, and reports whether it answered within probeTimeout.
// An error the server sent (too many connections, say) is an answer: the
// server is alive, and its busy connections are left alone. A kept probe
// connection that the server or the network closed meanwhile
// (idle_session_timeout, a restart) is replaced once within the same time.
func (w *watchdog) ask() error {
	ctx, cancel := context.WithTimeout(w.ctx, w.probeTimeout)
	defer cancel()
	var pe *pgconn.PgError
	for fresh := false; ; fresh = true {
		if w.probeConn == nil || w.probeConn.IsClosed() {
			c, err := pgconn.ConnectConfig(ctx, w.probe)
			if errors.As(err, &pe) {
				return nil
			}
			if err != nil {
				return err
			}
			w.probeConn, fresh = c, true
		}
		err := w.probeConn.Ping(ctx)
		if err == nil {
			return nil
		}
		w.dropProbe()
		if errors.As(err, &pe) {
			return nil
		}
		if fresh || ctx.Err() != nil {
			return errors.Join(ErrNotAnswering, err)
		}
	}
}

// dropProbe closes the probe connection, if any, without waiting for a
// server that may not answer.
func (w *watchdog) dropProbe() {
	if w.probeConn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.tick)
	defer cancel()
	_ = w.probeConn.Close(ctx)
	w.probeConn = nil
}
