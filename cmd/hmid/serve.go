package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"hmid/internal/app"
	"hmid/internal/config"
)

func serveCommand() *command {
	return &command{
		name: "serve", args: "", summary: "start the service",
		detail: "Migrates and seeds the database, then answers HTTP on HMID_ADDR until SIGINT or SIGTERM,\n" +
			"and /metrics on HMID_METRICS_ADDR when that is set. The first start on an empty database\n" +
			"prints a system API key once on standard output.",
		run: func(ctx context.Context, e env, fs *flag.FlagSet) error {
			if err := noArgs(fs); err != nil {
				return err
			}
			return serve(ctx, e)
		},
	}
}

func migrateCommand() *command {
	return &command{
		name: "migrate", args: "", summary: "apply database migrations and seed, then exit",
		run: func(ctx context.Context, e env, fs *flag.FlagSet) error {
			if err := noArgs(fs); err != nil {
				return err
			}
			srv, _, err := open(ctx, e, e.stdout, true)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintln(e.stdout, "database migrated and seeded")
			return nil
		},
	}
}

func versionCommand() *command {
	return &command{
		name: "version", args: "", summary: "print the version",
		run: func(_ context.Context, e env, fs *flag.FlagSet) error {
			if err := noArgs(fs); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "hmid", app.Version)
			return nil
		},
	}
}

// open reads the configuration and builds the server (migrating and seeding
// the database). banner receives the first-start system-key message.
// Without create, a database that does not exist yet is refused (a command
// run from the wrong directory must not start an empty second one).
func open(ctx context.Context, e env, banner io.Writer, create bool) (*app.Server, *slog.Logger, error) {
	cfg, err := config.FromEnv(e.getenv)
	if err != nil {
		return nil, nil, err
	}
	if !create {
		if err := requireDatabase(ctx, cfg); err != nil {
			return nil, nil, err
		}
	}
	app.TuneRuntime(e.getenv)
	logger := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: cfg.Level()}))
	srv, err := app.New(ctx, cfg, app.Options{Logger: logger, Stdout: banner})
	if err != nil {
		return nil, nil, err
	}
	return srv, logger, nil
}

// serve builds the server, binds its listeners and serves until ctx ends.
// "listening" is logged only once every port is bound, so a port in use is
// an error before anything claims to be up.
func serve(ctx context.Context, e env) error {
	srv, logger, err := open(ctx, e, e.stdout, true)
	if err != nil {
		return err
	}
	defer srv.Close()
	cfg := srv.Config
	ln, err := listen(cfg.Addr, "HMID_ADDR")
	if err != nil {
		return err
	}
	var mln net.Listener
	if cfg.MetricsAddr != "" {
		if mln, err = listen(cfg.MetricsAddr, "HMID_METRICS_ADDR"); err != nil {
			ln.Close()
			return err
		}
	}
	attrs := []any{slog.String("addr", ln.Addr().String()), slog.String("public_url", cfg.PublicURL), slog.String("version", app.Version)}
	if mln != nil {
		attrs = append(attrs, slog.String("metrics_addr", mln.Addr().String()))
	}
	logger.Info("hmid listening", attrs...)
	if err := announceSetup(ctx, srv, e.stdout, logger); err != nil {
		ln.Close()
		if mln != nil {
			mln.Close()
		}
		return err
	}

	// Either server failing stops the other, so the process exits and its
	// supervisor restarts it whole.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln) })
	if mln != nil {
		g.Go(func() error { return serveMetrics(gctx, mln, srv.Metrics.Handler(), logger) })
	}
	return g.Wait()
}

// listen binds addr and turns "address already in use" into a message that
// names the variable to change.
func listen(addr, variable string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s: the port is already in use (is another hmid running?); stop that process or set %s to a free address", addr, variable)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s (%s): %w", addr, variable, err)
	}
	return ln, nil
}

// metricsTimeouts bound a scrape: the exposition is small and local, so a
// slow client is cut off rather than held.
const (
	metricsReadTimeout  = 10 * time.Second
	metricsWriteTimeout = 30 * time.Second
	metricsIdleTimeout  = 60 * time.Second
)

// serveMetrics answers GET /metrics (and nothing else) on ln, without
// authentication: the listener of its own is meant for a private network or
// loopback, where the scraper lives.
func serveMetrics(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: metricsReadTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics listener: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), metricsWriteTimeout)
	defer cancel()
	return hs.Shutdown(sctx)
}
