// Package config reads hmid's configuration from the environment.
//
// The variable names are fixed (outside scripts rely on them); see
// docs/decisions.md and README.md for the full table.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"hmid/internal/outbound"
	"hmid/internal/telemetry"
)

// Config is the validated service configuration.
type Config struct {
	Addr             string         // HMID_ADDR, listen address
	PublicURL        string         // HMID_PUBLIC_URL, issuer and base of every _links URL, without trailing slash
	DatabaseURL      string         // HMID_DATABASE_URL: sqlite:PATH, memory, or postgres://…
	RedisURL         string         // HMID_REDIS_URL; empty means in-process cache and limiter
	SecretKey        string         // HMID_SECRET_KEY, 32 bytes as base64 or hex
	LoginURL         string         // HMID_LOGIN_URL; empty means the built-in /login page
	SystemAPIKey     string         // HMID_SYSTEM_API_KEY
	AdminEmail       string         // HMID_ADMIN_EMAIL
	AdminPassword    string         // HMID_ADMIN_PASSWORD
	SMTPURL          string         // HMID_SMTP_URL
	MailFrom         string         // HMID_MAIL_FROM, sender address of outgoing mail
	PegelURL         string         // HMID_PEGEL_URL
	GeoIPDB          string         // HMID_GEOIP_DB
	TrustedProxies   []netip.Prefix // HMID_TRUSTED_PROXIES, comma-separated CIDRs
	LogLevel         string         // HMID_LOG_LEVEL: debug, info, warn, error
	MetricsAddr      string         // HMID_METRICS_ADDR: listener of its own for /metrics; empty serves it on Addr behind a system key
	StreamPlatform   ProviderConfig // HMID_STREAMPLATFORM_* (Twitch-like integration)
	ChatPlatformCDN  string         // HMID_CHATPLATFORM_CDN_URL, base of guild icon and avatar URLs
	DisableAccessLog bool           // HMID_ACCESS_LOG=off silences per-request log lines (benchmarks)

	// Limits that keep slow or numerous clients from exhausting the server;
	// zero means the default (Default* below).
	MaxConnections      int           // HMID_MAX_CONNECTIONS, open client connections
	MaxRequestsInFlight int           // HMID_MAX_REQUESTS_IN_FLIGHT, requests handled at once; more get 503
	ReadTimeout         time.Duration // HMID_READ_TIMEOUT, to read a request's headers, and again its body
	RequestTimeout      time.Duration // HMID_REQUEST_TIMEOUT, to handle a request once read, database included; routes that wait longer add their wait
	DependencyTimeout   time.Duration // HMID_DEPENDENCY_TIMEOUT, for PostgreSQL or Redis to answer before the request gets 503
	SQLiteSync          string        // HMID_SQLITE_SYNC: normal (default) or full

	// ID-token signing (docs/decisions.md, Signing keys).
	IDTokenAlg         string        // HMID_ID_TOKEN_ALG: HS256 (default), RS256 or ES256, for clients registered without one
	SigningKeyRotation time.Duration // HMID_SIGNING_KEY_ROTATION: age at which RS256/ES256 keys rotate; 0 = never

	// RefreshReuseInterval is HMID_REFRESH_REUSE_INTERVAL: how long after its
	// rotation a refresh token presented again by its client still gets a
	// new pair instead of revoking its family; 0 is strict reuse detection.
	RefreshReuseInterval time.Duration

	// DynamicRegistration is HMID_DYNAMIC_REGISTRATION: off (default), token
	// (an initial access token is needed) or open (RFC 7591 §3); and
	// DynamicRegistrationExpiry HMID_DYNAMIC_REGISTRATION_EXPIRY, how long
	// an open registration lives without a token issued to it.
	DynamicRegistration       string
	DynamicRegistrationExpiry time.Duration

	// LoginEnv reads the HMID_LOGIN_* variables of the upstream sign-in
	// providers (package upstream validates them); nil means none is set.
	LoginEnv func(string) string

	// OutboundAllowCIDRs is HMID_OUTBOUND_ALLOW_CIDRS: internal ranges that
	// requests to user-supplied URLs (back-channel logout, webhooks,
	// jwks_uri) may reach anyway; empty refuses them all (package outbound).
	OutboundAllowCIDRs []netip.Prefix

	// WebhooksAllowHTTP is HMID_WEBHOOKS_ALLOW_HTTP: webhook endpoints may
	// use plain http (a receiver on a private network the operator trusts);
	// off, only https is accepted.
	WebhooksAllowHTTP bool
	// LogFormat is HMID_LOG_FORMAT: json (default, one object a line) or
	// text (key=value lines for a terminal).
	LogFormat string
	// Telemetry is what the standard OTEL_* variables say about exporting
	// traces (package telemetry); off unless an OTLP endpoint is set.
	Telemetry telemetry.Settings
}

