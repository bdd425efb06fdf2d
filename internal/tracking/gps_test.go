package tracking_test

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/tracking"
)

func TestGPSCreateGetListDelete(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		reader := operator(t, e, "gps:read")
		e.Call(t, "GET", "/v1/gps", "", nil, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/gps", reader.Token, point(1, nil), http.StatusForbidden)

		// No point yet.
		e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusNotFound)
		if a := e.Call(t, "GET", "/v1/gps/current/devices", sys, nil, http.StatusOK).Array(); len(a) != 0 {
			t.Fatalf("current/devices = %v", a)
		}

		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "truck 1"})
		devID := dev["id"].(string)
		base := apptest.Start.Unix()
		r := e.Call(t, "POST", "/v1/gps", sys, point(base, map[string]any{"device_id": devID, "pdop": 1.5, "hdop": 0.9, "vdop": 1.1}), http.StatusCreated)
		p := data(r)
		if p["timestamp"] != apptest.Start.Format(time.RFC3339) || p["device_id"] != devID || p["trip_id"] != nil || p["pdop"] != 1.5 || p["speed_knots"] != 19.44 {
			t.Fatalf("created point = %v", p)
		}
		if r.Header.Get("RateLimit-Limit") != "30" || r.Header.Get("RateLimit-Remaining") != "29" || r.Header.Get("RateLimit-Reset") == "" {
			t.Fatalf("rate headers = %v", r.Header)
		}
		if self := r.JSON()["_links"].(map[string]any)["self"]; self != e.URL+"/v1/gps/"+p["id"].(string) {
			t.Fatalf("self = %v", self)
		}
		for i := 1; i <= 11; i++ {
			e.Call(t, "POST", "/v1/gps", sys, point(base+int64(i), nil), http.StatusCreated)
		}

		got := e.Call(t, "GET", "/v1/gps/"+p["id"].(string), reader.Token, nil, http.StatusOK)
		if data(got)["id"] != p["id"] || data(got)["hdop"] != 0.9 {
			t.Fatalf("get = %s", got.Body)
		}
		e.Call(t, "GET", "/v1/gps/"+uuid.NewString(), sys, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/gps/not-a-uuid", sys, nil, http.StatusBadRequest)

		// Newest first, 10 per page by default, 100 at most.
		l := e.Call(t, "GET", "/v1/gps", reader.Token, nil, http.StatusOK).JSON()
		pg := l["pagination"].(map[string]any)
		list := l["data"].([]any)
		if pg["total"] != 12.0 || pg["limit"] != 10.0 || pg["total_pages"] != 2.0 || len(list) != 10 {
			t.Fatalf("list pagination = %v (%d items)", pg, len(list))
		}
		if first := list[0].(map[string]any); first["timestamp"] != apptest.Start.Add(11*time.Second).Format(time.RFC3339) {
			t.Fatalf("first = %v", first)
		}
		l2 := e.Call(t, "GET", "/v1/gps?page=2", sys, nil, http.StatusOK).JSON()
		last := l2["data"].([]any)
		if len(last) != 2 || last[1].(map[string]any)["id"] != p["id"] {
			t.Fatalf("page 2 = %v", last)
		}
		if n := len(e.Call(t, "GET", "/v1/gps?page=99", sys, nil, http.StatusOK).JSON()["data"].([]any)); n != 0 {
			t.Fatalf("page 99 has %d", n)
		}
		if lim := e.Call(t, "GET", "/v1/gps?limit=1000", sys, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["limit"]; lim != 100.0 {
			t.Fatalf("limit = %v", lim)
		}

		cur := data(e.Call(t, "GET", "/v1/gps/current", reader.Token, nil, http.StatusOK))
		if cur["timestamp"] != apptest.Start.Add(11*time.Second).Format(time.RFC3339) {
			t.Fatalf("current = %v", cur)
		}
		if cd := data(e.Call(t, "GET", "/v1/gps/current?device_id="+devID, sys, nil, http.StatusOK)); cd["id"] != p["id"] {
			t.Fatalf("current of device = %v", cd)
		}
		e.Call(t, "GET", "/v1/gps/current?device_id="+uuid.NewString(), sys, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/gps/current?device_id=nope", sys, nil, http.StatusBadRequest)
		devs := e.Call(t, "GET", "/v1/gps/current/devices", sys, nil, http.StatusOK).Array()
		if len(devs) != 1 || devs[0].(map[string]any)["id"] != p["id"] {
			t.Fatalf("current/devices = %v", devs)
		}

		// Delete: permission, 404, 400, 204 and the total goes down.
		e.Call(t, "DELETE", "/v1/gps/"+p["id"].(string), reader.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/gps/"+uuid.NewString(), sys, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/gps/zzz", sys, nil, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/gps/"+p["id"].(string), sys, nil, http.StatusNoContent)
		e.Call(t, "GET", "/v1/gps/"+p["id"].(string), sys, nil, http.StatusNotFound)
		if tot := e.Call(t, "GET", "/v1/gps", sys, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"]; tot != 11.0 {
			t.Fatalf("total after delete = %v", tot)
		}
		e.Call(t, "GET", "/v1/gps/current?device_id="+devID, sys, nil, http.StatusNotFound)
	})
}

func TestGPSValidation(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		ok := point(1_700_000_000, nil)
		cases := []struct {
			name string
			body any
		}{
			{"no speed_kmh", without(ok, "speed_kmh")},
			{"no speed_mps", without(ok, "speed_mps")},
			{"no speed_mph", without(ok, "speed_mph")},
			{"no speed_knots", without(ok, "speed_knots")},
			{"no latitude", without(ok, "latitude")},
			{"no longitude", without(ok, "longitude")},
			{"no altitude", without(ok, "altitude")},
			{"no heading", without(ok, "heading")},
			{"no timestamp", without(ok, "timestamp")},
			{"latitude 90.1", point(1, map[string]any{"latitude": 90.1})},
			{"latitude -91", point(1, map[string]any{"latitude": -91})},
			{"longitude 180.5", point(1, map[string]any{"longitude": 180.5})},
			{"longitude -181", point(1, map[string]any{"longitude": -181})},
			{"timestamp fraction", point(1, map[string]any{"timestamp": 1.5})},
			{"timestamp string", point(1, map[string]any{"timestamp": "2026-01-01T00:00:00Z"})},
			{"timestamp negative", point(1, map[string]any{"timestamp": -1})},
			{"timestamp zero", point(1, map[string]any{"timestamp": 0})},
			{"timestamp before 2000", point(1, map[string]any{"timestamp": 946684799})},
			{"timestamp a day and a second ahead", point(apptest.Start.Add(24*time.Hour+time.Second).Unix(), nil)},
			{"timestamp in year 9999", point(253402300799, nil)},
			{"heading 400", point(1, map[string]any{"heading": 400})},
			{"negative speed", point(1, map[string]any{"speed_kmh": -1})},
			{"device not uuid", point(1, map[string]any{"device_id": "abc"})},
			{"unknown device", point(1, map[string]any{"device_id": uuid.NewString()})},
			{"malformed", `{"latitude":`},
			{"array", `[]`},
		}
		for _, c := range cases {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/gps", Token: sys, Body: c.body})
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d, body %s", c.name, r.Status, r.Body)
			}
			if r.Header.Get("RateLimit-Limit") != "30" {
				t.Errorf("%s: no rate-limit headers", c.name)
			}
		}
		// Edges are inside the ranges.
		e.Call(t, "POST", "/v1/gps", sys, point(0, map[string]any{"latitude": -90, "longitude": 180}), http.StatusCreated)
		e.Call(t, "POST", "/v1/gps", sys, point(946684800, nil), http.StatusCreated)
		e.Call(t, "POST", "/v1/gps", sys, point(apptest.Start.Add(24*time.Hour).Unix(), nil), http.StatusCreated)
		if n := e.Call(t, "GET", "/v1/gps", sys, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"]; n != 3.0 {
			t.Fatalf("total = %v, bad points were stored", n)
		}
	})
}

