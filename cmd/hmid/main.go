// Command hmid runs the hmid identity provider and data API.
//
// Usage:
//
//	hmid [serve]              start the service (the default)
//	hmid migrate              apply database migrations and seed, then exit
//	hmid keys create --system create a new system API key and print it
//	hmid version              print the version
//
// Configuration comes from HMID_* environment variables; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"hmid/internal/app"
	"hmid/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hmid:", err)
		os.Exit(1)
	}
}

// run is main without globals, so tests can drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "hmid", app.Version)
		return nil
	case "serve", "migrate", "keys":
	case "help", "--help", "-h":
		fmt.Fprintln(stdout, "usage: hmid [serve | migrate | keys create --system | version]")
		return nil
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, keys or version)", cmd)
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	app.TuneRuntime(getenv)
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.LogLevel)))
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	srv, err := app.New(ctx, cfg, app.Options{Logger: logger, Stdout: stdout})
	if err != nil {
		return err
	}
	defer srv.Close()

	switch cmd {
	case "migrate":
		fmt.Fprintln(stdout, "database migrated and seeded")
		return nil
	case "keys":
		if len(args) < 2 || args[0] != "create" || args[1] != "--system" {
			return errors.New("usage: hmid keys create --system [name]")
		}
		name := "System"
		if len(args) > 2 {
			name = args[2]
		}
		key, err := srv.Access.CreateSystemKey(ctx, name, "created with hmid keys create --system")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, key)
		return nil
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	logger.Info("hmid listening", slog.String("addr", ln.Addr().String()), slog.String("public_url", cfg.PublicURL), slog.String("version", app.Version))
	return srv.Serve(ctx, ln)
}
