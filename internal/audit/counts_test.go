package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"hmid/internal/clock/clocktest"
	"hmid/internal/dbtest"
)

func TestFloorDay(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{0, 0}, {1, 0}, {dayMicros - 1, 0}, {dayMicros, dayMicros}, {-1, -dayMicros}, {-dayMicros, -dayMicros},
	} {
		if got := floorDay(c.in); got != c.want {
			t.Errorf("floorDay(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestCountMatchesTheLog checks that counts summed from audit_event_counts
// equal a plain COUNT over the log for many filters and date ranges,
// including partial days, bounds on midnight and reported events.
func TestCountMatchesTheLog(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		clk := clocktest.NewFake(start)
		w := &Writer{DB: d, Clock: clk}
		rng := rand.New(rand.NewPCG(7, 7))
		var ids []string
		for i := range 300 {
			clk.Set(start.Add(time.Duration(rng.Int64N(int64(10 * 24 * time.Hour)))))
			id, err := w.Record(ctx, d, Event{UserID: fmt.Sprint("u", i%3), EventType: EventTypes[rng.IntN(4)],
				Failed: rng.IntN(3) == 0, SourceService: SourceServices[rng.IntN(2)], ResourceType: []string{"", "session", "user"}[rng.IntN(3)]})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids[:20] {
			if err := markReported(ctx, d, id); err != nil {
				t.Fatal(err)
			}
		}
		tp := func(t time.Time) *time.Time { return &t }
		yes := true
		filters := []Filter{
			{}, {Status: StatusFailure}, {EventType: Login, Status: StatusSuccess}, {SourceService: "id"}, {IsReported: &yes},
			{Start: tp(start.Add(36 * time.Hour))}, {End: tp(start.Add(60*time.Hour + 7*time.Minute))},
			{Start: tp(start.Add(24 * time.Hour)), End: tp(start.Add(72*time.Hour - time.Microsecond))},
			{Start: tp(start.Add(25 * time.Hour)), End: tp(start.Add(26 * time.Hour))},
			{Start: tp(start.Add(23 * time.Hour)), End: tp(start.Add(200 * time.Hour)), EventType: LoginFailed},
			{Start: tp(start.Add(-100 * time.Hour)), End: tp(start.Add(1000 * time.Hour)), Status: StatusFailure, IsReported: &yes},
			{UserID: "u1", Start: tp(start.Add(30 * time.Hour))},
			{SourceService: "api", Status: StatusFailure, Start: tp(start.Add(30 * time.Hour)), End: tp(start.Add(100 * time.Hour))},
			{SourceService: "id", IsReported: &yes}, {Status: StatusSuccess, IsReported: &yes, End: tp(start.Add(99 * time.Hour))},
			{ResourceType: "session"}, {ResourceType: "user", Status: StatusFailure, IsReported: &yes},
			{ResourceType: "session", SourceService: "api", Start: tp(start.Add(30 * time.Hour)), End: tp(start.Add(150 * time.Hour))},
		}
		for i := range 40 {
			a := start.Add(time.Duration(rng.Int64N(int64(11 * 24 * time.Hour))))
			b := a.Add(time.Duration(rng.Int64N(int64(5 * 24 * time.Hour))))
			filters = append(filters, Filter{Start: &a, End: &b, Status: []string{"", StatusSuccess}[i%2]})
		}
		for _, f := range filters {
			got, err := count(ctx, d, f)
			if err != nil {
				t.Fatal(err)
			}
			where, args := f.where()
			var want int
			if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_events`+where, args...).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%+v: count %d, log has %d", f, got, want)
			}
		}
	})
}

// TestRecordRefusesUnlistedType: EventTypes is the one list of types, so a
// type missing from it (which the event_type filter would refuse) cannot be
// stored either.
func TestRecordRefusesUnlistedType(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		w := &Writer{DB: d, Clock: clocktest.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}
		if _, err := w.Record(ctx, d, Event{EventType: "made_up"}); err == nil {
			t.Fatal("an unlisted event type was stored")
		}
		var n int
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_events`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("stored %d events (%v)", n, err)
		}
		for _, typ := range []string{UserBanned, UserUnbanned, PlatformUpdated, Login} {
			if _, err := w.Record(ctx, d, Event{EventType: typ}); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
		}
	})
}
