package tracking

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// TestWriteBatchFallsBackPerPoint gives the writer a batch in which one point
// names an unknown device: the others are written, that one alone fails.
func TestWriteBatchFallsBackPerPoint(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d, err := db.Open(ctx, eng.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s := &Service{DB: d, Cache: cache.NewMemory(fc.Now), Clock: fc}
		defer s.Close()
		dev := uuid.NewString()
		if _, err := d.ExecContext(ctx, `INSERT INTO devices (id, name, created_at, updated_at) VALUES ($1, 'd', 1, 1)`, dev); err != nil {
			t.Fatal(err)
		}
		bad := uuid.NewString()
		var batch []ingestReq
		for i, device := range []string{dev, bad, dev} {
			device := device
			batch = append(batch, ingestReq{
				pt:   &Point{ID: newID(), DeviceID: &device, Timestamp: fc.Now().Add(time.Duration(i) * time.Hour), CreatedAt: fc.Now()},
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
