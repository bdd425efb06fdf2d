package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.DatabaseURL != "sqlite:./data/hmid.db" || c.PublicURL != "http://localhost:8080" || c.SQLitePath() != "./data/hmid.db" {
		t.Fatalf("defaults = %+v", c)
	}
	if c.MaxConnections != DefaultMaxConnections || c.MaxRequestsInFlight != DefaultMaxRequestsInFlight ||
		c.ReadTimeout != DefaultReadTimeout || c.RequestTimeout != DefaultRequestTimeout || c.SQLiteSync != "normal" {
		t.Fatalf("limit defaults = %+v", c)
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HMID_DATABASE_URL": "postgres://x/y"}, "HMID_SECRET_KEY is required"},
		{map[string]string{"HMID_DATABASE_URL": "mysql://x"}, "HMID_DATABASE_URL"},
		{map[string]string{"HMID_PUBLIC_URL": "ftp://x"}, "HMID_PUBLIC_URL"},
		{map[string]string{"HMID_ADMIN_EMAIL": "a@b.c"}, "set together"},
		{map[string]string{"HMID_TRUSTED_PROXIES": "10.0.0.0/8, nonsense"}, "HMID_TRUSTED_PROXIES"},
		{map[string]string{"HMID_REDIS_URL": "http://x"}, "HMID_REDIS_URL"},
		{map[string]string{"HMID_MAX_CONNECTIONS": "0"}, "HMID_MAX_CONNECTIONS"},
		{map[string]string{"HMID_MAX_REQUESTS_IN_FLIGHT": "many"}, "HMID_MAX_REQUESTS_IN_FLIGHT"},
		{map[string]string{"HMID_READ_TIMEOUT": "10"}, "HMID_READ_TIMEOUT"},
		{map[string]string{"HMID_REQUEST_TIMEOUT": "-1s"}, "HMID_REQUEST_TIMEOUT"},
		{map[string]string{"HMID_SQLITE_SYNC": "off"}, "HMID_SQLITE_SYNC"},
		{map[string]string{"HMID_ID_TOKEN_ALG": "PS256"}, "HMID_ID_TOKEN_ALG must be HS256, RS256 or ES256"},
		{map[string]string{"HMID_ID_TOKEN_ALG": "none"}, "HMID_ID_TOKEN_ALG"},
		{map[string]string{"HMID_SIGNING_KEY_ROTATION": "monthly"}, "HMID_SIGNING_KEY_ROTATION must be a duration"},
		{map[string]string{"HMID_SIGNING_KEY_ROTATION": "10m"}, "at least 1h0m0s"},
		{map[string]string{"HMID_SIGNING_KEY_ROTATION": "-720h"}, "HMID_SIGNING_KEY_ROTATION"},
	}
	for _, c := range cases {
		_, err := FromEnv(env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.env, err, c.want)
		}
	}
	c, err := FromEnv(env(map[string]string{"HMID_TRUSTED_PROXIES": "10.0.0.0/8,127.0.0.1", "HMID_PUBLIC_URL": "https://id.example.org/"}))
	if err != nil || len(c.TrustedProxies) != 2 || c.PublicURL != "https://id.example.org" || c.MailFrom != "hmid@id.example.org" {
		t.Fatalf("parsed = %+v, %v", c, err)
	}
}

// TestLogLevelAndMetricsAddr checks that an unknown log level and a metrics
// address that cannot be bound fail at start, and that good values parse.
func TestLogLevelAndMetricsAddr(t *testing.T) {
	for _, bad := range []map[string]string{
		{"HMID_LOG_LEVEL": "verbose"},
		{"HMID_LOG_LEVEL": "info+2"},
		{"HMID_METRICS_ADDR": "9090"},
		{"HMID_METRICS_ADDR": ":8080"},
	} {
		for k := range bad {
			if _, err := FromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%v: err = %v, want one naming %s", bad, err, k)
			}
		}
	}
	c, err := FromEnv(env(map[string]string{"HMID_LOG_LEVEL": "WARN", "HMID_METRICS_ADDR": "127.0.0.1:9090"}))
	if err != nil || c.Level() != slog.LevelWarn || c.MetricsAddr != "127.0.0.1:9090" {
		t.Fatalf("parsed = %+v (level %v), %v", c, c.Level(), err)
	}
	if c, _ := FromEnv(env(nil)); c.Level() != slog.LevelInfo {
		t.Fatalf("default level %v", c.Level())
	}
}

// TestSigningSettings checks the defaults and accepted values of
// HMID_ID_TOKEN_ALG and HMID_SIGNING_KEY_ROTATION.
func TestSigningSettings(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || c.IDTokenAlg != "HS256" || c.SigningKeyRotation != 0 {
		t.Fatalf("defaults: alg %q, rotation %v, %v", c.IDTokenAlg, c.SigningKeyRotation, err)
	}
	c, err = FromEnv(env(map[string]string{"HMID_ID_TOKEN_ALG": "es256", "HMID_SIGNING_KEY_ROTATION": "720h"}))
	if err != nil || c.IDTokenAlg != "ES256" || c.SigningKeyRotation != 720*time.Hour {
		t.Fatalf("set: alg %q, rotation %v, %v", c.IDTokenAlg, c.SigningKeyRotation, err)
	}
	if err := (Config{PublicURL: "http://x", DatabaseURL: "memory"}).Validate(); err != nil {
		t.Fatalf("a Config built in code without IDTokenAlg must be valid: %v", err)
	}
}

