package settings

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/policy"
)

// ConfigEntry is a system config entry.
type ConfigEntry struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// Config keys read by hmid.
const (
	KeySupportedLocales = "email.supported_locales"
	KeyPegelCacheTTL    = "pegel.cache_ttl_seconds"
	KeyStatsCacheTTL    = "stats.cache_ttl_seconds"
)

// Passkey policy keys (issue 20; read by package passkey).
const (
	KeyPasskeyEnabled          = "passkey.enabled"
	KeyPasskeyPasswordless     = "passkey.passwordless"
	KeyPasskeyRefuseSynced     = "passkey.refuse_synced_for_required"
	KeyPasskeyUserVerification = "passkey.user_verification"
)

// Defaults are the pre-seeded system config entries with their first values.
var Defaults = []struct {
	Key, Description string
	Value            any
}{
	{KeySupportedLocales, "Locales users may choose for mails and pages", []string{"en", "de"}},
	{KeyPegelCacheTTL, "How long water-level stations are cached, in seconds", 300},
	{KeyStatsCacheTTL, "How long public statistics are cached, in seconds", 60},
	{KeyPasskeyEnabled, "Passkeys may be added and used", true},
	{KeyPasskeyPasswordless, "A passkey alone signs in (without a password)", true},
	{KeyPasskeyRefuseSynced, "Synced (backup-eligible) passkeys are refused for users whose roles require two-factor authentication", false},
	{KeyPasskeyUserVerification, "User verification asked of passkeys: required, preferred or discouraged", "preferred"},
}

// allDefaults are Defaults and the policy entries (package policy).
func allDefaults() []struct {
	Key, Description string
	Value            any
} {
	out := slices.Clone(Defaults)
	for _, e := range policy.Entries {
		out = append(out, struct {
			Key, Description string
			Value            any
		}{e.Key, e.Description, e.Default})
	}
	return out
}

