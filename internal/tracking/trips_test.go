package tracking_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
	"hmid/internal/tracking"
)

func TestTripLifecycleWithGPS(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		op := operator(t, e, "trips:read", "trips:write", "trips:delete", "gps:write", "gps:read", "gps:delete")
		reader := operator(t, e, "trips:read")
		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "truck"})["id"].(string)

		e.Call(t, "POST", "/v1/trips", reader.Token, map[string]any{"name": "x"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/trips", "", map[string]any{"name": "x"}, http.StatusUnauthorized)
		tr := create(t, e, "/v1/trips", op.Token, map[string]any{"name": "Berlin run", "device_id": dev, "gps_logging_enabled": true,
			"weight_kg": 1200.5, "tags": []string{"fragile", " ", "fragile", "cold"}, "notes": "n"})
		id := tr["id"].(string)
		if tr["status"] != "draft" || tr["started_at"] != nil || tr["weight_kg"] != 1200.5 || len(tr["tags"].([]any)) != 2 {
			t.Fatalf("new trip = %v", tr)
		}
		// A point while the trip is a draft is not linked.
		p0 := create(t, e, "/v1/gps", op.Token, point(10, map[string]any{"device_id": dev}))
		if p0["trip_id"] != nil {
			t.Fatalf("draft trip linked a point: %v", p0)
		}

		act := data(e.Call(t, "PATCH", "/v1/trips/"+id, op.Token, map[string]any{"status": "active", "latitude": 52.5, "longitude": 13.4}, http.StatusOK))
		if act["status"] != "active" || act["started_at"] != apptest.Start.Format(time.RFC3339) {
			t.Fatalf("activated = %v", act)
		}
		p1 := create(t, e, "/v1/gps", op.Token, point(20, map[string]any{"device_id": dev}))
		if p1["trip_id"] != id {
			t.Fatalf("point during an active logging trip = %v", p1)
		}
		e.Call(t, "DELETE", "/v1/gps/"+p1["id"].(string), op.Token, nil, http.StatusConflict)
		e.Call(t, "DELETE", "/v1/trips/"+id, op.Token, nil, http.StatusConflict)

		e.Clock.Advance(time.Minute)
		data(e.Call(t, "PATCH", "/v1/trips/"+id, op.Token, map[string]any{"status": "paused"}, http.StatusOK))
		if msg := e.Call(t, "DELETE", "/v1/trips/"+id, op.Token, nil, http.StatusConflict).JSON()["message"]; msg != "the trip is paused and cannot be deleted; complete it first" {
			t.Fatalf("deleting a paused trip: %v", msg)
		}
		if p := create(t, e, "/v1/gps", op.Token, point(30, map[string]any{"device_id": dev})); p["trip_id"] != nil {
			t.Fatalf("point during a paused trip = %v", p)
		}
		e.Clock.Advance(time.Minute)
		again := data(e.Call(t, "PATCH", "/v1/trips/"+id, op.Token, map[string]any{"status": "active"}, http.StatusOK))
		if again["started_at"] != apptest.Start.Format(time.RFC3339) {
			t.Fatalf("started_at moved on reactivation: %v", again)
		}
		p2 := create(t, e, "/v1/gps", op.Token, point(15, map[string]any{"device_id": dev, "pdop": 2.0}))
		e.Clock.Advance(time.Minute)
		done := data(e.Call(t, "PATCH", "/v1/trips/"+id, op.Token, map[string]any{"status": "completed", "end_latitude": 48.1, "end_longitude": 11.5}, http.StatusOK))
		if done["ended_at"] != apptest.Start.Add(3*time.Minute).Format(time.RFC3339) || done["end_latitude"] != 48.1 {
			t.Fatalf("completed = %v", done)
		}

		// Trip GPS: the trip's points only, oldest timestamp first.
		g := e.Call(t, "GET", "/v1/trips/"+id+"/gps", reader.Token, nil, http.StatusOK).JSON()
		pts := g["data"].([]any)
		if len(pts) != 2 || pts[0].(map[string]any)["id"] != p2["id"] || pts[1].(map[string]any)["id"] != p1["id"] || pts[0].(map[string]any)["pdop"] != 2.0 {
			t.Fatalf("trip gps = %s", ids(pts))
		}
		if g["pagination"].(map[string]any)["limit"] != 10.0 {
			t.Fatalf("trip gps pagination = %v", g["pagination"])
		}
		e.Call(t, "GET", "/v1/trips/"+uuid.NewString()+"/gps", sys, nil, http.StatusNotFound)

		// History: every change, in order, with who and where.
		h := e.Call(t, "GET", "/v1/trips/"+id+"/history", reader.Token, nil, http.StatusOK).Array()
		want := [][2]string{{"draft", "active"}, {"active", "paused"}, {"paused", "active"}, {"active", "completed"}}
		if len(h) != len(want) {
			t.Fatalf("history = %v", h)
		}
		for i, w := range want {
			x := h[i].(map[string]any)
			if x["old_status"] != w[0] || x["new_status"] != w[1] || x["changed_by"] != op.ID || x["trip_id"] != id {
				t.Fatalf("history[%d] = %v", i, x)
			}
		}
		if x := h[0].(map[string]any); x["latitude"] != 52.5 || x["longitude"] != 13.4 {
			t.Fatalf("history location = %v", x)
		}
		if x := h[1].(map[string]any); x["latitude"] != nil {
			t.Fatalf("history without location = %v", x)
		}
		e.Call(t, "GET", "/v1/trips/"+uuid.NewString()+"/history", sys, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/trips/bad/history", sys, nil, http.StatusBadRequest)

		// A system key has no user: changed_by is null.
		t2 := create(t, e, "/v1/trips", sys, map[string]any{"name": "sys"})["id"].(string)
		e.Call(t, "PATCH", "/v1/trips/"+t2, sys, map[string]any{"status": "active"}, http.StatusOK)
		if x := e.Call(t, "GET", "/v1/trips/"+t2+"/history", sys, nil, http.StatusOK).Array()[0].(map[string]any); x["changed_by"] != nil {
			t.Fatalf("changed_by of a system key = %v", x)
		}

		// Deleting the completed trip keeps its points, unlinked.
		e.Call(t, "DELETE", "/v1/trips/"+id, reader.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/trips/"+id, op.Token, nil, http.StatusNoContent)
		e.Call(t, "GET", "/v1/trips/"+id, sys, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/trips/"+id, op.Token, nil, http.StatusNotFound)
		kept := data(e.Call(t, "GET", "/v1/gps/"+p1["id"].(string), sys, nil, http.StatusOK))
		if kept["trip_id"] != nil || kept["latitude"] != 52.52 {
			t.Fatalf("point after trip deletion = %v", kept)
		}
		e.Call(t, "DELETE", "/v1/gps/"+p1["id"].(string), op.Token, nil, http.StatusNoContent)

		// A draft can be deleted too.
		d := create(t, e, "/v1/trips", op.Token, map[string]any{"name": "draft"})["id"].(string)
		e.Call(t, "DELETE", "/v1/trips/"+d, op.Token, nil, http.StatusNoContent)
	})
}

func TestTripCRUDAndValidation(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		cat := create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "Freight"})["id"].(string)
		loc := create(t, e, "/v1/locations", sys, map[string]any{"name": "Depot"})["id"].(string)
		for _, b := range []map[string]any{
			{},
			{"name": "  "},
			{"name": "x", "device_id": uuid.NewString()},
			{"name": "x", "category_id": uuid.NewString()},
			{"name": "x", "origin_id": uuid.NewString()},
			{"name": "x", "destination_id": "nope"},
			{"name": "x", "weight_kg": -1},
			{"name": "x", "status": "active"},
			{"name": "x", "tags": "a"},
		} {
			e.Call(t, "POST", "/v1/trips", sys, b, http.StatusBadRequest)
		}
		tr := create(t, e, "/v1/trips", sys, map[string]any{"name": "A", "category_id": cat, "origin_id": loc, "destination_id": loc, "description": "d"})
		id := tr["id"].(string)
		if tr["category_id"] != cat || tr["gps_logging_enabled"] != false || tr["tags"] == nil {
			t.Fatalf("trip = %v", tr)
		}
		got := data(e.Call(t, "GET", "/v1/trips/"+id, sys, nil, http.StatusOK))
		if got["origin_id"] != loc || got["description"] != "d" {
			t.Fatalf("get = %v", got)
		}
		e.Call(t, "GET", "/v1/trips/"+uuid.NewString(), sys, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/trips/123", sys, nil, http.StatusBadRequest)

		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "flying"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"start_latitude": 91}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"category_id": uuid.NewString()}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trips/"+uuid.NewString(), sys, map[string]any{"name": "n"}, http.StatusNotFound)
		up := data(e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"name": "B", "category_id": nil, "start_latitude": 1.5, "start_longitude": 2.5, "tags": []string{"x"}}, http.StatusOK))
		if up["name"] != "B" || up["category_id"] != nil || up["start_latitude"] != 1.5 || up["status"] != "draft" || up["origin_id"] != loc {
			t.Fatalf("patched = %v", up)
		}
		if h := e.Call(t, "GET", "/v1/trips/"+id+"/history", sys, nil, http.StatusOK).Array(); len(h) != 0 {
			t.Fatalf("history without status change = %v", h)
		}

		// List: newest first, 20 per page, status filter.
		for i := range 21 {
			e.Clock.Advance(time.Second)
			x := create(t, e, "/v1/trips", sys, map[string]any{"name": "t"})["id"].(string)
			if i%5 == 0 {
				e.Call(t, "PATCH", "/v1/trips/"+x, sys, map[string]any{"status": "active"}, http.StatusOK)
			}
		}
		l := e.Call(t, "GET", "/v1/trips", sys, nil, http.StatusOK).JSON()
		if p := l["pagination"].(map[string]any); p["total"] != 22.0 || p["limit"] != 20.0 || len(l["data"].([]any)) != 20 {
			t.Fatalf("trips pagination = %v", p)
		}
		a := e.Call(t, "GET", "/v1/trips?status=active", sys, nil, http.StatusOK).JSON()
		if p := a["pagination"].(map[string]any); p["total"] != 5.0 {
			t.Fatalf("active trips = %v", p)
		}
		e.Call(t, "GET", "/v1/trips?status=bogus", sys, nil, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/trips", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/trips", operator(t, e).Token, nil, http.StatusForbidden)
	})
}

