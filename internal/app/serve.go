package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// shutdownGrace bounds how long a graceful shutdown waits for in-flight
// requests to finish after the listener closes.
const shutdownGrace = 20 * time.Second

// idleTimeout is how long a keep-alive connection may wait for its next
// request.
const idleTimeout = 120 * time.Second

// Serve answers HTTP requests on ln until ctx ends, then shuts down
// gracefully: it stops accepting and drains the requests in flight. The
// caller binds ln, so a port in use is reported before anything is logged
// as listening.
//
// At most HMID_MAX_CONNECTIONS connections are open at once (connLimit: at
// the cap, the keep-alive connection idle longest is closed to make room,
// and only when none is idle do new ones wait in the kernel's accept
// queue). A client has HMID_READ_TIMEOUT to send its headers, and again its
// body (requestLimits, which also sets the handling and write deadlines per
// route, since the WebSocket and the data export stream for longer than
// any server-wide WriteTimeout could allow). An idle keep-alive connection
// is closed after idleTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	maxConns, _, readTimeout, _ := s.Config.Limits()
	limited := newConnLimit(ln, maxConns)
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readTimeout,
		IdleTimeout:       idleTimeout,
		ConnState:         limited.track,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limited) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	s.Log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// connLimit is a listener that keeps at most n connections open, like
// golang.org/x/net/netutil.LimitListener, with one difference: when the cap
// is reached, it closes the keep-alive connection that has waited longest
// for its next request, rather than leaving the new client in the accept
// queue until a connection ends. An idle connection costs its client
// nothing to keep, so without this, clients that each send one request and
// then idle for idleTimeout could hold every connection; a client whose
// idle connection is closed connects again, as HTTP clients do. Connections
// busy with a request are not closed: the read deadline bounds a slow one.
type connLimit struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	done      chan struct{} // closed by Close, to end an Accept waiting for a token
	closeOnce sync.Once

	mu   sync.Mutex
	idle map[net.Conn]time.Time // keep-alive connections between requests, and since when
}

func newConnLimit(ln net.Listener, n int) *connLimit {
	return &connLimit{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{}), idle: map[net.Conn]time.Time{}}
}

// Accept waits for a connection and then for a token for it, making room
// by closing the longest idle connection when there is none. Only a client
// that arrives at the cap closes another's idle connection.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.sem <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
		}
		l.closeIdlest()
		// A token comes back when a connection closes; one may also turn
		// idle meanwhile, so look again now and then.
		select {
		case l.sem <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close closes the listener and ends an Accept waiting for a token.
func (l *connLimit) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// track is the http.Server's ConnState hook: it keeps the set of idle
// keep-alive connections.
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
}

// closeIdlest closes the connection idle longest, if any; its token comes
// back as it closes. The scan is linear, but runs only at the cap.
func (l *connLimit) closeIdlest() {
	l.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

// limitedConn gives its token back once, when it is first closed.
type limitedConn struct {
	net.Conn
	releaseOnce sync.Once
	release     func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(c.release)
	return err
}
