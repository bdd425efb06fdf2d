package audit

import (
	"context"
	"strconv"

	"hmid/internal/db"
)

// dayMicros is the width of one audit_event_counts bucket: a UTC day.
const dayMicros = int64(86_400_000_000)

// floorDay returns the start of the UTC day holding the timestamp us.
func floorDay(us int64) int64 {
	d := us - us%dayMicros
	if us < 0 && us%dayMicros != 0 {
		d -= dayMicros
	}
	return d
}

// countDelta adds delta to the daily counts of one event's combination of
// dimensions (audit_event_counts; resource "" for none) and of its status
// (audit_event_day_counts). It runs in the transaction that writes or
// changes the event.
func countDelta(ctx context.Context, q db.Querier, createdAt int64, eventType, status, source, resource string, reported bool, delta int) error {
	_, err := q.ExecContext(ctx, `INSERT INTO audit_event_counts (day, event_type, status, source_service, is_reported, resource_type, n)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (day, event_type, status, source_service, is_reported, resource_type) DO UPDATE SET n = audit_event_counts.n + $7`,
		floorDay(createdAt), eventType, status, source, reported, resource, delta)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO audit_event_day_counts (day, status, is_reported, n) VALUES ($1, $2, $3, $4)
		ON CONFLICT (day, status, is_reported) DO UPDATE SET n = audit_event_day_counts.n + $4`,
		floorDay(createdAt), status, reported, delta)
	return err
}

// markReported sets is_reported on an event and moves it to the reported
// bucket of the daily counts.
func markReported(ctx context.Context, q db.Querier, eventID string) error {
	var created int64
	var eventType, status, source, resource string
	if err := q.QueryRowContext(ctx, `SELECT created_at, event_type, status, source_service, COALESCE(resource_type, '') FROM audit_events WHERE id = $1`, eventID).
		Scan(&created, &eventType, &status, &source, &resource); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE audit_events SET is_reported = TRUE WHERE id = $1`, eventID); err != nil {
		return err
	}
	if err := countDelta(ctx, q, created, eventType, status, source, resource, false, -1); err != nil {
		return err
	}
	return countDelta(ctx, q, created, eventType, status, source, resource, true, 1)
}

// countable reports whether the filter's count should use the daily counts:
// only when it constrains nothing but their dimensions and time, and not the
// event type. A user or an event type selects a small slice (one of 28
// types at most), which their indexes count faster than the sum over the
// daily rows; a resource type can select a third of the log.
func (f Filter) countable() bool {
	return f.UserID == "" && f.UserSearch == "" && f.EventType == ""
}

// count returns the exact number of events matching f. For filters on the
// daily counts' dimensions it sums the whole days inside the date range from
// audit_event_counts and counts only the partial days at its edges in the
// log; other filters are counted in the log through their indexes.
func count(ctx context.Context, q db.Querier, f Filter) (int, error) {
	if !f.countable() {
		return countLog(ctx, q, f)
	}
	from, to := f.wholeDays()
	if from != nil && to != nil && *from >= *to {
		// Less than a whole day: the log's created_at index counts it directly.
		return countLog(ctx, q, f)
	}
	total, err := sumDays(ctx, q, f, from, to)
	if err != nil {
		return 0, err
	}
	// The partial days before from and after to.
	if from != nil {
		c, err := countEdge(ctx, q, f, db.TS(*f.Start), *from)
		if err != nil {
			return 0, err
		}
		total += c
	}
	if to != nil {
		c, err := countEdge(ctx, q, f, *to, db.TS(*f.End)+1)
		if err != nil {
			return 0, err
		}
		total += c
	}
	return int(total), nil
}

// countLog counts the events matching f in the log itself.
func countLog(ctx context.Context, q db.Querier, f Filter) (int, error) {
	where, args := f.where()
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_events`+where, args...).Scan(&n)
	return n, err
}

// wholeDays returns the whole days [from, to) inside f's [start, end], as
// day starts in microseconds; nil where f leaves that side open.
func (f Filter) wholeDays() (from, to *int64) {
	if f.Start != nil {
		v := floorDay(db.TS(*f.Start))
		if v < db.TS(*f.Start) {
			v += dayMicros
		}
		from = &v
	}
	if f.End != nil {
		v := floorDay(db.TS(*f.End) + 1)
		to = &v
	}
	return from, to
}

// sumDays sums the daily counts of the days [from, to) matching f's
// dimensions.
func sumDays(ctx context.Context, q db.Querier, f Filter, from, to *int64) (int64, error) {
	// Without a source_service filter the per-status table answers with a
	// few rows per day.
	table := "audit_event_day_counts"
	if f.SourceService != "" || f.ResourceType != "" {
		table = "audit_event_counts"
	}
	var w whereList
	w.addText("source_service = ?", f.SourceService)
	w.addText("resource_type = ?", f.ResourceType)
	w.addText("status = ?", f.Status)
	if f.IsReported != nil {
		w.add("is_reported = ?", *f.IsReported)
	}
	if from != nil {
		w.add("day >= ?", *from)
	}
	if to != nil {
		w.add("day < ?", *to)
	}
	var total int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM `+table+w.clause(), w.args...).Scan(&total)
	return total, err
}

// countEdge counts the events matching f (but for its time range) created
// in [lo, hi), a partial day at an edge of the range.
func countEdge(ctx context.Context, q db.Querier, f Filter, lo, hi int64) (int64, error) {
	if lo >= hi {
		return 0, nil
	}
	g := f
	g.Start, g.End = nil, nil
	w, a := g.where()
	if w == "" {
		w = " WHERE "
	} else {
		w += " AND "
	}
	n := len(a)
	w += "created_at >= $" + strconv.Itoa(n+1) + " AND created_at < $" + strconv.Itoa(n+2)
	var c int64
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_events`+w, append(a, lo, hi)...).Scan(&c)
	return c, err
}
