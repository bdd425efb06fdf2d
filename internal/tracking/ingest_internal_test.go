package tracking

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// TestWriteBatchFallsBackPerPoint gives the writer a batch in which one point
// names an unknown device: the others are written, that one alone fails.
func TestWriteBatchFallsBackPerPoint(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d, s, fc := ingestService(t, eng)
		dev := newDevice(t, d)
		bad := uuid.NewString()
		var batch []ingestReq
		for i, device := range []string{dev, bad, dev} {
			device := device
			batch = append(batch, ingestReq{
				pt:   &Point{ID: db.NewID(), DeviceID: &device, Timestamp: fc.Now().Add(time.Duration(i) * time.Hour), CreatedAt: fc.Now()},
				done: make(chan error, 1),
			})
		}
		s.writeBatch(batch)
		for _, r := range batch {
			err := <-r.done
			if (*r.pt.DeviceID == bad) != (err != nil) || (err != nil && !db.IsForeignKeyViolation(err)) {
				t.Fatalf("point of %s: %v", *r.pt.DeviceID, err)
			}
		}
		var total, buckets int64
		if err := d.QueryRowContext(ctx, `SELECT (SELECT SUM(n) FROM gps_point_count), (SELECT SUM(n) FROM gps_point_buckets)`).Scan(&total, &buckets); err != nil {
			t.Fatal(err)
		}
		if total != 2 || buckets != 2 {
			t.Fatalf("counted %d points, %d in buckets; want 2", total, buckets)
		}
	})
}

// TestWriteBatchLinksTripsAndCounts writes one batch mixing a device with a
// GPS-logging trip, a device without one and a point without a device, with
// and without dilution values: each point gets its own trip link, every
// optional value survives, and the counters add up per slot and hour.
func TestWriteBatchLinksTripsAndCounts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d, s, fc := ingestService(t, eng)
		logged, idle, trip := newDevice(t, d), newDevice(t, d), uuid.NewString()
		if _, err := d.ExecContext(ctx, `INSERT INTO trips (id, name, status, gps_logging_enabled, device_id, created_at, updated_at)
			VALUES ($1, 't', 'active', TRUE, $2, 1, 1)`, trip, logged); err != nil {
			t.Fatal(err)
		}
		pdop := 1.5
		devices := []*string{&logged, &idle, nil, &logged}
		var batch []ingestReq
		for i, dev := range devices {
			pt := &Point{ID: db.NewID(), DeviceID: dev, Latitude: float64(i), Timestamp: fc.Now().Add(time.Duration(i) * 40 * time.Minute), CreatedAt: fc.Now()}
			if i%2 == 0 {
				pt.PDOP = &pdop
			}
			batch = append(batch, ingestReq{pt: pt, done: make(chan error, 1)})
		}
		s.writeBatch(batch)
		for i, r := range batch {
			if err := <-r.done; err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			wantTrip := r.pt.DeviceID != nil && *r.pt.DeviceID == logged
			if (r.pt.TripID != nil) != wantTrip || (wantTrip && *r.pt.TripID != trip) {
				t.Errorf("point %d: trip %v, want linked %v", i, r.pt.TripID, wantTrip)
			}
			got, err := scanPoint(d.QueryRowContext(ctx, `SELECT `+pointCols+` FROM gps_points WHERE id = $1`, r.pt.ID))
			if err != nil {
				t.Fatal(err)
			}
			if (got.PDOP != nil) != (r.pt.PDOP != nil) || (got.DeviceID == nil) != (r.pt.DeviceID == nil) ||
				got.Latitude != r.pt.Latitude || !got.Timestamp.Equal(r.pt.Timestamp) || (got.TripID == nil) != !wantTrip {
				t.Errorf("point %d stored as %+v, written %+v", i, got, *r.pt)
			}
		}
		var total, buckets, hours int64
		if err := d.QueryRowContext(ctx, `SELECT (SELECT SUM(n) FROM gps_point_count), (SELECT SUM(n) FROM gps_point_buckets),
			(SELECT COUNT(DISTINCT bucket) FROM gps_point_buckets)`).Scan(&total, &buckets, &hours); err != nil {
			t.Fatal(err)
		}
		// Timestamps 0, 40, 80 and 120 minutes fall in hours 0, 0, 1 and 2.
		if total != 4 || buckets != 4 || hours != 3 {
			t.Fatalf("counted %d points, %d in buckets over %d hours; want 4, 4, 3", total, buckets, hours)
		}
	})
}

// ingestService returns a migrated database of eng and a tracking service on
// it with an in-process cache and a fake clock; the service's writer stops
// before the database closes.
func ingestService(t *testing.T, eng dbtest.Engine) (*db.DB, *Service, *clocktest.Fake) {
	d := eng.Open(t)
	fc := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &Service{DB: d, Cache: cache.NewMemory(fc.Now), Clock: fc}
	t.Cleanup(func() { s.Close() })
	return d, s, fc
}

// newDevice inserts a device and returns its id.
func newDevice(t *testing.T, d *db.DB) string {
	id := uuid.NewString()
	if _, err := d.ExecContext(context.Background(), `INSERT INTO devices (id, name, created_at, updated_at) VALUES ($1, 'd', 1, 1)`, id); err != nil {
		t.Fatal(err)
	}
	return id
}
