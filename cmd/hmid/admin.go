package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"hmid/internal/app"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/db"
)

// adminCommand groups the administrator subcommands. Alone it only prints
// its usage.
func adminCommand() *command {
	subs := []*command{adminCreateCommand()}
	return &command{
		name: "admin", args: "create --email EMAIL [--password-stdin]", summary: "create a super admin or make a user one",
		detail: "subcommands:\n  create   " + subs[0].summary + "\n\n\"hmid admin create --help\" describes it.",
		run:    dispatch("admin", "usage: hmid admin create --email EMAIL [--password-stdin]", subs),
	}
}

// adminCreateCommand creates a super admin with an email sign-in, or makes
// the user with that address one (for scripts and containers, where the
// setup link of the first start is out of reach).
func adminCreateCommand() *command {
	var email string
	var fromStdin bool
	return &command{
		name: "admin create", args: "--email EMAIL [--password-stdin]", summary: "create a super admin, or make the user with this address one",
		detail: "A new administrator needs a password, read from the first line of standard input with --password-stdin.\n" +
			"For an existing user, a password given this way becomes their email sign-in password and signs them out everywhere.\n" +
			"Example: printf '%s\\n' \"$ADMIN_PASSWORD\" | hmid admin create --email admin@example.com --password-stdin",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&email, "email", "", "the administrator's email address (required)")
			fs.BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
		},
		run: withoutArgs(func(ctx context.Context, e env) error {
			if strings.TrimSpace(email) == "" {
				return usageError{"admin create needs --email"}
			}
			pw := ""
			if fromStdin {
				var err error
				if pw, err = readPassword(e.stdin); err != nil {
					return err
				}
			}
			srv, _, err := open(ctx, e, e.stderr, false)
			if err != nil {
				return err
			}
			defer srv.Close()
			a, err := srv.Setup.CreateOrPromote(ctx, email, pw, audit.Event{SourceService: "backend", UserAgent: "hmid admin create"})
			if err != nil {
				return err
			}
			if a.Created {
				fmt.Fprintf(e.stdout, "created the super admin %s (%s), user id %s; sign in at %s/login\n", a.Username, a.Email, a.UserID, srv.Config.PublicURL)
			} else {
				fmt.Fprintf(e.stdout, "%s (%s, user id %s) is a super admin now\n", a.Username, a.Email, a.UserID)
			}
			return nil
		}),
	}
}

// readPassword reads the first line of r, without its line end.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usageError{"--password-stdin: standard input holds no password"}
	}
	return pw, nil
}

// requireDatabase refuses a database that does not exist yet: hmid keys
// and hmid admin act on the database of an existing hmid, and a command run
// from another directory would otherwise create an empty second one and
// hand out a key or an administrator the running server never sees.
func requireDatabase(ctx context.Context, cfg config.Config) error {
	wd, _ := os.Getwd()
	advice := "run the command where hmid serve runs, or set HMID_DATABASE_URL to its database; hmid serve and hmid migrate create a new database"
	if path := cfg.SQLitePath(); path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			abs, _ := filepath.Abs(path)
			return fmt.Errorf("the database %s does not exist (looked for %s, working directory %s): %s", cfg.DatabaseURL, abs, wd, advice)
		}
		return nil
	}
	if !strings.HasPrefix(cfg.DatabaseURL, "postgres") {
		return nil
	}
	d, err := db.OpenWith(ctx, cfg.DatabaseURL, db.Options{DependencyTimeout: cfg.DependencyTimeout})
	if err != nil {
		return err
	}
	defer d.Close()
	var n int
	if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the PostgreSQL database of HMID_DATABASE_URL holds no hmid database yet (working directory %s): %s", wd, advice)
	}
	return nil
}

// announceSetup prints the setup link of the first administrator while no
// super admin exists, and logs it once.
func announceSetup(ctx context.Context, srv *app.Server, w io.Writer, logger *slog.Logger) error {
	link, err := srv.Setup.Link(ctx, srv.Config.PublicURL)
	if err != nil || link == "" {
		return err
	}
	fmt.Fprintf(w, "\nhmid has no administrator yet. Open this one-time link to create the first one:\n\n    %s\n\n"+
		"It works until it is used or an administrator exists. From a shell instead:\n\n"+
		"    hmid admin create --email you@example.com --password-stdin\n\n", link)
	logger.Info("no administrator yet: open the setup link to create the first one", slog.String("setup_url", link))
	return nil
}
