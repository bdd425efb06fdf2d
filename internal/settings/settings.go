// Package settings implements the key/value settings, the pre-seeded system
// configuration and the public statistics of spec 3 (Settings, config,
// statistics).
package settings

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Service holds the settings area's dependencies.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	// Audit records system-config changes (nil: not audited).
	Audit *audit.Writer
	// OnChange is told the key of each system-config entry changed, after
	// the change committed (the policy snapshot reloads; nil: nobody).
	OnChange func(ctx context.Context, key string) error
}

// Setting is a settings record.
type Setting struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description"`
	IsPublic    bool            `json:"is_public"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

const settingCols = `key, value, description, is_public, created_at, updated_at`

func scanSetting(row db.Scanner) (Setting, error) {
	var s Setting
	var v string
	var c, u int64
	err := row.Scan(&s.Key, &v, &s.Description, &s.IsPublic, &c, &u)
	s.Value = json.RawMessage(v)
	s.CreatedAt, s.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return s, err
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// List returns the settings ordered by key: all, or only those marked
// is_public.
func (s *Service) List(ctx context.Context, publicOnly bool) ([]Setting, error) {
	q := `SELECT ` + settingCols + ` FROM settings ORDER BY key`
	if publicOnly {
		q = `SELECT ` + settingCols + ` FROM settings WHERE is_public ORDER BY key`
	}
	return db.All(ctx, s.DB, scanSetting, q)
}

// Get returns one setting.
func (s *Service) Get(ctx context.Context, key string) (Setting, error) {
	st, err := scanSetting(s.DB.QueryRowContext(ctx, `SELECT `+settingCols+` FROM settings WHERE key = $1`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return st, apperr.NotFoundf("setting %q not found", key)
	}
	return st, err
}

// Handler serves the settings and system config endpoints.
type Handler struct {
	S     *Service
	Cache cache.Cache // where public statistics are cached, shared by instances
}

// List serves GET /v1/settings: {data: [setting], _links}.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.List(r.Context(), false)
	httpx.Respond(w, r, http.StatusOK, out, err)
}

// ListPublic serves GET /v1/settings/public: only settings marked is_public.
func (h *Handler) ListPublic(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.List(r.Context(), true)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	httpx.WriteResource(w, r, http.StatusOK, out)
}

// GetOne serves GET /v1/settings/{key}.
func (h *Handler) GetOne(w http.ResponseWriter, r *http.Request) {
	st, err := h.S.Get(r.Context(), chi.URLParam(r, "key"))
	httpx.Respond(w, r, http.StatusOK, st, err)
}

// SettingInput holds the fields of a setting a settings:write caller
// gives; only fields with Set are used. It is the body of POST /v1/settings
// and PUT /v1/settings/{key}.
type SettingInput struct {
	Key         httpx.Opt[string]          `json:"key"`
	Value       httpx.Opt[json.RawMessage] `json:"value"`
	Description httpx.Opt[string]          `json:"description"`
	IsPublic    httpx.Opt[bool]            `json:"is_public"`
}

// check bounds the fields present: value as free-form JSON, description as
// text. A value that did not come through httpx.Decode (a console form's
// text) is checked as JSON text first.
func (in *SettingInput) check() error {
	if in.Value.Set && !in.Value.Null {
		if err := httpx.CheckJSONText("value", in.Value.Value); err != nil {
			return apperr.OnField("value", err)
		}
		if err := httpx.CheckFreeJSON("value", in.Value.Value); err != nil {
			return apperr.OnField("value", err)
		}
	}
	return apperr.OnField("description", httpx.CheckLen("description", in.Description.Value, httpx.MaxText))
}

// rawValue returns the JSON text of a value field; a JSON null stays null.
func rawValue(o httpx.Opt[json.RawMessage]) string {
	if o.Null {
		return "null"
	}
	return string(bytes.TrimSpace(o.Value))
}

// Create stores a new setting: a key of 1 to 128 letters, digits, '_',
// '.', ':' or '-', any JSON value, an optional description and public flag.
// A key that exists is a Conflict. The errors name their field
// (apperr.FieldOf).
func (s *Service) Create(ctx context.Context, in SettingInput) (Setting, error) {
	if !keyPattern.MatchString(in.Key.Value) {
		return Setting{}, apperr.OnField("key", apperr.Invalid("key is required: 1 to 128 letters, digits, '_', '.', ':' or '-'"))
	}
	if !in.Value.Set {
		return Setting{}, apperr.OnField("value", apperr.Invalid("value is required (any JSON value)"))
	}
	if err := in.check(); err != nil {
		return Setting{}, err
	}
	now := db.TS(s.Clock.Now())
	_, err := s.DB.ExecContext(ctx, `INSERT INTO settings (key, value, description, is_public, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
		in.Key.Value, rawValue(in.Value), in.Description.Value, in.IsPublic.Value, now)
	if db.IsUniqueViolation(err) {
		return Setting{}, apperr.OnField("key", apperr.Conflictf("setting %q already exists; use PUT /v1/settings/%s to change it", in.Key.Value, in.Key.Value))
	}
	if err != nil {
		return Setting{}, err
	}
	return s.Get(ctx, in.Key.Value)
}

// Update changes the fields of the setting key that in gives (at least one
// of value, description, is_public); the key itself cannot change.
func (s *Service) Update(ctx context.Context, key string, in SettingInput) (Setting, error) {
	if in.Key.Set && in.Key.Value != key {
		return Setting{}, apperr.OnField("key", apperr.Invalid("the key of a setting cannot be changed"))
	}
	if !in.Value.Set && !in.Description.Set && !in.IsPublic.Set {
		return Setting{}, apperr.Invalid("give at least one of value, description, is_public")
	}
	if err := in.check(); err != nil {
		return Setting{}, err
	}
	st, err := s.Get(ctx, key)
	if err != nil {
		return st, err
	}
	value := string(st.Value)
	if in.Value.Set {
		value = rawValue(in.Value)
	}
	if in.Description.Set {
		st.Description = in.Description.Value
	}
	if in.IsPublic.Set {
		st.IsPublic = in.IsPublic.Value
	}
	if _, err := s.DB.ExecContext(ctx, `UPDATE settings SET value = $1, description = $2, is_public = $3, updated_at = $4 WHERE key = $5`,
		value, st.Description, st.IsPublic, db.TS(s.Clock.Now()), key); err != nil {
		return st, err
	}
	return s.Get(ctx, key)
}

// Delete removes the setting key; a missing one is NotFound.
func (s *Service) Delete(ctx context.Context, key string) error {
	return db.ExecOne(ctx, s.DB, "setting "+strconv.Quote(key), `DELETE FROM settings WHERE key = $1`, key)
}

// Create serves POST /v1/settings {key, value, description, is_public}: 201;
// 409 when the key exists.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	var in SettingInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	st, err := h.S.Create(r.Context(), in)
	httpx.RespondAt(w, r, http.StatusCreated, st, "/v1/settings/"+st.Key, err)
}

// Update serves PUT /v1/settings/{key} {value, description?, is_public?}.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	var in SettingInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	st, err := h.S.Update(r.Context(), chi.URLParam(r, "key"), in)
	httpx.Respond(w, r, http.StatusOK, st, err)
}

// Delete serves DELETE /v1/settings/{key}: 204, 404 when missing.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.Delete(r.Context(), chi.URLParam(r, "key")))
}
