package audit

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/mail"
)

// ReportReasons are the reasons a user may give for reporting an event.
var ReportReasons = []string{"not_me", "suspicious", "unknown_device", "unknown_location", "other"}

// ReportStatuses are the review states of a report. Any status may follow any
// other: the spec sets no order, and a reviewer must be able to reopen a
// dismissed report.
var ReportStatuses = []string{"pending", "reviewed", "resolved", "dismissed"}

// maxReportText bounds description and resolution notes.
const maxReportText = 2000

// Report is an audit report (spec 2, Audit report).
type Report struct {
	ID              string     `json:"id"`
	AuditEventID    string     `json:"audit_event_id"`
	UserID          string     `json:"user_id"`
	Reason          string     `json:"reason"`
	Description     *string    `json:"description"`
	Status          string     `json:"status"`
	ReviewedBy      *string    `json:"reviewed_by"`
	ReviewedAt      *time.Time `json:"reviewed_at"`
	ResolutionNotes *string    `json:"resolution_notes"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

const reportCols = `id, audit_event_id, user_id, reason, description, status, reviewed_by, reviewed_at, resolution_notes, created_at, updated_at`

func scanReport(row interface{ Scan(...any) error }) (Report, error) {
	var (
		rp               Report
		desc, by, notes  sql.NullString
		reviewed         db.NullTime
		created, updated int64
	)
	err := row.Scan(&rp.ID, &rp.AuditEventID, &rp.UserID, &rp.Reason, &desc, &rp.Status, &by, &reviewed, &notes, &created, &updated)
	rp.Description, rp.ReviewedBy, rp.ResolutionNotes = db.StringPtr(desc), db.StringPtr(by), db.StringPtr(notes)
	rp.ReviewedAt = reviewed.Ptr()
	rp.CreatedAt, rp.UpdatedAt = db.FromTS(created), db.FromTS(updated)
	return rp, err
}

func getReport(ctx context.Context, q db.Querier, id string) (Report, error) {
	rp, err := scanReport(q.QueryRowContext(ctx, `SELECT `+reportCols+` FROM audit_reports WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return rp, apperr.NotFoundf("audit report not found")
	}
	return rp, err
}

func listReports(ctx context.Context, q db.Querier, where string, args ...any) ([]Report, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+reportCols+` FROM audit_reports WHERE `+where+` ORDER BY created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Report{}
	for rows.Next() {
		rp, err := scanReport(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rp)
	}
	return out, rows.Err()
}

// ReportResult is the answer to a new report: {success, report, error}.
type ReportResult struct {
	Success bool    `json:"success"`
	Report  *Report `json:"report"`
	Error   *string `json:"error"`
}

type reportBody struct {
	Reason      string `json:"reason"`
	Description string `json:"description"`
}

// CreateReport serves POST /v1/users/me/audit/{event_id}/report: the caller
// reports one of their own events. Someone else's event answers 404, so event
// ids of other users cannot be probed; a second report of the same event 409.
func (h *Handler) CreateReport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	var b reportBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !slices.Contains(ReportReasons, b.Reason) {
		httpx.Error(w, r, apperr.Invalid("reason is required and must be one of %s", strings.Join(ReportReasons, ", ")))
		return
	}
	desc := strings.TrimSpace(b.Description)
	if len(desc) > maxReportText {
		httpx.Error(w, r, apperr.Invalid("description must be at most %d bytes", maxReportText))
		return
	}
	eventID := chi.URLParam(r, "event_id")
	id := uuid.NewString()
	now := db.TS(h.Clock.Now())
	err := h.DB.Tx(ctx, func(tx *db.Tx) error {
		var owner sql.NullString
		var reported bool
		err := tx.QueryRowContext(ctx, `SELECT user_id, is_reported FROM audit_events WHERE id = $1`, eventID).Scan(&owner, &reported)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && (p.UserID == "" || owner.String != p.UserID)) {
			return apperr.NotFoundf("audit event not found")
		}
		if err != nil {
			return err
		}
		if reported {
			return apperr.Conflictf("this event has already been reported")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_reports (id, audit_event_id, user_id, reason, description, status, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6)`, id, eventID, p.UserID, b.Reason, nullable(desc), now); err != nil {
			if db.IsUniqueViolation(err) {
				return apperr.Conflictf("this event has already been reported")
			}
			return err
		}
		return markReported(ctx, tx, eventID)
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	rp, err := getReport(ctx, h.DB, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusCreated, ReportResult{Success: true, Report: &rp})
}

