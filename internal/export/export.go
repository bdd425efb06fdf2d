// Package export serves the personal-data export (spec 2, Personal-data
// export): it gathers everything the service stores about the caller, streams
// it as a ZIP archive rendered by package archive, and keeps the export
// history.
//
// The OAuth and two-factor areas own some of the data. They are reached
// through the small consumer interfaces AppSource and TwoFactorSource, so this
// package depends on neither; an unset source contributes nothing.
package export

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/export/archive"
	"hmid/internal/httpx"
)

// AppSource lists the OAuth clients a user consented to and those they own
// (implemented by the OAuth area).
type AppSource interface {
	ConnectedApps(ctx context.Context, userID string) ([]archive.ConnectedApp, error)
	OwnedApps(ctx context.Context, userID string) ([]archive.OwnedApp, error)
}

// TwoFactorSource reports a user's two-factor state (implemented by the
// two-factor area).
type TwoFactorSource interface {
	TwoFactorState(ctx context.Context, userID string) (archive.TwoFactorAuth, error)
}

// Handler serves the export and its history.
type Handler struct {
	DB          *db.DB
	Clock       clock.Clock
	Audit       *audit.Writer
	Log         *slog.Logger
	ServiceName string          // names the service in the archive and its file name; "" is archive.DefaultServiceName
	Apps        AppSource       // optional: connected and owned apps are empty without it
	TwoFactor   TwoFactorSource // optional: two-factor shows as disabled without it
}

// Export serves GET /v1/user/export: a ZIP archive (data.json, report.pdf,
// README.txt) of the caller's data, in their preferred language (see
// Download). Every failure before the first byte answers 500 with a JSON
// error.
func (h *Handler) Export(w http.ResponseWriter, r *http.Request) {
	if err := h.Download(w, r); err != nil {
		httpx.Error(w, r, err)
	}
}

// Download streams the export of the caller of r to w; the account
// console's download link calls it as the REST route does. An error it
// returns happened before the first byte, so the caller can still answer
// it; once the archive is streaming, a write error (the client went away)
// just ends the response. A delivered export is recorded in the export
// history and audited as data_exported.
func (h *Handler) Download(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p := authn.From(ctx)
	if p == nil || p.UserID == "" {
		return apperr.Unauthorizedf("a personal-data export needs the credential of a user")
	}
	now := h.Clock.Now()
	data, locale, err := h.Gather(ctx, p.UserID, now)
	if err != nil {
		return err
	}
	name := archive.FileName(h.ServiceName, now)
	out := &lazyWriter{w: w, start: func(hd http.Header) {
		hd.Set("Content-Type", "application/zip")
		hd.Set("Content-Disposition", `attachment; filename="`+name+`"`)
		hd.Set("Cache-Control", "no-store")
	}}
	if err := archive.Write(out, data, archive.Options{Locale: locale, ServiceName: h.ServiceName}); err != nil {
		if !out.started {
			return err
		}
		h.Log.Warn("data export aborted while streaming", slog.String("user_id", p.UserID), slog.String("error", err.Error()))
		return nil
	}
	ip, ua := httpx.ClientIP(ctx), r.UserAgent()
	// The archive is delivered: record it even if the client hangs up now.
	bg := context.WithoutCancel(ctx)
	err = h.DB.Tx(bg, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(bg, `INSERT INTO export_logs (id, user_id, exported_at, ip_address, user_agent, export_format, file_size_bytes, locale, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			uuid.NewString(), p.UserID, db.TS(now), ip, ua, archive.ExportFormat, out.n, locale, db.TS(h.Clock.Now())); err != nil {
			return err
		}
		_, err := h.Audit.Record(bg, tx, audit.FromRequest(r, audit.Event{
			UserID: p.UserID, EventType: audit.DataExported, ResourceType: "user", ResourceID: p.UserID,
			Description: "Personal-data export downloaded",
			Metadata:    map[string]any{"format": archive.ExportFormat, "file_size_bytes": out.n, "locale": locale},
		}))
		return err
	})
	if err != nil {
		// The user already has the archive; only the history entry is missing.
		h.Log.Error("record data export", slog.String("user_id", p.UserID), slog.String("error", err.Error()))
	}
	return nil
}

// lazyWriter sends the response headers with the first byte, so an error
// before it can still become a JSON error response, and counts what it wrote.
type lazyWriter struct {
	w       http.ResponseWriter
	start   func(http.Header)
	started bool
	n       int64
}

func (l *lazyWriter) Write(b []byte) (int, error) {
	if !l.started {
		l.started = true
		l.start(l.w.Header())
		l.w.WriteHeader(http.StatusOK)
	}
	n, err := l.w.Write(b)
	l.n += int64(n)
	return n, err
}

var _ io.Writer = (*lazyWriter)(nil)

// LogEntry is one entry of the export history.
type LogEntry struct {
	ID            string    `json:"id"`
	ExportedAt    time.Time `json:"exportedAt"`
	IPAddress     string    `json:"ipAddress"`
	UserAgent     string    `json:"userAgent"`
	ExportFormat  string    `json:"exportFormat"`
	FileSizeBytes int64     `json:"fileSizeBytes"`
	Locale        string    `json:"locale"`
	CreatedAt     time.Time `json:"createdAt"`
}

// LogPage is the answer of GET /v1/user/export/logs.
type LogPage struct {
	Logs    []LogEntry `json:"logs"`
	Total   int        `json:"total"`
	HasMore bool       `json:"hasMore"`
}

// Logs serves GET /v1/user/export/logs: the caller's export history, newest
// first; limit defaults to 50 and is clamped to 1..100, offset defaults to 0
// and a negative offset counts as 0. Unparsable values take the default.
func (h *Handler) Logs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	if p == nil || p.UserID == "" {
		httpx.Error(w, r, apperr.Unauthorizedf("the export history needs the credential of a user"))
		return
	}
	limit, offset := httpx.ParseLimitOffset(r, 50)
	out, err := h.History(ctx, p.UserID, limit, offset)
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// scanLog reads one export_logs row.
func scanLog(row db.Scanner) (LogEntry, error) {
	var e LogEntry
	var at, created int64
	err := row.Scan(&e.ID, &at, &e.IPAddress, &e.UserAgent, &e.ExportFormat, &e.FileSizeBytes, &e.Locale, &created)
	e.ExportedAt, e.CreatedAt = db.FromTS(at), db.FromTS(created)
	return e, err
}

// History returns a page of the export history of userID, newest first
// (limit and offset as parsed by httpx.ParseLimitOffset).
func (h *Handler) History(ctx context.Context, userID string, limit, offset int) (LogPage, error) {
	out := LogPage{Logs: []LogEntry{}}
	if err := h.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM export_logs WHERE user_id = $1`, userID).Scan(&out.Total); err != nil {
		return LogPage{}, err
	}
	logs, err := db.All(ctx, h.DB, scanLog, `SELECT id, exported_at, ip_address, user_agent, export_format, file_size_bytes, locale, created_at
		FROM export_logs WHERE user_id = $1 ORDER BY exported_at DESC, id DESC LIMIT $2 OFFSET $3`, userID, limit, offset)
	if err != nil {
		return LogPage{}, err
	}
	out.Logs = logs
	out.HasMore = offset+len(out.Logs) < out.Total
	return out, nil
}

// errNoUser is returned by Gather for a user that does not exist: the
// credential outlived its user, so the caller is not authenticated as anyone.
var errNoUser = apperr.Unauthorizedf("the user of this credential no longer exists")

// isNoRows maps sql.ErrNoRows to errNoUser.
func isNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNoUser
	}
	return err
}
