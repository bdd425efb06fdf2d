// Package app builds the hmid server from its configuration: it opens the
// database and cache, migrates and seeds, constructs every area with explicit
// dependencies, and mounts the routes listed in routes.go.
package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-chi/chi/v5"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hmid/internal/access"
	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/events"
	"hmid/internal/geoip"
	"hmid/internal/httpx"
	"hmid/internal/mail"
	"hmid/internal/policy"
	"hmid/internal/secretbox"
	"hmid/internal/setup"
	"hmid/internal/upstream"
	"hmid/internal/users"
)

// Version is the service version reported by health and info
// (<major>.<minor>.<patch>). A release build stamps it with
// -ldflags "-X hmid/internal/app.Version=…" (the Dockerfile does).
var Version = "1.0.0"

// Options are the parts of a Server that tests replace.
type Options struct {
	Clock       clock.Clock // default: the system clock
	Logger      *slog.Logger
	Stdout      io.Writer // where the first-start system key is printed
	CachePrefix string    // prefix of every Redis key (tests isolate themselves with it)
}

// Server is a built hmid service.
type Server struct {
	Config  config.Config
	DB      *db.DB
	Cache   cache.Cache
	Clock   clock.Clock
	Log     *slog.Logger
	Box     *secretbox.Box
	Epoch   authn.Epoch
	Guard   *authn.Guard
	Audit   *audit.Writer
	Limiter cache.Limiter
	Metrics *httpx.Metrics
	areaHandlers
	Started time.Time

	Mail   mail.Sender
	GeoIP  *geoip.Resolver  // nil without HMID_GEOIP_DB
	Events events.Publisher // the real-time channel, once wired

	// Contracts between areas of the sign-in (set by the areas that implement them).
	SecondFactor authflow.SecondFactor // two-factor authentication, for the login step
	Consents     authflow.Consents     // the OAuth provider, for the consent page

	Access *access.Service

	// Policy is the snapshot of the operator's policies (session, token
	// lifetimes, passwords, login throttle), kept current on every instance.
	Policy *policy.Store

	// Upstream holds the configured upstream sign-in providers (none when
	// no HMID_LOGIN_* variable is set).
	Upstream *upstream.Registry

	// SystemKey is the system API key created at this start, if one was ("" otherwise).
	SystemKey string

	// Setup issues the setup link of the first administrator and creates
	// administrators (hmid admin create).
	Setup *setup.Service

	handler http.Handler
	router  chi.Router
	limits  *requestLimits
	closers []func() error
}

