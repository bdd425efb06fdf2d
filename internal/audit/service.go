package audit

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/mail"
)

// Service is the audit log as people use it: a user's own events and their
// reports of events they do not recognize, and an operator's view of every
// event, its CSV download and the review of reports. The REST routes under
// /v1/users/me/audit and /v1/admin/audit, the account console's activity
// page and the admin console's audit pages call it, so each pair lists the
// same rows and accepts the same changes.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Mail  mail.Sender  // the reporting user's mail about a review
	Log   *slog.Logger // what fails after a review or a download is committed to
}

// FieldError is an invalid input value together with the query parameter or
// body field it came in, so a form can show the message at its field. It
// unwraps to the *apperr.Error the API answers with.
type FieldError struct {
	Field string
	Err   *apperr.Error
}

func (e *FieldError) Error() string { return e.Err.Error() }

// Unwrap returns the API error.
func (e *FieldError) Unwrap() error { return e.Err }

// invalidField is a ValidationError about one field.
func invalidField(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: apperr.Invalid(format, args...)}
}

// Mine returns one page of p's own events matching the query q (the
// parameters of ParseUserFilter), with the filter read from it and the
// number of all matching events. A credential of no user (a system key) is
// refused: the listing is of a user's own log.
func (s *Service) Mine(ctx context.Context, p *authn.Principal, q url.Values) (Filter, []Entry, int, error) {
	if p == nil || p.UserID == "" {
		return Filter{}, nil, 0, apperr.Forbiddenf("this endpoint lists the audit log of a user; the credential belongs to no user")
	}
	f, err := ParseUserFilter(q)
	if err != nil {
		return f, nil, 0, err
	}
	f.UserID = p.UserID
	events, total, err := List(ctx, s.DB, f)
	return f, events, total, err
}

// ReportInput is what a user says about an event they report: one of
// ReportReasons and an optional description.
type ReportInput struct {
	Reason      string `json:"reason"`
	Description string `json:"description"`
}

// Report files p's report of their own event eventID (spec 2, Audit
// report): the report starts pending and the event is marked reported.
// Someone else's event is not found, so event ids of other users cannot be
// probed; a second report of the same event is a conflict.
func (s *Service) Report(ctx context.Context, p *authn.Principal, eventID string, in ReportInput) (Report, error) {
	if p == nil {
		return Report{}, apperr.Unauthorizedf("sign in to report an event")
	}
	if !slices.Contains(ReportReasons, in.Reason) {
		return Report{}, invalidField("reason", "reason is required and must be one of %s", strings.Join(ReportReasons, ", "))
	}
	desc := strings.TrimSpace(in.Description)
	if len(desc) > MaxReportText {
		return Report{}, invalidField("description", "description must be at most %d bytes", MaxReportText)
	}
	id := uuid.NewString()
	now := db.TS(s.Clock.Now())
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
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
			VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6)`, id, eventID, p.UserID, in.Reason, nullable(desc), now); err != nil {
			if db.IsUniqueViolation(err) {
				return apperr.Conflictf("this event has already been reported")
			}
			return err
		}
		return markReported(ctx, tx, eventID)
	})
	if err != nil {
		return Report{}, err
	}
	return getReport(ctx, s.DB, id)
}

// MyReports returns p's reports, newest first.
func (s *Service) MyReports(ctx context.Context, p *authn.Principal) ([]Report, error) {
	if p == nil {
		return []Report{}, nil
	}
	return listReports(ctx, s.DB, `user_id = $1`, p.UserID)
}

// ReportedEvents returns p's own events that are reported, by id, so a list
// of reports can say what each one is about.
func (s *Service) ReportedEvents(ctx context.Context, p *authn.Principal) (map[string]Entry, error) {
	out := map[string]Entry{}
	if p == nil || p.UserID == "" {
		return out, nil
	}
	return s.eventsWhere(ctx, `user_id = $1 AND is_reported = TRUE`, p.UserID)
}