func TestGPSRateLimit(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		key, _ := e.NewAPIKey(t, admin.ID, "gps:write")
		for i := range 30 {
			r := e.Call(t, "POST", "/v1/gps", key, point(int64(i), nil), http.StatusCreated)
			if got := r.Header.Get("RateLimit-Remaining"); got != fmt.Sprint(29-i) {
				t.Fatalf("request %d: remaining %s", i+1, got)
			}
		}
		r := e.Call(t, "POST", "/v1/gps", key, point(31, nil), http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Limit") != "30" || r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Reset") == "" {
			t.Fatalf("429 headers = %v", r.Header)
		}
		if r.JSON()["error"] != "TooManyRequests" {
			t.Fatalf("429 body = %s", r.Body)
		}
		// Another principal (the owner's session) has its own window.
		e.Call(t, "POST", "/v1/gps", admin.Token, point(32, nil), http.StatusCreated)
		e.Advance(t, time.Minute)
		r = e.Call(t, "POST", "/v1/gps", key, point(33, nil), http.StatusCreated)
		if r.Header.Get("RateLimit-Remaining") != "29" {
			t.Fatalf("new window remaining = %s", r.Header.Get("RateLimit-Remaining"))
		}
	})
}

// TestGPSRateLimitAcrossMinute: the whole allowance used just before a
// minute boundary and a burst just after it do not add up (fixed windows
// aligned on the clock accepted both, 60 points in 0.2 s), and nothing more
// comes back before the window has slid past the first posts (a GCRA gave
// one back every 2 s).
func TestGPSRateLimitAcrossMinute(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		key, _ := e.NewAPIKey(t, admin.ID, "gps:write")
		e.Clock.Advance(59*time.Second + 900*time.Millisecond) // 12:00:59.9
		accepted := 0
		burst := func(retry string) {
			for i := range tracking.GPSRateLimit {
				r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/gps", Token: key, Body: point(int64(i), nil)})
				switch {
				case r.Status == http.StatusCreated:
					accepted++
				case r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != retry:
					t.Fatalf("POST /v1/gps: %d, Retry-After %q, want %s", r.Status, r.Header.Get("Retry-After"), retry)
				}
			}
		}
		burst("60")
		e.Clock.Advance(200 * time.Millisecond) // 12:01:00.1
		burst("60")                             // 59.8 s, rounded up
		e.Clock.Advance(30 * time.Second)       // 12:01:30.1
		burst("30")                             // 29.8 s, rounded up
		if accepted != tracking.GPSRateLimit {
			t.Fatalf("%d points accepted within a minute, at most %d allowed", accepted, tracking.GPSRateLimit)
		}
	})
}