// New builds a Server: opens stores, migrates, seeds and mounts routes.
func New(ctx context.Context, cfg config.Config, opt Options) (*Server, error) {
	if opt.Clock == nil {
		opt.Clock = clock.System{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.CachePrefix == "" {
		opt.CachePrefix = "hmid:"
	}
	s := &Server{Config: cfg, Clock: opt.Clock, Log: opt.Logger, Started: time.Now()}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	_, maxInFlight, readTimeout, requestTimeout := cfg.Limits()
	// A statement may not outlive its request on the server either.
	database, err := db.OpenWith(ctx, cfg.DatabaseURL, db.Options{SQLiteSync: cfg.SQLiteSync, StatementTimeout: requestTimeout, DependencyTimeout: cfg.DependencyTimeout})
	if err != nil {
		return nil, err
	}
	s.DB = database
	s.closers = append(s.closers, database.Close)
	if err := database.Migrate(ctx); err != nil {
		return nil, err
	}

	key, err := loadSecretKey(cfg)
	if err != nil {
		return nil, err
	}
	if s.Box, err = secretbox.New(key); err != nil {
		return nil, err
	}

	if err := s.openCache(ctx, cfg, opt); err != nil {
		return nil, err
	}
	s.Audit = &audit.Writer{DB: database, Clock: s.Clock}
	if cfg.GeoIPDB != "" {
		if s.GeoIP, err = geoip.Open(cfg.GeoIPDB); err != nil {
			return nil, fmt.Errorf("HMID_GEOIP_DB: %w", err)
		}
		s.closers = append(s.closers, s.GeoIP.Close)
		s.Audit.Locate = func(ip string) (string, string, string, string) {
			l := s.GeoIP.Lookup(ip)
			return l.CountryCode, l.CountryName, l.City, l.Region
		}
	}
	if cfg.SMTPURL != "" {
		if s.Mail, err = mail.NewSMTPSender(cfg.SMTPURL, cfg.MailFrom); err != nil {
			return nil, err
		}
	} else {
		s.Mail = mail.NewOutboxSender(database, s.Log, s.Clock.Now)
	}
	s.Guard = &authn.Guard{Resolver: &authn.Resolver{DB: database, Clock: s.Clock, Epoch: s.Epoch}}
	s.Metrics = httpx.NewMetrics()

	s.Access = &access.Service{DB: database, Clock: s.Clock, Epoch: s.Epoch, Audit: s.Audit}
	// The password rule is the login service's, read when a password is
	// checked (that service is built with the areas, after the seeding).
	s.Setup = &setup.Service{DB: database, Clock: s.Clock, Audit: s.Audit, Epoch: s.Epoch,
		CheckPassword: func(ctx context.Context, pw string) error {
			if s.authAPI == nil {
				return nil
			}
			return s.authAPI.S.CheckNewPassword(ctx, pw)
		}}
	if err := s.startPolicy(ctx); err != nil {
		return nil, err
	}

	if err := s.seed(ctx, opt.Stdout); err != nil {
		return nil, err
	}
	if err := s.buildAreas(ctx); err != nil {
		return nil, err
	}
	s.limits = newRequestLimits(maxInFlight, readTimeout, requestTimeout)
	s.router = s.routes()
	// Outermost, the error pages: a browser's navigation that meets an
	// error anywhere, the panic recovery of Base included, gets an HTML page
	// instead of the JSON every area answers (web.Handler.ErrorPages).
	s.handler = s.webPages.ErrorPages(httpx.Base(httpx.BaseConfig{
		PublicURL:      cfg.PublicURL,
		TrustedProxies: cfg.TrustedProxies,
		Logger:         s.Log,
		AccessLog:      !cfg.DisableAccessLog,
		Metrics:        s.Metrics,
	}, s.limits.wrap(httpx.Boundary(s.router, "/v1/oauth/authorize", "/v1/oauth/token", "/v1/oauth/revoke", "/v1/oauth/userinfo", "/v1/oauth/introspect"))))
	s.handler = s.traced(s.handler)
	ok = true
	return s, nil
}

// openCache sets the shared cache, the authentication epoch and the rate
// limiter: Redis when HMID_REDIS_URL is set; otherwise memory, with the epoch
// in the database on PostgreSQL so several instances still share it.
func (s *Server) openCache(ctx context.Context, cfg config.Config, opt Options) error {
	switch {
	case cfg.RedisURL != "":
		rc, err := cache.NewRedisWith(ctx, cfg.RedisURL, opt.CachePrefix, cache.RedisOptions{Timeout: cfg.DependencyTimeout})
		if err != nil {
			return err
		}
		s.Cache = rc
		s.closers = append(s.closers, rc.Close)
		s.Epoch = &authn.CacheEpoch{Cache: rc}
		rl := cache.NewRedisLimiter(rc)
		if _, system := s.Clock.(clock.System); !system {
			// An injected clock (tests) also drives the sliding windows;
			// the system clock leaves them on Redis's TIME, which every
			// instance shares.
			rl.Now = s.Clock.Now
		}
		s.Limiter = rl
	case s.DB.Flavor == db.Postgres:
		s.Cache = cache.NewMemory(s.Clock.Now)
		s.Epoch = authn.DBEpoch{DB: s.DB}
	default:
		s.Cache = cache.NewMemory(s.Clock.Now)
		s.Epoch = &authn.MemoryEpoch{}
	}
	if s.Limiter == nil {
		s.Limiter = cache.NewMemoryLimiter(s.Clock.Now)
	}
	return nil
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close releases every resource, newest first.
func (s *Server) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// onClose registers a function run by Close (background jobs, connections).
func (s *Server) onClose(f func() error) { s.closers = append(s.closers, f) }

// seed runs every area's idempotent start-up seeding.
func (s *Server) seed(ctx context.Context, stdout io.Writer) error {
	if err := s.Access.Seed(ctx); err != nil {
		return fmt.Errorf("seed access: %w", err)
	}
	if err := users.SeedPlatforms(ctx, s.DB, s.Clock); err != nil {
		return err
	}
	if s.Config.AdminEmail != "" {
		chk, err := s.Setup.EnsureFromEnv(ctx, s.Config.AdminEmail, s.Config.AdminPassword)
		if err != nil {
			return fmt.Errorf("super admin: %w", err)
		}
		if chk.Stale {
			// The variable is read only when the administrator is created;
			// saying so beats a silent 401 for the new value.
			s.Log.Warn("HMID_ADMIN_PASSWORD is not the password of "+s.Config.AdminEmail+
				": the variable is used only when that administrator is created, so their current password is unchanged and still the one that signs in. "+
				"Change it on /account/security after signing in, or set it from the shell with: hmid admin create --email "+s.Config.AdminEmail+" --password-stdin",
				slog.String("admin_email", s.Config.AdminEmail))
		}
	}
	created, err := s.Access.EnsureSystemKey(ctx, s.Config.SystemAPIKey)
	if err != nil {
		return fmt.Errorf("system API key: %w", err)
	}
	if created != "" {
		s.SystemKey = created
		fmt.Fprintf(stdout, "\nhmid created a system API key. It is shown this once; store it now:\n\n    %s\n\n"+
			"Use it as a bearer token for service-to-service calls, for example:\n\n"+
			"    curl -H 'Authorization: Bearer %s' %s/v1/users\n\n"+
			"Set HMID_SYSTEM_API_KEY to pin a key of your own choice instead.\n\n", created, created, s.Config.PublicURL)
	}
	return nil
}

// loadSecretKey returns the 32-byte server key: HMID_SECRET_KEY, or with SQLite
// the key in secret.key beside the database file, generated on first start.
func loadSecretKey(cfg config.Config) ([]byte, error) {
	if cfg.SecretKey != "" {
		k, err := secretbox.ParseKey(cfg.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("HMID_SECRET_KEY: %w", err)
		}
		return k, nil
	}
	path := cfg.SQLitePath()
	if path == "" {
		// In-memory SQLite: the data dies with the process, and so may the key.
		return secretbox.GenerateKey()
	}
	keyPath := filepath.Join(filepath.Dir(path), "secret.key")
	if b, err := os.ReadFile(keyPath); err == nil {
		return secretbox.ParseKey(strings.TrimSpace(string(b)))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", keyPath, err)
	}
	k, err := secretbox.GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, []byte(secretbox.EncodeKey(k)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", keyPath, err)
	}
	return k, nil
}
