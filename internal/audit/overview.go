package audit

import (
	"context"
	"time"

	"hmid/internal/db"
)

// DaySignIns are the sign-ins of one UTC day: successful ones, and failed
// attempts (login_failed, or a login recorded as failed).
type DaySignIns struct {
	Day     time.Time // the start of the day, UTC
	SignIns int
	Failed  int
}

// SignInsPerDay returns the sign-ins of each of the last days UTC days, the
// current day last, every day present (with zeros when nothing happened).
// It sums the daily counts the writer keeps (audit_event_counts), so it
// reads a few rows per day however long the log is.
func (s *Service) SignInsPerDay(ctx context.Context, days int) ([]DaySignIns, error) {
	days = max(days, 1)
	today := floorDay(db.TS(s.Clock.Now()))
	first := today - int64(days-1)*dayMicros
	out := make([]DaySignIns, days)
	for i := range out {
		out[i].Day = db.FromTS(first + int64(i)*dayMicros)
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT day, event_type, status, SUM(n) FROM audit_event_counts
		WHERE day >= $1 AND day <= $2 AND event_type IN ($3, $4) GROUP BY day, event_type, status`, first, today, Login, LoginFailed)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var day, n int64
		var eventType, status string
		if err := rows.Scan(&day, &eventType, &status, &n); err != nil {
			return nil, err
		}
		d := &out[(day-first)/dayMicros]
		if eventType == Login && status == StatusSuccess {
			d.SignIns += int(n)
		} else {
			d.Failed += int(n)
		}
	}
	return out, rows.Err()
}

// CountReports returns the number of reports with status (one of
// ReportStatuses), the length of GET /v1/admin/audit/reports?status=….
func (s *Service) CountReports(ctx context.Context, status string) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_reports WHERE status = $1`, status).Scan(&n)
	return n, err
}