// ProviderConfig holds the endpoints and credentials of an external OAuth provider.
type ProviderConfig struct {
	ClientID     string
	ClientSecret string
	AuthURL      string
	TokenURL     string
	APIURL       string
}

// Defaults used when a variable is unset.
const (
	DefaultAddr        = ":8080"
	DefaultPublicURL   = "http://localhost:8080"
	DefaultDatabaseURL = "sqlite:./data/hmid.db"

	// DefaultMaxConnections leaves room for the 10,000 WebSocket clients
	// that bench's ws-fanout holds open on a 2-core machine, and twice the
	// 5,000 connections dripping request bodies that must leave other
	// clients answered (about 30 KB of server memory each, measured); at
	// the cap, idle keep-alive connections make room (docs/decisions.md,
	// "Receiving a request, handling it, and the connection cap").
	DefaultMaxConnections = 10_000
	// DefaultMaxRequestsInFlight is far above what 2 cores and a pool of 32
	// database connections serve at once, and bounds request bodies in
	// memory to 256 MiB (a MiB per slot). A body still arriving takes no
	// slot.
	DefaultMaxRequestsInFlight = 256
	DefaultReadTimeout         = 10 * time.Second
	DefaultRequestTimeout      = 30 * time.Second
	// DefaultDependencyTimeout bounds each wait for PostgreSQL or Redis to
	// answer (a connection from the pool, a connect, a statement's reply,
	// a Redis command), so a frozen dependency costs a request 503 within
	// 2 s instead of the whole request timeout.
	DefaultDependencyTimeout = 2 * time.Second
	// MinDependencyTimeout is the least HMID_DEPENDENCY_TIMEOUT accepted.
	MinDependencyTimeout = 100 * time.Millisecond
)

// Limits returns the connection and request limits with defaults filled in.
func (c Config) Limits() (maxConns, maxInFlight int, readTimeout, requestTimeout time.Duration) {
	return cmp.Or(c.MaxConnections, DefaultMaxConnections),
		cmp.Or(c.MaxRequestsInFlight, DefaultMaxRequestsInFlight),
		cmp.Or(c.ReadTimeout, DefaultReadTimeout),
		cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
}

