package audit

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/mail"
)

// Admin returns one page of every event matching the query q (the
// parameters of ParseAdminFilter), with the filter read from it and the
// number of all matching events: GET /v1/admin/audit and the admin
// console's audit log.
func (s *Service) Admin(ctx context.Context, q url.Values) (Filter, []Entry, int, error) {
	f, err := ParseAdminFilter(q)
	if err != nil {
		return f, nil, 0, err
	}
	events, total, err := List(ctx, s.DB, f)
	return f, events, total, err
}

// Person is how an operator recognizes a user id of the log.
type Person struct {
	Username string
	Email    string
}

// People returns the users among ids by id. Ids of no user (a chat-platform
// id sent by a bot, a user purged since) are absent.
func (s *Service) People(ctx context.Context, ids []string) (map[string]Person, error) {
	out := map[string]Person{}
	ids = distinct(ids)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT id, username, email FROM users WHERE id IN (`+marks(len(ids))+`)`, anys(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var name, email sql.NullString
		if err := rows.Scan(&id, &name, &email); err != nil {
			return nil, err
		}
		out[id] = Person{Username: name.String, Email: email.String}
	}
	return out, rows.Err()
}

// Events returns the events among ids by id, so a list of reports can show
// what each one is about.
func (s *Service) Events(ctx context.Context, ids []string) (map[string]Entry, error) {
	ids = distinct(ids)
	if len(ids) == 0 {
		return map[string]Entry{}, nil
	}
	return s.eventsWhere(ctx, `id IN (`+marks(len(ids))+`)`, anys(ids)...)
}

// eventsWhere returns the events matching the condition where, by id.
func (s *Service) eventsWhere(ctx context.Context, where string, args ...any) (map[string]Entry, error) {
	events, err := db.All(ctx, s.DB, func(r db.Scanner) (Entry, error) { return scanEntry(r) },
		`SELECT `+entryCols+` FROM audit_events WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Entry, len(events))
	for _, e := range events {
		out[e.ID] = e
	}
	return out, nil
}

// distinct returns the non-empty values of ids, each once.
func distinct(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// marks returns n placeholders "$1, …, $n".
func marks(n int) string {
	m := make([]string, n)
	for i := range m {
		m[i] = "$" + strconv.Itoa(i+1)
	}
	return strings.Join(m, ", ")
}

func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// Reports returns every report, newest first; with status (one of
// ReportStatuses) only the reports in it: GET /v1/admin/audit/reports and
// the admin console's reports queue.
func (s *Service) Reports(ctx context.Context, status string) ([]Report, error) {
	if status == "" {
		return listReports(ctx, s.DB, "TRUE")
	}
	if !slices.Contains(ReportStatuses, status) {
		return nil, invalidField("status", "status must be one of %s", strings.Join(ReportStatuses, ", "))
	}
	return listReports(ctx, s.DB, "status = $1", status)
}

// ReviewInput is a reviewer's change to a report: the status, the
// resolution notes or both; an absent field keeps its value, null notes
// clear them.
type ReviewInput struct {
	Status          httpx.Opt[string] `json:"status"`
	ResolutionNotes httpx.Opt[string] `json:"resolution_notes"`
}

// Review changes report id as in says (spec 2, Audit report: PATCH report,
// audit:write), records p as the reviewer and the time, and emails the
// reporting user when the status or the notes actually changed.
func (s *Service) Review(ctx context.Context, p *authn.Principal, id string, in ReviewInput) (Report, error) {
	if p == nil {
		return Report{}, apperr.Unauthorizedf("sign in to review a report")
	}
	if !in.Status.Set && !in.ResolutionNotes.Set {
		return Report{}, apperr.Invalid("give status, resolution_notes or both")
	}
	if in.Status.Set && !slices.Contains(ReportStatuses, in.Status.Value) {
		return Report{}, invalidField("status", "status must be one of %s", strings.Join(ReportStatuses, ", "))
	}
	notes := strings.TrimSpace(in.ResolutionNotes.Value)
	if len(notes) > MaxReportText {
		return Report{}, invalidField("resolution_notes", "resolution_notes must be at most %d bytes", MaxReportText)
	}
	now := s.Clock.Now()
	var before, after Report
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if before, err = getReport(ctx, tx, id); err != nil {
			return err
		}
		status := before.Status
		if in.Status.Set {
			status = in.Status.Value
		}
		var notesArg any
		if in.ResolutionNotes.Set {
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
		return Report{}, err
	}
	if after.Status != before.Status || !samePtr(after.ResolutionNotes, before.ResolutionNotes) {
		s.notify(ctx, after, now)
	}
	return after, nil
}

// reviewer is who reviewed: the acting user, or for an ownerless system key
// the key id, so the record always names the credential that changed it.
func reviewer(p *authn.Principal) any {
	if a := p.Actor(); a != "" {
		return a
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
func (s *Service) notify(ctx context.Context, rp Report, at time.Time) {
	var email, name, locale sql.NullString
	err := s.DB.QueryRowContext(ctx, `SELECT email, name, preferred_locale FROM users WHERE id = $1 AND deleted_at IS NULL`, rp.UserID).Scan(&email, &name, &locale)
	if err != nil || email.String == "" {
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			s.Log.Error("audit report mail: load user", slog.String("error", err.Error()))
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
		err = s.Mail.Send(ctx, msg)
	}
	if err != nil {
		s.Log.Error("audit report mail", slog.String("report_id", rp.ID), slog.String("error", err.Error()))
	}
}