// TestTripTransitionTable moves a trip in every status to every status: only
// the five moves of the table succeed.
func TestTripTransitionTable(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		path := map[string][]string{
			"draft":     nil,
			"active":    {"active"},
			"paused":    {"active", "paused"},
			"completed": {"active", "completed"},
		}
		statuses := []string{"draft", "active", "paused", "completed"}
		for _, from := range statuses {
			for _, to := range statuses {
				id := create(t, e, "/v1/trips", sys, map[string]any{"name": from + "→" + to})["id"].(string)
				for _, s := range path[from] {
					e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": s}, http.StatusOK)
				}
				want := http.StatusBadRequest
				if tracking.CanMove(from, to) {
					want = http.StatusOK
				}
				r := e.Do(t, apptest.Req{Method: "PATCH", Path: "/v1/trips/" + id, Token: sys, Body: map[string]any{"status": to}})
				if r.Status != want {
					t.Errorf("%s → %s: status %d, want %d (%s)", from, to, r.Status, want, r.Body)
				}
				got := data(e.Call(t, "GET", "/v1/trips/"+id, sys, nil, http.StatusOK))["status"]
				if (want == http.StatusOK && got != to) || (want != http.StatusOK && got != from) {
					t.Errorf("%s → %s: trip is %v", from, to, got)
				}
			}
		}
		allowed := 0
		for _, from := range statuses {
			for _, to := range statuses {
				if tracking.CanMove(from, to) {
					allowed++
				}
			}
		}
		if allowed != 5 {
			t.Fatalf("the table allows %d moves, want 5", allowed)
		}
	})
}