// FromEnv builds a Config from getenv and validates it.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Addr:            get("HMID_ADDR", DefaultAddr),
		PublicURL:       strings.TrimRight(get("HMID_PUBLIC_URL", DefaultPublicURL), "/"),
		DatabaseURL:     get("HMID_DATABASE_URL", DefaultDatabaseURL),
		RedisURL:        get("HMID_REDIS_URL", ""),
		SecretKey:       get("HMID_SECRET_KEY", ""),
		LoginURL:        get("HMID_LOGIN_URL", ""),
		SystemAPIKey:    get("HMID_SYSTEM_API_KEY", ""),
		AdminEmail:      get("HMID_ADMIN_EMAIL", ""),
		AdminPassword:   getenv("HMID_ADMIN_PASSWORD"),
		SMTPURL:         get("HMID_SMTP_URL", ""),
		MailFrom:        get("HMID_MAIL_FROM", ""),
		PegelURL:        strings.TrimRight(get("HMID_PEGEL_URL", ""), "/"),
		GeoIPDB:         get("HMID_GEOIP_DB", ""),
		LogLevel:        get("HMID_LOG_LEVEL", "info"),
		MetricsAddr:     get("HMID_METRICS_ADDR", ""),
		ChatPlatformCDN: strings.TrimRight(get("HMID_CHATPLATFORM_CDN_URL", "https://cdn.discordapp.com"), "/"),
		StreamPlatform: ProviderConfig{
			ClientID:     get("HMID_STREAMPLATFORM_CLIENT_ID", ""),
			ClientSecret: get("HMID_STREAMPLATFORM_CLIENT_SECRET", ""),
			AuthURL:      get("HMID_STREAMPLATFORM_AUTH_URL", "https://id.twitch.tv/oauth2/authorize"),
			TokenURL:     get("HMID_STREAMPLATFORM_TOKEN_URL", "https://id.twitch.tv/oauth2/token"),
			APIURL:       strings.TrimRight(get("HMID_STREAMPLATFORM_API_URL", "https://api.twitch.tv/helix"), "/"),
		},
		DisableAccessLog: strings.EqualFold(get("HMID_ACCESS_LOG", "on"), "off"),
		SQLiteSync:       strings.ToLower(get("HMID_SQLITE_SYNC", "normal")),
		IDTokenAlg:       strings.ToUpper(get("HMID_ID_TOKEN_ALG", "HS256")),
		LoginEnv:         getenv,
	}
	var err error
	if c.MaxConnections, err = positiveInt(get, "HMID_MAX_CONNECTIONS", DefaultMaxConnections); err != nil {
		return c, err
	}
	if c.MaxRequestsInFlight, err = positiveInt(get, "HMID_MAX_REQUESTS_IN_FLIGHT", DefaultMaxRequestsInFlight); err != nil {
		return c, err
	}
	if c.ReadTimeout, err = positiveDuration(get, "HMID_READ_TIMEOUT", DefaultReadTimeout); err != nil {
		return c, err
	}
	if c.RequestTimeout, err = positiveDuration(get, "HMID_REQUEST_TIMEOUT", DefaultRequestTimeout); err != nil {
		return c, err
	}
	if c.DependencyTimeout, err = positiveDuration(get, "HMID_DEPENDENCY_TIMEOUT", DefaultDependencyTimeout); err != nil {
		return c, err
	}
	if c.DependencyTimeout < MinDependencyTimeout {
		// The database watchdog looks every twentieth of it; shorter would
		// keep a core busy and take a loaded server for a frozen one.
		return c, fmt.Errorf("HMID_DEPENDENCY_TIMEOUT must be at least %v, got %v", MinDependencyTimeout, c.DependencyTimeout)
	}
	if v := get("HMID_SIGNING_KEY_ROTATION", "0"); v != "0" {
		if c.SigningKeyRotation, err = time.ParseDuration(v); err != nil {
			return c, fmt.Errorf("HMID_SIGNING_KEY_ROTATION must be a duration such as 720h, or 0 for no automatic rotation, got %q", v)
		}
	}
	if c.RefreshReuseInterval, err = reuseInterval(get("HMID_REFRESH_REUSE_INTERVAL", "0")); err != nil {
		return c, err
	}
	if c.DynamicRegistration, c.DynamicRegistrationExpiry, err = dynamicRegistration(get); err != nil {
		return c, err
	}
	if c.MailFrom == "" {
		host := "localhost"
		if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		c.MailFrom = "hmid@" + host
	}
	if c.TrustedProxies, err = trustedProxies(getenv("HMID_TRUSTED_PROXIES")); err != nil {
		return c, err
	}
	if err := c.readOutbound(get, getenv); err != nil {
		return c, err
	}
	c.LogFormat = strings.ToLower(get("HMID_LOG_FORMAT", "json"))
	if c.Telemetry, err = telemetry.SettingsFromEnv(getenv); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// trustedProxies parses HMID_TRUSTED_PROXIES: comma-separated CIDRs, a bare