// SeedConfig inserts missing default entries; existing values are kept.
func (s *Service) SeedConfig(ctx context.Context) error {
	now := db.TS(s.Clock.Now())
	for _, d := range allDefaults() {
		if _, err := s.DB.ExecContext(ctx, `INSERT INTO system_config (key, value, description, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			d.Key, db.JSON(d.Value), d.Description, now); err != nil {
			return err
		}
	}
	return nil
}

func scanEntry(row db.Scanner) (ConfigEntry, error) {
	var e ConfigEntry
	var v string
	var u int64
	err := row.Scan(&e.Key, &v, &e.Description, &u)
	e.Value = json.RawMessage(v)
	e.UpdatedAt = db.FromTS(u)
	return e, err
}

// Entry returns one config entry.
func (s *Service) Entry(ctx context.Context, key string) (ConfigEntry, error) {
	e, err := scanEntry(s.DB.QueryRowContext(ctx, `SELECT key, value, description, updated_at FROM system_config WHERE key = $1`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return e, apperr.NotFoundf("system config entry %q not found", key)
	}
	return e, err
}

// ConfigValue decodes the value of key into dst.
func (s *Service) ConfigValue(ctx context.Context, key string, dst any) error {
	e, err := s.Entry(ctx, key)
	if err != nil {
		return err
	}
	return json.Unmarshal(e.Value, dst)
}

// SupportedLocales returns the locales of email.supported_locales.
func (s *Service) SupportedLocales(ctx context.Context) ([]string, error) {
	var out []string
	err := s.ConfigValue(ctx, KeySupportedLocales, &out)
	return out, err
}

// Seconds returns an integer config value as a duration, or def when unset or invalid.
func (s *Service) Seconds(ctx context.Context, key string, def time.Duration) time.Duration {
	var n float64
	if err := s.ConfigValue(ctx, key, &n); err != nil || n <= 0 {
		return def
	}
	return time.Duration(n * float64(time.Second))
}

// ListConfig returns the config entries whose key starts with prefix (taken
// literally, not as a pattern), ordered by key.
func (s *Service) ListConfig(ctx context.Context, prefix string) ([]ConfigEntry, error) {
	return db.All(ctx, s.DB, scanEntry, `SELECT key, value, description, updated_at FROM system_config WHERE key LIKE $1 ESCAPE '\' ORDER BY key`, db.Like(prefix)+"%")
}

// UpdateConfig sets the value of the config entry key to raw (JSON text; nil
// when no value was given). The new value must have the JSON type of the
// current one (an array stays an array), so a typo cannot break the areas
// that read it, and the entries hmid reads keep their bounds. A change is
// audited as system_config_updated (ev gives the request's address, agent
// and source; the caller of ctx is the actor) in the transaction of the
// write, and OnChange is told after it committed.
func (s *Service) UpdateConfig(ctx context.Context, key string, raw json.RawMessage, ev audit.Event) (ConfigEntry, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return ConfigEntry{}, apperr.Invalid("value is required")
	}
	if err := httpx.CheckJSONText("value", raw); err != nil {
		return ConfigEntry{}, err
	}
	e, err := s.Entry(ctx, key)
	if err != nil {
		return e, err
	}
	if jsonKind(e.Value) != jsonKind(raw) {
		return e, apperr.Invalid("value of %s must be %s", key, jsonKind(e.Value))
	}
	if err := checkConfigValue(key, raw); err != nil {
		return e, err
	}
	value := string(bytes.TrimSpace(raw))
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE system_config SET value = $1, updated_at = $2 WHERE key = $3`,
			value, db.TS(s.Clock.Now()), key); err != nil {
			return err
		}
		return s.audit(ctx, tx, key, e.Value, json.RawMessage(value), ev)
	})
	if err != nil {
		return e, err
	}
	if s.OnChange != nil {
		if err := s.OnChange(ctx, key); err != nil {
			return e, err
		}
	}
	return s.Entry(ctx, key)
}

// audit records a config change: who, which key, the old and the new value.
func (s *Service) audit(ctx context.Context, tx *db.Tx, key string, old, value json.RawMessage, ev audit.Event) error {
	if s.Audit == nil {
		return nil
	}
	p := authn.From(ctx)
	ev.EventType, ev.ResourceType, ev.ResourceID = audit.SystemConfigUpdated, "system_config", key
	if p != nil {
		ev.UserID = p.UserID
		if p.UserID == "" {
			ev.ActorID = p.APIKeyID
		}
	}
	ev.Description = "System config " + key + " changed from " + compactJSON(old) + " to " + compactJSON(value)
	ev.Metadata = map[string]any{"key": key, "old_value": old, "new_value": value}
	_, err := s.Audit.Record(ctx, tx, ev)
	return err
}

// compactJSON is raw without insignificant white space (raw when not JSON).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ListConfig serves GET /v1/system-config?prefix=…: a bare array ordered by key.
func (h *Handler) ListConfig(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.ListConfig(r.Context(), r.URL.Query().Get("prefix"))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// GetConfig serves GET /v1/system-config/{key}: the entry itself.
func (h *Handler) GetConfig(w http.ResponseWriter, r *http.Request) {
	e, err := h.S.Entry(r.Context(), chi.URLParam(r, "key"))
	httpx.RespondJSON(w, r, http.StatusOK, e, err)
}

// UpdateConfig serves PATCH /v1/system-config/{key} {value}.
func (h *Handler) UpdateConfig(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Value httpx.Opt[json.RawMessage] `json:"value"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	// An absent value and a JSON null both leave raw empty: "value is required".
	e, err := h.S.UpdateConfig(r.Context(), chi.URLParam(r, "key"), b.Value.Value, audit.FromRequest(r, audit.Event{SourceService: "api"}))
	httpx.RespondJSON(w, r, http.StatusOK, e, err)
}

// The bounds of the cache lifetimes in system config, in seconds: at least
// one (0 or less would disable the cache, a fraction cannot be stored as
// whole seconds) and at most a day.
const (
	minCacheTTL = 1
	maxCacheTTL = 86400
)

// checkConfigValue checks a new value of the config entry key beyond its
// JSON type: the bounds of the entries hmid reads, and the free-form bound
// for any other.
func checkConfigValue(key string, raw json.RawMessage) error {
	if isPolicy, err := policy.Check(key, raw); isPolicy {
		return err
	}
	switch key {
	case KeySupportedLocales:
		var locales []string
		if err := json.Unmarshal(raw, &locales); err != nil || len(locales) == 0 {
			return apperr.Invalid("%s must be a non-empty array of locale strings", key)
		}
		if err := httpx.CheckItems(key, len(locales), 50); err != nil {
			return err
		}
		for _, l := range locales {
			if err := httpx.CheckLen(key+"[]", l, 35); err != nil { // BCP 47 tags fit in 35 characters (RFC 5646 §4.4.1)
				return err
			}
		}
	case KeyPasskeyUserVerification:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || (v != "required" && v != "preferred" && v != "discouraged") {
			return apperr.Invalid("%s must be required, preferred or discouraged", key)
		}
	case KeyPegelCacheTTL, KeyStatsCacheTTL:
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < minCacheTTL || n > maxCacheTTL {
			return apperr.Invalid("%s must be a whole number of seconds from %d to %d", key, minCacheTTL, maxCacheTTL)
		}
	}
	return httpx.CheckFreeJSON("value", raw)
}

// The JSON types of values (RFC 8259 §3), as Kind names them.
const (
	KindObject  = "object"
	KindArray   = "array"
	KindString  = "string"
	KindNumber  = "number"
	KindBoolean = "boolean"
	KindNull    = "null"
	KindEmpty   = "empty" // no value at all
)

// Kind names the JSON type of a value by its first character: one of the
// Kind constants. Anything not starting like another type is a number.
func Kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return KindEmpty
	}
	switch raw[0] {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't', 'f':
		return KindBoolean
	case 'n':
		return KindNull
	}
	return KindNumber
}

// jsonKind names the JSON type of a value for a message: "an object",
// "a number", "null", ….
func jsonKind(raw []byte) string {
	switch k := Kind(raw); k {
	case KindObject, KindArray:
		return "an " + k
	case KindNull, KindEmpty:
		return k
	default:
		return "a " + k
	}
}
