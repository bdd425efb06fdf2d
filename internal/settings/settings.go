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
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Service holds the settings area's dependencies.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
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

func scanSetting(row interface{ Scan(...any) error }) (Setting, error) {
	var s Setting
	var v string
	var c, u int64
	err := row.Scan(&s.Key, &v, &s.Description, &s.IsPublic, &c, &u)
	s.Value = json.RawMessage(v)
	s.CreatedAt, s.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return s, err
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func (s *Service) list(ctx context.Context, publicOnly bool) ([]Setting, error) {
	q := `SELECT ` + settingCols + ` FROM settings ORDER BY key`
	if publicOnly {
		q = `SELECT ` + settingCols + ` FROM settings WHERE is_public ORDER BY key`
	}
	rows, err := s.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Setting{}
	for rows.Next() {
		st, err := scanSetting(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
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
	out, err := h.S.list(r.Context(), false)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, out)
}

// ListPublic serves GET /v1/settings/public: only settings marked is_public.
func (h *Handler) ListPublic(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.list(r.Context(), true)
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
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, st)
}

type settingBody struct {
	Key         httpx.Opt[string]          `json:"key"`
	Value       httpx.Opt[json.RawMessage] `json:"value"`
	Description httpx.Opt[string]          `json:"description"`
	IsPublic    httpx.Opt[bool]            `json:"is_public"`
}

// check bounds the fields present: value as free-form JSON, description as text.
func (b *settingBody) check() error {
	if b.Value.Set && !b.Value.Null {
		if err := httpx.CheckFreeJSON("value", b.Value.Value); err != nil {
			return err
		}
	}
	return httpx.CheckLen("description", b.Description.Value, httpx.MaxText)
}

// rawValue returns the JSON text of a value field; a JSON null stays null.
func rawValue(o httpx.Opt[json.RawMessage]) string {
	if o.Null {
		return "null"
	}
	return string(bytes.TrimSpace(o.Value))
}

// Create serves POST /v1/settings {key, value, description, is_public}: 201;
// 409 when the key exists.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	var b settingBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !keyPattern.MatchString(b.Key.Value) {
		httpx.Error(w, r, apperr.Invalid("key is required: 1 to 128 letters, digits, '_', '.', ':' or '-'"))
		return
	}
	if !b.Value.Set {
		httpx.Error(w, r, apperr.Invalid("value is required (any JSON value)"))
		return
	}
	if err := b.check(); err != nil {
		httpx.Error(w, r, err)
		return
	}
	now := db.TS(h.S.Clock.Now())
	_, err := h.S.DB.ExecContext(r.Context(), `INSERT INTO settings (key, value, description, is_public, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
		b.Key.Value, rawValue(b.Value), b.Description.Value, b.IsPublic.Value, now)
	if db.IsUniqueViolation(err) {
		httpx.Error(w, r, apperr.Conflictf("setting %q already exists; use PUT /v1/settings/%s to change it", b.Key.Value, b.Key.Value))
		return
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	st, err := h.S.Get(r.Context(), b.Key.Value)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, st, "/v1/settings/"+st.Key)
}

// Update serves PUT /v1/settings/{key} {value, description?, is_public?}.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	key := chi.URLParam(r, "key")
	var b settingBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if b.Key.Set && b.Key.Value != key {
		httpx.Error(w, r, apperr.Invalid("the key of a setting cannot be changed"))
		return
	}
	if !b.Value.Set && !b.Description.Set && !b.IsPublic.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of value, description, is_public"))
		return
	}
	if err := b.check(); err != nil {
		httpx.Error(w, r, err)
		return
	}
	ctx := r.Context()
	st, err := h.S.Get(ctx, key)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	value := string(st.Value)
	if b.Value.Set {
		value = rawValue(b.Value)
	}
	if b.Description.Set {
		st.Description = b.Description.Value
	}
	if b.IsPublic.Set {
		st.IsPublic = b.IsPublic.Value
	}
	if _, err := h.S.DB.ExecContext(ctx, `UPDATE settings SET value = $1, description = $2, is_public = $3, updated_at = $4 WHERE key = $5`,
		value, st.Description, st.IsPublic, db.TS(h.S.Clock.Now()), key); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if st, err = h.S.Get(ctx, key); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, st)
}

// Delete serves DELETE /v1/settings/{key}: 204, 404 when missing.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	res, err := h.S.DB.ExecContext(r.Context(), `DELETE FROM settings WHERE key = $1`, chi.URLParam(r, "key"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		httpx.Error(w, r, apperr.NotFoundf("setting %q not found", chi.URLParam(r, "key")))
		return
	}
	httpx.NoContent(w)
}
