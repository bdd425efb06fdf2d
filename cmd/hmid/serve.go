package main

import (
	"context"
	"errors"
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
	"hmid/internal/telemetry"
)

func serveCommand() *command {
	return &command{
		name: "serve", args: "", summary: "start the service",
		detail: "Migrates and seeds the database, then answers HTTP on HMID_ADDR until SIGINT or SIGTERM,\n" +
			"and /metrics on HMID_METRICS_ADDR when that is set. The first start on an empty database\n" +
			"prints a system API key once on standard output.",
		run: withoutArgs(func(ctx context.Context, e env) error {
			return serve(ctx, e)
		}),
	}
}

func migrateCommand() *command {
	return &command{
		name: "migrate", args: "", summary: "apply database migrations and seed, then exit",
		run: withoutArgs(func(ctx context.Context, e env) error {
			srv, _, err := open(ctx, e, e.stdout, true)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintln(e.stdout, "database migrated and seeded")
			return nil
		}),
	}
}

func versionCommand() *command {
	return &command{
		name: "version", args: "", summary: "print the version",
		run: withoutArgs(func(_ context.Context, e env) error {
			fmt.Fprintln(e.stdout, "hmid", app.Version)
			return nil
		}),
	}
}

// open reads the configuration and builds the server (migrating and seeding
// the database). banner receives the first-start system-key message.
// Without create, a database that does not exist yet is refused (a command
// run from the wrong directory must not start an empty second one).
func open(ctx context.Context, e env, banner io.Writer, create bool) (*app.Server, *slog.Logger, error) {
	cfg, logger, err := configure(e)
	if err != nil {
		return nil, nil, err
	}
	if !create {
		if err := requireDatabase(ctx, cfg); err != nil {
			return nil, nil, err
		}
	}
	srv, err := app.New(ctx, cfg, app.Options{Logger: logger, Stdout: banner})
	if err != nil {
		return nil, nil, err
	}
	return srv, logger, nil
}

// configure reads the configuration, tunes the runtime and makes the
// logger: JSON lines, or key=value text with HMID_LOG_FORMAT=text.
func configure(e env) (config.Config, *slog.Logger, error) {
	cfg, err := config.FromEnv(e.getenv)
	if err != nil {
		return cfg, nil, err
	}
	app.TuneRuntime(e.getenv)
	opts := &slog.HandlerOptions{Level: cfg.Level()}
	var h slog.Handler = slog.NewJSONHandler(e.stderr, opts)
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(e.stderr, opts)
	}
	return cfg, slog.New(h), nil
}

// serve builds the server, binds its listeners and serves until ctx ends.
// "listening" is logged only once every port is bound, so a port in use is
// an error before anything claims to be up. Traces are exported when the
// OTEL_* variables ask for it (package telemetry): tracing starts before
// the server is built, since the database, the cache and the outbound
// clients add their spans only when it is on, and the spans still buffered
// are exported after the server has closed.
func serve(ctx context.Context, e env) error {
	cfg, logger, err := configure(e)
	if err != nil {
		return err
	}
	tracing, err := telemetry.Start(ctx, cfg.Telemetry, app.Version)
	if err != nil {
		return err
	}
	defer flushTraces(tracing, logger)
	srv, err := app.New(ctx, cfg, app.Options{Logger: logger, Stdout: e.stdout})
	if err != nil {
		return err
	}
	defer srv.Close()
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
	if cfg.Telemetry.Enabled() {
		attrs = append(attrs, slog.String("traces_endpoint", telemetry.Redacted(cfg.Telemetry.Endpoint)))
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

// flushTraces exports the spans still buffered, within a few seconds.
func flushTraces(t *telemetry.Tracing, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("exporting the last traces failed", slog.String("error", err.Error()))
	}
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