// ListMyReports serves GET /v1/users/me/audit/reports: the caller's reports,
// newest first, as a bare array.
func (h *Handler) ListMyReports(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	out, err := listReports(r.Context(), h.DB, `user_id = $1`, p.UserID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, out)
}

// ListReports serves GET /v1/admin/audit/reports (audit:read): every report,
// newest first, optionally only those with one status, as a bare array.
func (h *Handler) ListReports(w http.ResponseWriter, r *http.Request) {
	where, args := "TRUE", []any(nil)
	if s := r.URL.Query().Get("status"); s != "" {
		if !slices.Contains(ReportStatuses, s) {
			httpx.Error(w, r, apperr.Invalid("status must be one of %s", strings.Join(ReportStatuses, ", ")))
			return
		}
		where, args = "status = $1", []any{s}
	}
	out, err := listReports(r.Context(), h.DB, where, args...)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, out)
}

type reviewBody struct {
	Status          httpx.Opt[string] `json:"status"`
	ResolutionNotes httpx.Opt[string] `json:"resolution_notes"`
}

// UpdateReport serves PATCH /v1/admin/audit/reports/{report_id}
// (audit:write): sets the status and/or resolution notes, records the
// reviewer and the time, and emails the reporting user about the change.
func (h *Handler) UpdateReport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	var b reviewBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Status.Set && !b.ResolutionNotes.Set {
		httpx.Error(w, r, apperr.Invalid("give status, resolution_notes or both"))
		return
	}
	if b.Status.Set && !slices.Contains(ReportStatuses, b.Status.Value) {
		httpx.Error(w, r, apperr.Invalid("status must be one of %s", strings.Join(ReportStatuses, ", ")))
		return
	}
	notes := strings.TrimSpace(b.ResolutionNotes.Value)
	if len(notes) > maxReportText {
		httpx.Error(w, r, apperr.Invalid("resolution_notes must be at most %d bytes", maxReportText))
		return
	}
	id := chi.URLParam(r, "report_id")
	now := h.Clock.Now()
	var before, after Report
	err := h.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if before, err = getReport(ctx, tx, id); err != nil {
			return err
		}
		status := before.Status
		if b.Status.Set {
			status = b.Status.Value
		}
		var notesArg any
		if b.ResolutionNotes.Set {
			notesArg = nullable(notes)
		} else if before.ResolutionNotes != nil {
			notesArg = *before.ResolutionNotes
		}
		if _, err := tx.ExecContext(ctx, `UPDATE audit_reports SET status = $1, resolution_notes = $2, reviewed_by = $3, reviewed_at = $4, updated_at = $4 WHERE id = $5`,
			status, notesArg, reviewer(p), db.TS(now), id); err != nil {
			return err
		}
		after, err = getReport(ctx, tx, id)
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if after.Status != before.Status || !samePtr(after.ResolutionNotes, before.ResolutionNotes) {
		h.notify(ctx, after, now)
	}
	httpx.JSON(w, http.StatusOK, after)
}

// reviewer is who reviewed: the acting user, or for an ownerless system key
// the key id, so the record always names the credential that changed it.
func reviewer(p *authn.Principal) any {
	if p.UserID != "" {
		return p.UserID
	}
	if p.APIKeyID != "" {
		return p.APIKeyID
	}
	return nil
}

func samePtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// notify emails the reporting user about the report's new state in their
// preferred language. The review is already committed, so a mail failure is
// logged rather than failing the request.
func (h *Handler) notify(ctx context.Context, rp Report, at time.Time) {
	var email, name, locale sql.NullString
	err := h.DB.QueryRowContext(ctx, `SELECT email, name, preferred_locale FROM users WHERE id = $1 AND deleted_at IS NULL`, rp.UserID).Scan(&email, &name, &locale)
	if err != nil || email.String == "" {
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			h.Log.Error("audit report mail: load user", slog.String("error", err.Error()))
		}
		return
	}
	data := mail.Data{Name: name.String, ReportID: rp.ID, Status: rp.Status, Time: at}
	if rp.ResolutionNotes != nil {
		data.ResolutionNotes = *rp.ResolutionNotes
	}
	msg, err := mail.Render(mail.KindAuditReportStatusChanged, locale.String, data)
	if err == nil {
		msg.To = email.String
		err = h.Mail.Send(ctx, msg)
	}
	if err != nil {
		h.Log.Error("audit report mail", slog.String("report_id", rp.ID), slog.String("error", err.Error()))
	}
}
