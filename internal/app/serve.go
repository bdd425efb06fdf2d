package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// shutdownGrace bounds how long a graceful shutdown waits for in-flight
// requests to finish after the listener closes.
const shutdownGrace = 20 * time.Second

// Serve answers HTTP requests on ln until ctx ends, then shuts down
// gracefully: it stops accepting and drains the requests in flight. The
// caller binds ln, so a port in use is reported before anything is logged
// as listening.
//
// At most HMID_MAX_CONNECTIONS connections are open at once (past that,
// new ones wait in the kernel's accept queue), and a client has
// HMID_READ_TIMEOUT to send its headers; the body and response deadlines
// are set per request (requestLimits), because the WebSocket and the data
// export stream for longer than any server-wide WriteTimeout could allow.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	maxConns, _, readTimeout, _ := s.Config.Limits()
	ln = netutil.LimitListener(ln, maxConns)
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readTimeout,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
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
