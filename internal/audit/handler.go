package audit

import (
	"database/sql"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Handler serves the audit log, audit reports and the internal audit
// endpoint (spec 2, Audit log). The user's own listing and reports are S's.
type Handler struct {
	S      *Service
	DB     *db.DB
	Clock  clock.Clock
	Writer *Writer
}

// ListMine serves GET /v1/users/me/audit: the caller's own events.
func (h *Handler) ListMine(w http.ResponseWriter, r *http.Request) {
	f, events, total, err := h.S.Mine(r.Context(), authn.From(r.Context()), r.URL.Query())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.page(w, r, f, events, total)
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
	events, total, err := List(ctx, h.DB, f)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.page(w, r, f, events, total)
}

// ListAdmin serves GET /v1/admin/audit (audit:read): every event, with the
// full set of filters and sorts (Service.Admin).
func (h *Handler) ListAdmin(w http.ResponseWriter, r *http.Request) {
	f, events, total, err := h.S.Admin(r.Context(), r.URL.Query())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.page(w, r, f, events, total)
}

// ExportAdmin serves GET /v1/admin/audit/export (audit:read, an
// extension): every event the filters of GET /v1/admin/audit select, as a
// CSV file (Service.WriteCSV). A refused filter is answered as JSON like
// the listing's.
func (h *Handler) ExportAdmin(w http.ResponseWriter, r *http.Request) {
	if err := h.S.WriteCSV(w, r); err != nil {
		httpx.Error(w, r, err)
	}
}

// page answers one page of events in the envelope of spec 2.
func (h *Handler) page(w http.ResponseWriter, r *http.Request, f Filter, events []Entry, total int) {
	httpx.JSON(w, http.StatusOK, EventPage{
		Events: events, TotalCount: total, Page: f.Page.Page, Limit: f.Page.Limit,
		TotalPages: f.Page.TotalPages(total), Links: f.Page.Links(r, total),
	})
}
