package audit

import (
	"database/sql"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/mail"
)

// Handler serves the audit log, audit reports and the internal audit
// endpoint (spec 2, Audit log).
type Handler struct {
	DB     *db.DB
	Clock  clock.Clock
	Writer *Writer
	Mail   mail.Sender
	Log    *slog.Logger
}

// ListMine serves GET /v1/users/me/audit: the caller's own events.
func (h *Handler) ListMine(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	if p.UserID == "" {
		httpx.Error(w, r, apperr.Forbiddenf("this endpoint lists the audit log of a user; the credential belongs to no user"))
		return
	}
	f, err := ParseUserFilter(r.URL.Query())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	f.UserID = p.UserID
	h.list(w, r, f)
}

// ListUser serves GET /v1/users/{user_id}/audit (audit:read).
func (h *Handler) ListUser(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := chi.URLParam(r, "user_id")
	f, err := ParseUserFilter(r.URL.Query())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var one int
	if err := h.DB.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = $1`, id).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = apperr.NotFoundf("user not found")
		}
		httpx.Error(w, r, err)
		return
	}
	f.UserID = id
	h.list(w, r, f)
}

// ListAdmin serves GET /v1/admin/audit (audit:read): every event, with the
// full set of filters and sorts.
func (h *Handler) ListAdmin(w http.ResponseWriter, r *http.Request) {
	f, err := ParseAdminFilter(r.URL.Query())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.list(w, r, f)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, f Filter) {
	events, total, err := List(r.Context(), h.DB, f)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, EventPage{
		Events: events, TotalCount: total, Page: f.Page.Page, Limit: f.Page.Limit,
		TotalPages: f.Page.TotalPages(total), Links: f.Page.Links(r, total),
	})
}