func TestTripGPSLoggingConflict(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "d"})["id"].(string)
		other := create(t, e, "/v1/devices", sys, map[string]any{"name": "o"})["id"].(string)
		mk := func(logging bool, device string) string {
			return create(t, e, "/v1/trips", sys, map[string]any{"name": "t", "device_id": device, "gps_logging_enabled": logging})["id"].(string)
		}
		a, b := mk(true, dev), mk(true, dev)
		e.Call(t, "PATCH", "/v1/trips/"+a, sys, map[string]any{"status": "active"}, http.StatusOK)
		e.Call(t, "PATCH", "/v1/trips/"+b, sys, map[string]any{"status": "active"}, http.StatusConflict)
		if h := e.Call(t, "GET", "/v1/trips/"+b+"/history", sys, nil, http.StatusOK).Array(); len(h) != 0 {
			t.Fatalf("a refused activation left history %v", h)
		}
		// Without logging, or on another device, there is no conflict.
		e.Call(t, "PATCH", "/v1/trips/"+mk(false, dev), sys, map[string]any{"status": "active"}, http.StatusOK)
		e.Call(t, "PATCH", "/v1/trips/"+mk(true, other), sys, map[string]any{"status": "active"}, http.StatusOK)
		// A paused logging trip does not block; resuming while another runs does.
		e.Call(t, "PATCH", "/v1/trips/"+a, sys, map[string]any{"status": "paused"}, http.StatusOK)
		e.Call(t, "PATCH", "/v1/trips/"+b, sys, map[string]any{"status": "active"}, http.StatusOK)
		e.Call(t, "PATCH", "/v1/trips/"+a, sys, map[string]any{"status": "active"}, http.StatusConflict)
		// Turning logging on for an active trip of a busy device conflicts too.
		c := mk(false, dev)
		e.Call(t, "PATCH", "/v1/trips/"+c, sys, map[string]any{"status": "active"}, http.StatusOK)
		e.Call(t, "PATCH", "/v1/trips/"+c, sys, map[string]any{"gps_logging_enabled": true}, http.StatusConflict)
	})
}