// TestGPSSlidingWindow: "30 requests per 60 seconds" (spec 3, Limits) is at
// most 30 in any 60-second window per principal: posts spread over the
// window are counted where they happened, the 31st within 60 s of the first
// is refused with Retry-After up to when the first leaves, and as the window
// slides exactly as many are allowed again as have left it. Sustained
// posting at one every 2 s (which a GCRA with a burst of 30 accepted on top
// of the burst, 59 in 59.5 s) gets 30.
func TestGPSSlidingWindow(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		key, _ := e.NewAPIKey(t, admin.ID, "gps:write")
		post := func() *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/gps", Token: key, Body: point(1, nil)})
		}
		t0 := e.Clock.Now()
		// 30 posts, one every second: t = 0 … 29 s.
		for i := range tracking.GPSRateLimit {
			r := post()
			if r.Status != http.StatusCreated || r.Header.Get("RateLimit-Remaining") != fmt.Sprint(29-i) {
				t.Fatalf("post %d: %d remaining %s", i+1, r.Status, r.Header.Get("RateLimit-Remaining"))
			}
			e.Clock.Advance(time.Second)
		}
		// From 30 s to 59.5 s, every 500 ms: all refused; Retry-After is
		// when the post of t = 0 leaves the window.
		for e.Clock.Now().Before(t0.Add(time.Minute)) {
			r := post()
			want := int(math.Ceil(t0.Add(time.Minute).Sub(e.Clock.Now()).Seconds()))
			if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != fmt.Sprint(want) ||
				r.Header.Get("RateLimit-Limit") != "30" || r.Header.Get("RateLimit-Remaining") != "0" {
				t.Fatalf("post at %s: %d Retry-After %s %v", e.Clock.Now().Sub(t0), r.Status, r.Header.Get("Retry-After"), r.Header)
			}
			e.Clock.Advance(500 * time.Millisecond)
		}
		// At 60 s one post (t = 0) has left: one more, then refused for 1 s.
		if r := post(); r.Status != http.StatusCreated || r.Header.Get("RateLimit-Remaining") != "0" {
			t.Fatalf("at 60 s: %d %v", r.Status, r.Header)
		}
		if r := post(); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("second at 60 s: %d %v", r.Status, r.Header)
		}
		// At 65.5 s the posts of 1 s … 5 s have left too: exactly 5 more.
		e.Clock.Advance(5500 * time.Millisecond)
		for i := range 5 {
			if r := post(); r.Status != http.StatusCreated || r.Header.Get("RateLimit-Remaining") != fmt.Sprint(4-i) {
				t.Fatalf("post %d at 65.5 s: %d %v", i+1, r.Status, r.Header)
			}
		}
		if r := post(); r.Status != http.StatusTooManyRequests {
			t.Fatalf("6th at 65.5 s: %d", r.Status)
		}
		var n int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM gps_points`).Scan(&n); err != nil || n != 36 {
			t.Fatalf("%d points stored (%v), want 36", n, err)
		}
	})
}

func TestGPSCurrentCache(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "van"})["id"].(string)
		base := apptest.Start.Unix()
		p1 := create(t, e, "/v1/gps", sys, point(base, map[string]any{"device_id": dev}))
		if c := data(e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK)); c["id"] != p1["id"] {
			t.Fatalf("current = %v", c)
		}
		data(e.Call(t, "GET", "/v1/gps/current?device_id="+dev, sys, nil, http.StatusOK))

		// A new point refreshes both cached entries at once.
		p2 := create(t, e, "/v1/gps", sys, point(base+10, map[string]any{"device_id": dev}))
		if c := data(e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK)); c["id"] != p2["id"] {
			t.Fatalf("current after new point = %v", c)
		}
		if c := data(e.Call(t, "GET", "/v1/gps/current?device_id="+dev, sys, nil, http.StatusOK)); c["id"] != p2["id"] {
			t.Fatalf("device current after new point = %v", c)
		}
		// A late point with an older timestamp does not replace the latest.
		create(t, e, "/v1/gps", sys, point(base+5, map[string]any{"device_id": dev}))
		if c := data(e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK)); c["id"] != p2["id"] {
			t.Fatalf("current after late point = %v", c)
		}

		// Answers come from the cache: a row written behind the service's back
		// shows only once the cached entry is older than five minutes.
		hidden := uuid.NewString()
		if _, err := e.Server.DB.ExecContext(t.Context(), `INSERT INTO gps_points (id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, created_at)
			VALUES ($1, 1, 1, 1, 1, $2, 1, 1, 1, 1, $2)`, hidden, db.TS(apptest.Start.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if c := data(e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK)); c["id"] != p2["id"] {
			t.Fatalf("current not from cache: %v", c)
		}
		if e.Server.Cache.Name() != "memory" {
			return // Redis expires keys on its own clock, not the test's.
		}
		e.Clock.Advance(5*time.Minute + time.Second)
		if c := data(e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK)); c["id"] != hidden {
			t.Fatalf("current after expiry = %v", c)
		}
	})
}

func TestGPSDeviceFromAPIKey(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		key, keyID := e.NewAPIKey(t, admin.ID, "gps:write", "gps:read")
		dev := create(t, e, "/v1/devices", admin.Token, map[string]any{"name": "tracker", "api_key_id": keyID})
		p := create(t, e, "/v1/gps", key, point(100, nil))
		if p["device_id"] != dev["id"] {
			t.Fatalf("point of a linked key = %v", p)
		}
	})
}

// TestGPSListPagesAcrossHours checks that every page, found through the hour
// buckets, equals the same slice of the full newest-first order, also after
// deletions and for points that arrive out of order.
func TestGPSListPagesAcrossHours(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		base := apptest.Start.Unix()
		// 40 points over 7 hours, posted in a scrambled order, some sharing a timestamp.
		var all []string
		for i := range 40 {
			if i%25 == 24 {
				e.Advance(t, time.Minute)
			}
			ts := base - int64((i*7919)%40)*700 - int64(i%3)
			if i%10 == 0 {
				ts = base - 3600
			}
			all = append(all, create(t, e, "/v1/gps", sys, point(ts, nil))["id"].(string))
		}
		check := func(total int) {
			t.Helper()
			var full []string
			for page := 1; ; page++ {
				l := e.Call(t, "GET", fmt.Sprintf("/v1/gps?page=%d&limit=100", page), sys, nil, http.StatusOK).JSON()
				full = append(full, ids(l["data"].([]any))...)
				if len(l["data"].([]any)) < 100 {
					break
				}
			}
			if len(full) != total {
				t.Fatalf("full list has %d, want %d", len(full), total)
			}
			for _, limit := range []int{1, 3, 7} {
				for page := 1; (page-1)*limit < total; page++ {
					got := ids(e.Call(t, "GET", fmt.Sprintf("/v1/gps?page=%d&limit=%d", page, limit), sys, nil, http.StatusOK).JSON()["data"].([]any))
					want := full[(page-1)*limit : min(page*limit, total)]
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("limit %d page %d = %v, want %v", limit, page, got, want)
					}
				}
			}
		}
		check(40)
		for _, id := range all[5:15] {
			e.Call(t, "DELETE", "/v1/gps/"+id, sys, nil, http.StatusNoContent)
		}
		check(30)
	})
}

// TestGPSConcurrentIngest posts points at once, one of them for an unknown
// device: batched writes still answer each request on its own.
func TestGPSConcurrentIngest(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := create(t, e, "/v1/devices", e.SystemKey, map[string]any{"name": "d"})["id"].(string)
		admin := e.Admin(t)
		const n = 24
		status := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			key, _ := e.NewAPIKey(t, admin.ID, "gps:write")
			device := dev
			if i == 7 {
				device = uuid.NewString()
			}
			wg.Go(func() {
				status[i] = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/gps", Token: key, Body: point(int64(1000+i), map[string]any{"device_id": device})}).Status
			})
		}
		wg.Wait()
		for i, s := range status {
			want := http.StatusCreated
			if i == 7 {
				want = http.StatusBadRequest
			}
			if s != want {
				t.Errorf("request %d: %d, want %d", i, s, want)
			}
		}
		l := e.Call(t, "GET", "/v1/gps?limit=100", e.SystemKey, nil, http.StatusOK).JSON()
		if tot := l["pagination"].(map[string]any)["total"]; tot != float64(n-1) || len(l["data"].([]any)) != n-1 {
			t.Fatalf("total = %v", tot)
		}
	})
}
