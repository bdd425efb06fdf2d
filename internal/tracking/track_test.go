package tracking_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/tracking"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	// A degree of latitude is EarthRadius·π/180 on the sphere.
	if d := tracking.Distance(0, 0, 1, 0); math.Abs(d-111195.08) > 0.01 {
		t.Errorf("one degree of latitude: %.2f m", d)
	}
	// Berlin (Brandenburg Gate) to Paris (Eiffel Tower): about 878 km.
	if d := tracking.Distance(52.5163, 13.3777, 48.8584, 2.2945); math.Abs(d-878_000) > 2_000 {
		t.Errorf("Berlin to Paris: %.0f m", d)
	}
	if d := tracking.Distance(53.5, 9.9, 53.5, 9.9); d != 0 {
		t.Errorf("no move: %v", d)
	}
}

// TestTripTrack: the whole track is summed up in one pass, and its path is
// thinned to the size asked for, keeping the first and the last point.
func TestTripTrack(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := &tracking.Service{DB: e.Server.DB, Clock: e.Clock}
		trip := create(t, e, "/v1/trips", e.SystemKey, map[string]any{"name": "loop"})["id"].(string)
		const n = 25
		base := apptest.Start.Add(-time.Hour)
		want := 0.0
		var lat, lon float64
		for i := n - 1; i >= 0; i-- { // inserted backwards: the track is in time order all the same
			la, lo := 53.5+0.001*float64(i), 9.9+0.002*float64(i%5)
			if i < n-1 {
				want += tracking.Distance(la, lo, lat, lon)
			}
			lat, lon = la, lo
			if _, err := e.Server.DB.ExecContext(t.Context(), `INSERT INTO gps_points (id, trip_id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, created_at)
				VALUES ($1, $2, $3, $4, 0, 0, $5, 0, 0, 0, 0, $5)`, db.NewID(), trip, la, lo, db.TS(base.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct{ max, path int }{{100, 25}, {25, 25}, {10, 9}, {7, 7}, {2, 2}, {0, 2}} {
			tr, err := s.TripTrack(t.Context(), trip, c.max)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Points != n || math.Abs(tr.DistanceM-want) > 1e-6 || len(tr.Path) != c.path {
				t.Fatalf("max %d: %d points, %.1f m (want %.1f), path %d (want %d)", c.max, tr.Points, tr.DistanceM, want, len(tr.Path), c.path)
			}
			first, last := tr.Path[0], tr.Path[len(tr.Path)-1]
			if first != tr.Start || last != tr.End || !tr.Start.Time.Equal(base) || !tr.End.Time.Equal(base.Add((n-1)*time.Minute)) {
				t.Fatalf("max %d: path from %+v to %+v, track %+v to %+v", c.max, first, last, tr.Start, tr.End)
			}
			for i := 1; i < len(tr.Path); i++ {
				if !tr.Path[i].Time.After(tr.Path[i-1].Time) {
					t.Fatalf("max %d: path out of time order at %d", c.max, i)
				}
			}
			if tr.MinLat != 53.5 || math.Abs(tr.MaxLat-53.524) > 1e-9 || tr.MinLon != 9.9 || math.Abs(tr.MaxLon-9.908) > 1e-9 {
				t.Fatalf("bounding box %v %v %v %v", tr.MinLat, tr.MaxLat, tr.MinLon, tr.MaxLon)
			}
		}
		// A trip without points: nothing to draw. Unknown and malformed ids as on the REST route.
		empty := create(t, e, "/v1/trips", e.SystemKey, map[string]any{"name": "idle"})["id"].(string)
		if tr, err := s.TripTrack(t.Context(), empty, 10); err != nil || tr.Points != 0 || tr.Path != nil {
			t.Fatalf("empty trip: %+v %v", tr, err)
		}
		if _, err := s.TripTrack(t.Context(), "00000000-0000-4000-8000-000000000000", 10); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("unknown trip: %v", err)
		}
		var ae *apperr.Error
		if _, err := s.TripTrack(t.Context(), "x", 10); !errors.As(err, &ae) || ae.Message != "id must be a UUID" {
			t.Fatalf("malformed id: %v", err)
		}
	})
}
