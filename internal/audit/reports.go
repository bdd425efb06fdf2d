package audit

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// ReportReasons are the reasons a user may give for reporting an event.
var ReportReasons = []string{"not_me", "suspicious", "unknown_device", "unknown_location", "other"}

// ReportStatuses are the review states of a report. Any status may follow any
// other: the spec sets no order, and a reviewer must be able to reopen a
// dismissed report.
var ReportStatuses = []string{"pending", "reviewed", "resolved", "dismissed"}

// MaxReportText bounds description and resolution notes, in bytes.
const MaxReportText = 2000

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

func scanReport(row db.Scanner) (Report, error) {
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
	return rp, db.NotFoundOr(err, "audit report")
}

func listReports(ctx context.Context, q db.Querier, where string, args ...any) ([]Report, error) {
	return db.All(ctx, q, scanReport, `SELECT `+reportCols+` FROM audit_reports WHERE `+where+` ORDER BY created_at DESC, id DESC`, args...)
}

// ReportResult is the answer to a new report: {success, report, error}.
type ReportResult struct {
	Success bool    `json:"success"`
	Report  *Report `json:"report"`
	Error   *string `json:"error"`
}

// CreateReport serves POST /v1/users/me/audit/{event_id}/report: the caller
// reports one of their own events (Service.Report).
func (h *Handler) CreateReport(w http.ResponseWriter, r *http.Request) {
	var b ReportInput
	if !httpx.Bind(w, r, &b) {
		return
	}
	rp, err := h.S.Report(r.Context(), authn.From(r.Context()), chi.URLParam(r, "event_id"), b)
	httpx.RespondJSON(w, r, http.StatusCreated, ReportResult{Success: true, Report: &rp}, err)
}

// ListMyReports serves GET /v1/users/me/audit/reports: the caller's reports,
// newest first, as a bare array.
func (h *Handler) ListMyReports(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.MyReports(r.Context(), authn.From(r.Context()))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// ListReports serves GET /v1/admin/audit/reports (audit:read): every report,
// newest first, optionally only those with one status, as a bare array
// (Service.Reports).
func (h *Handler) ListReports(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.Reports(r.Context(), r.URL.Query().Get("status"))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// UpdateReport serves PATCH /v1/admin/audit/reports/{report_id}
// (audit:write): sets the status and/or resolution notes, records the
// reviewer and the time, and emails the reporting user about the change
// (Service.Review).
func (h *Handler) UpdateReport(w http.ResponseWriter, r *http.Request) {
	var b ReviewInput
	if !httpx.Bind(w, r, &b) {
		return
	}
	rp, err := h.S.Review(r.Context(), authn.From(r.Context()), chi.URLParam(r, "report_id"), b)
	httpx.RespondJSON(w, r, http.StatusOK, rp, err)
}