// address meaning that one host.
func trustedProxies(v string) ([]netip.Prefix, error) {
	return outbound.ParsePrefixes(v, func(part string) (netip.Prefix, error) {
		a, err := netip.ParseAddr(part)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("HMID_TRUSTED_PROXIES: %q is not a CIDR or address", part)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	})
}

// readOutbound reads what requests to URLs users supply may reach:
// HMID_OUTBOUND_ALLOW_CIDRS and HMID_WEBHOOKS_ALLOW_HTTP.
func (c *Config) readOutbound(get func(string, string) string, getenv func(string) string) error {
	var err error
	if c.OutboundAllowCIDRs, err = outbound.ParseAllowList(getenv(outbound.EnvAllowCIDRs)); err != nil {
		return fmt.Errorf("%s must be comma-separated CIDRs such as 127.0.0.0/8,fd00::/8 (or empty): %w", outbound.EnvAllowCIDRs, err)
	}
	c.WebhooksAllowHTTP, err = boolean(get, "HMID_WEBHOOKS_ALLOW_HTTP", false)
	return err
}

// boolean reads a switch: true, 1, yes or on; false, 0, no or off.
func boolean(get func(string, string) string, name string, def bool) (bool, error) {
	switch v := strings.ToLower(get(name, strconv.FormatBool(def))); v {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off", "":
		return false, nil
	default:
		return false, fmt.Errorf("%s must be true or false, got %q", name, v)
	}
}

// positiveInt reads a count that must be at least 1.
func positiveInt(get func(string, string) string, name string, def int) (int, error) {
	v := get(name, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a whole number of at least 1, got %q", name, v)
	}
	return n, nil
}

// positiveDuration reads a Go duration ("30s", "1m30s") that must be positive.
func positiveDuration(get func(string, string) string, name string, def time.Duration) (time.Duration, error) {
	v := get(name, def.String())
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 30s, got %q", name, v)
	}
	return d, nil
}

// dynamicRegistration reads HMID_DYNAMIC_REGISTRATION and
// HMID_DYNAMIC_REGISTRATION_EXPIRY (at least an hour; default 720h).
func dynamicRegistration(get func(string, string) string) (string, time.Duration, error) {
	mode := strings.ToLower(get("HMID_DYNAMIC_REGISTRATION", "off"))
	if mode != "off" && mode != "token" && mode != "open" {
		return "", 0, fmt.Errorf("HMID_DYNAMIC_REGISTRATION must be off, token or open, got %q", mode)
	}
	v := get("HMID_DYNAMIC_REGISTRATION_EXPIRY", "720h")
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Hour {
		return "", 0, fmt.Errorf("HMID_DYNAMIC_REGISTRATION_EXPIRY must be a duration of at least 1h such as 720h, got %q", v)
	}
	return mode, d, nil
}

// MaxRefreshReuseInterval bounds HMID_REFRESH_REUSE_INTERVAL: the window
// exists for a client that lost the answer of its refresh to a network
// failure and retries, which takes seconds; a longer one would let a stolen
// spent token buy tokens unnoticed for longer (RFC 9700 §4.14.2).
const MaxRefreshReuseInterval = 5 * time.Minute

// reuseInterval parses HMID_REFRESH_REUSE_INTERVAL: a Go duration from 0 to
// MaxRefreshReuseInterval.
func reuseInterval(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxRefreshReuseInterval {
		return 0, fmt.Errorf("HMID_REFRESH_REUSE_INTERVAL must be a duration from 0 to %s such as 2s, got %q", MaxRefreshReuseInterval, v)
	}
	return d, nil
}