// TestRefreshReuseInterval checks HMID_REFRESH_REUSE_INTERVAL: 0 by
// default, a Go duration up to MaxRefreshReuseInterval, anything else fails
// the start.
func TestRefreshReuseInterval(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || c.RefreshReuseInterval != 0 {
		t.Fatalf("default = %v, %v", c.RefreshReuseInterval, err)
	}
	for v, want := range map[string]time.Duration{"2s": 2 * time.Second, "0": 0, "5m": 5 * time.Minute, "1500ms": 1500 * time.Millisecond} {
		c, err := FromEnv(env(map[string]string{"HMID_REFRESH_REUSE_INTERVAL": v}))
		if err != nil || c.RefreshReuseInterval != want {
			t.Errorf("%s: %v, %v", v, c.RefreshReuseInterval, err)
		}
	}
	for _, v := range []string{"-1s", "2", "5m1s", "soon"} {
		if _, err := FromEnv(env(map[string]string{"HMID_REFRESH_REUSE_INTERVAL": v})); err == nil || !strings.Contains(err.Error(), "HMID_REFRESH_REUSE_INTERVAL") {
			t.Errorf("%s: err = %v", v, err)
		}
	}
}

func TestOutboundAllowCIDRs(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || len(c.OutboundAllowCIDRs) != 0 {
		t.Fatalf("default: %v %v, want an empty list", c.OutboundAllowCIDRs, err)
	}
	c, err = FromEnv(env(map[string]string{"HMID_OUTBOUND_ALLOW_CIDRS": "127.0.0.0/8, fd00::/8"}))
	if err != nil || len(c.OutboundAllowCIDRs) != 2 || c.OutboundAllowCIDRs[0].String() != "127.0.0.0/8" || c.OutboundAllowCIDRs[1].String() != "fd00::/8" {
		t.Fatalf("parsed %v %v", c.OutboundAllowCIDRs, err)
	}
	for _, bad := range []string{"127.0.0.0/8,localhost", "10.0.0.0/40", "all"} {
		_, err := FromEnv(env(map[string]string{"HMID_OUTBOUND_ALLOW_CIDRS": bad}))
		if err == nil || !strings.Contains(err.Error(), "HMID_OUTBOUND_ALLOW_CIDRS must be comma-separated CIDRs") {
			t.Errorf("%q: %v, want a clear error", bad, err)
		}
	}
}

// TestDependencyTimeout checks HMID_DEPENDENCY_TIMEOUT's default and that a
// value that is not a duration, or is too short to watch, fails the start.
func TestDependencyTimeout(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || c.DependencyTimeout != 2*time.Second {
		t.Fatalf("default = %v, %v", c.DependencyTimeout, err)
	}
	if c, err := FromEnv(env(map[string]string{"HMID_DEPENDENCY_TIMEOUT": "750ms"})); err != nil || c.DependencyTimeout != 750*time.Millisecond {
		t.Fatalf("750ms = %v, %v", c.DependencyTimeout, err)
	}
	for _, bad := range []string{"2", "0", "-1s", "10ms", "soon"} {
		if _, err := FromEnv(env(map[string]string{"HMID_DEPENDENCY_TIMEOUT": bad})); err == nil || !strings.Contains(err.Error(), "HMID_DEPENDENCY_TIMEOUT") {
			t.Errorf("HMID_DEPENDENCY_TIMEOUT=%s: err = %v", bad, err)
		}
	}
}

func TestWebhooksAllowHTTP(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "ON": true, "0": false} {
		c, err := FromEnv(env(map[string]string{"HMID_WEBHOOKS_ALLOW_HTTP": v}))
		if err != nil || c.WebhooksAllowHTTP != want {
			t.Errorf("%q: %v %v", v, c.WebhooksAllowHTTP, err)
		}
	}
	if _, err := FromEnv(env(map[string]string{"HMID_WEBHOOKS_ALLOW_HTTP": "maybe"})); err == nil || !strings.Contains(err.Error(), "HMID_WEBHOOKS_ALLOW_HTTP") {
		t.Fatalf("a bad value: %v", err)
	}
}

// TestLogFormatAndTelemetry checks HMID_LOG_FORMAT and that the OTEL_*
// variables reach Config.Telemetry, a bad one failing the start by name.
func TestLogFormatAndTelemetry(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || c.LogFormat != "json" || c.Telemetry.Enabled() {
		t.Fatalf("defaults: format %q, tracing %v, %v", c.LogFormat, c.Telemetry.Enabled(), err)
	}
	c, err = FromEnv(env(map[string]string{"HMID_LOG_FORMAT": "Text", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}))
	if err != nil || c.LogFormat != "text" || c.Telemetry.Endpoint != "http://collector:4318/v1/traces" {
		t.Fatalf("parsed: format %q, endpoint %q, %v", c.LogFormat, c.Telemetry.Endpoint, err)
	}
	for want, bad := range map[string]map[string]string{
		"HMID_LOG_FORMAT":             {"HMID_LOG_FORMAT": "logfmt"},
		"OTEL_EXPORTER_OTLP_PROTOCOL": {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"},
	} {
		if _, err := FromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err = %v, want one naming %s", bad, err, want)
		}
	}
}