// TestTripConcurrentActivation races two activations of GPS-logging trips on
// one device: exactly one wins, the other gets 409, every round.
func TestTripConcurrentActivation(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "d"})["id"].(string)
		for round := range 5 {
			var trips [2]string
			for i := range trips {
				trips[i] = create(t, e, "/v1/trips", sys, map[string]any{"name": "race", "device_id": dev, "gps_logging_enabled": true})["id"].(string)
			}
			status := apptest.AtOnce(len(trips), func(i int) int {
				return e.Do(t, apptest.Req{Method: "PATCH", Path: "/v1/trips/" + trips[i], Token: sys, Body: map[string]any{"status": "active"}}).Status
			})
			won, lost := 0, 0
			winner := ""
			for i, s := range status {
				switch s {
				case http.StatusOK:
					won++
					winner = trips[i]
				case http.StatusConflict:
					lost++
				}
			}
			if won != 1 || lost != 1 {
				t.Fatalf("round %d: statuses %v, want one 200 and one 409", round, status)
			}
			l := e.Call(t, "GET", "/v1/trips?status=active", sys, nil, http.StatusOK).JSON()
			if n := l["pagination"].(map[string]any)["total"]; n != 1.0 {
				t.Fatalf("round %d: %v active trips", round, n)
			}
			e.Call(t, "PATCH", "/v1/trips/"+winner, sys, map[string]any{"status": "completed"}, http.StatusOK)
		}
	})
}