// Validate checks values that can be checked without touching the outside world.
func (c Config) Validate() error {
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HMID_PUBLIC_URL must be an absolute http(s) URL, got %q", c.PublicURL)
	}
	switch {
	case c.DatabaseURL == "memory",
		strings.HasPrefix(c.DatabaseURL, "sqlite:"),
		strings.HasPrefix(c.DatabaseURL, "postgres://"),
		strings.HasPrefix(c.DatabaseURL, "postgresql://"):
	default:
		return fmt.Errorf("HMID_DATABASE_URL must be sqlite:PATH, memory or postgres://…, got %q", c.DatabaseURL)
	}
	if c.IsPostgres() && c.SecretKey == "" {
		return errors.New("HMID_SECRET_KEY is required with PostgreSQL: set it to 32 random bytes in base64 or hex (e.g. `openssl rand -base64 32`) and give every instance the same value")
	}
	if c.RedisURL != "" && !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://") {
		return fmt.Errorf("HMID_REDIS_URL must start with redis:// or rediss://, got %q", c.RedisURL)
	}
	if (c.AdminEmail == "") != (c.AdminPassword == "") {
		return errors.New("HMID_ADMIN_EMAIL and HMID_ADMIN_PASSWORD must be set together")
	}
	if c.SQLiteSync != "" && c.SQLiteSync != "normal" && c.SQLiteSync != "full" {
		return fmt.Errorf("HMID_SQLITE_SYNC must be normal or full, got %q", c.SQLiteSync)
	}
	if c.AdminPassword != "" && len(c.AdminPassword) < 8 {
		return errors.New("HMID_ADMIN_PASSWORD must be at least 8 characters")
	}
	if err := c.validateLogging(); err != nil {
		return err
	}
	if err := c.validateSigning(); err != nil {
		return err
	}
	return c.validateMetricsAddr()
}

// MinSigningKeyRotation is the shortest automatic rotation: a retired key
// stays published for the ID-token lifetime (an hour), so rotating more often
// would publish ever more keys.
const MinSigningKeyRotation = time.Hour

// validateSigning checks HMID_ID_TOKEN_ALG ("" is the default, HS256) and
// HMID_SIGNING_KEY_ROTATION.
func (c Config) validateSigning() error {
	switch c.IDTokenAlg {
	case "", "HS256", "RS256", "ES256":
	default:
		return fmt.Errorf("HMID_ID_TOKEN_ALG must be HS256, RS256 or ES256, got %q", c.IDTokenAlg)
	}
	if c.SigningKeyRotation != 0 && c.SigningKeyRotation < MinSigningKeyRotation {
		return fmt.Errorf("HMID_SIGNING_KEY_ROTATION must be 0 (off) or at least %s, got %s", MinSigningKeyRotation, c.SigningKeyRotation)
	}
	return nil
}

// validateMetricsAddr checks HMID_METRICS_ADDR is a host:port other than
// HMID_ADDR, so a typo fails at start instead of at the second bind.
func (c Config) validateMetricsAddr() error {
	if c.MetricsAddr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(c.MetricsAddr)
	if err != nil {
		return fmt.Errorf("HMID_METRICS_ADDR must be host:port or :port, got %q", c.MetricsAddr)
	}
	if c.MetricsAddr == c.Addr && port != "0" { // port 0 picks a free port for each
		return fmt.Errorf("HMID_METRICS_ADDR must differ from HMID_ADDR (%q); leave it empty to serve /metrics on the main listener", c.Addr)
	}
	return nil
}

// validateLogging checks HMID_LOG_LEVEL and HMID_LOG_FORMAT ("" is json).
func (c Config) validateLogging() error {
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.LogFormat != "" && c.LogFormat != "json" && c.LogFormat != "text" {
		return fmt.Errorf("HMID_LOG_FORMAT must be json or text, got %q", c.LogFormat)
	}
	return nil
}

// Level is HMID_LOG_LEVEL as a slog level (info when unset).
func (c Config) Level() slog.Level {
	l, _ := parseLevel(c.LogLevel)
	return l
}

// parseLevel accepts debug, info, warn and error in any case; an empty
// value is info.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("HMID_LOG_LEVEL must be debug, info, warn or error, got %q", s)
}

// IsPostgres reports whether the database is PostgreSQL.
func (c Config) IsPostgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// SQLitePath returns the database file path for a sqlite: URL, or "" otherwise.
func (c Config) SQLitePath() string {
	if p, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:"); ok {
		return p
	}
	return ""
}
