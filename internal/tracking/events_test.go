package tracking_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apptest"
	"hmid/internal/events"
	"hmid/internal/tracking"
)

// recorder is an events.Publisher that keeps what it is given.
type recorder struct {
	mu  sync.Mutex
	got map[string][]any
}

func (r *recorder) Publish(_ context.Context, topic string, payload any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[topic] = append(r.got[topic], payload)
}

var _ events.Publisher = (*recorder)(nil)

// TestEventsPublished drives the area's service with a recording publisher:
// a new point of a device goes to gps.device.<id>, a status change to trips.<id>.
func TestEventsPublished(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		rec := &recorder{got: map[string][]any{}}
		s := e.Server
		h := &tracking.Handler{S: &tracking.Service{DB: s.DB, Cache: s.Cache, Limiter: s.Limiter, Clock: s.Clock, Events: rec}}
		t.Cleanup(func() { h.S.Close() })
		dev := create(t, e, "/v1/devices", e.SystemKey, map[string]any{"name": "d"})["id"].(string)
		trip := create(t, e, "/v1/trips", e.SystemKey, map[string]any{"name": "t", "device_id": dev, "gps_logging_enabled": true})["id"].(string)

		r := chi.NewRouter()
		r.Patch("/v1/trips/{id}", h.UpdateTrip)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("PATCH", "/v1/trips/"+trip, bytes.NewReader([]byte(`{"status":"active"}`))))
		if w.Code != http.StatusOK {
			t.Fatalf("activate: %d %s", w.Code, w.Body)
		}
		got := rec.got[events.Trip(trip)]
		if len(got) != 1 {
			t.Fatalf("trip events = %v", rec.got)
		}
		if ev := got[0].(tracking.TripEvent); ev.Trip.Status != "active" || ev.Change.OldStatus != "draft" || ev.Change.NewStatus != "active" {
			t.Fatalf("trip event = %+v", ev)
		}

		lat, lon, alt, hd, sp := 1.0, 2.0, 3.0, 4.0, 5.0
		ts := pointEpoch + 100
		pt, err := h.S.CreatePoint(t.Context(), nil, tracking.PointInput{Latitude: &lat, Longitude: &lon, Altitude: &alt, Heading: &hd, Timestamp: &ts,
			SpeedKmh: &sp, SpeedMps: &sp, SpeedMph: &sp, SpeedKnots: &sp, DeviceID: &dev})
		if err != nil {
			t.Fatal(err)
		}
		if p := rec.got[events.GPSDevice(dev)]; len(p) != 1 || p[0].(tracking.Point).ID != pt.ID || *pt.TripID != trip {
			t.Fatalf("gps events = %v, point %+v", rec.got, pt)
		}
		// A point without a device has no topic.
		if _, err := h.S.CreatePoint(t.Context(), nil, tracking.PointInput{Latitude: &lat, Longitude: &lon, Altitude: &alt, Heading: &hd, Timestamp: &ts,
			SpeedKmh: &sp, SpeedMps: &sp, SpeedMph: &sp, SpeedKnots: &sp}); err != nil {
			t.Fatal(err)
		}
		if len(rec.got) != 2 {
			t.Fatalf("topics = %v", rec.got)
		}
	})
}
