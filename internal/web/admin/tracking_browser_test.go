package admin_test

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminTracking drives headless Chromium through /admin/tracking
// to a trip's page, whose GPS track is drawn as an SVG polyline with start
// and end markers; both pages pass axe-core, and with HMID_SCREENSHOTS set
// they are saved.
func TestBrowserAdminTracking(t *testing.T) {
	t.Parallel()
	ctx, e := webtest.OnSQLite(t)
	op := permittedOperator(t, e, "fleet_operator", "devices:read", "trips:read")
	sys := e.SystemKey
	data := func(r *apptest.Resp) map[string]any { return r.JSON()["data"].(map[string]any) }
	devs := []string{}
	for _, d := range []map[string]any{{"name": "Truck 7", "device_type": "LTE tracker", "description": "Harbour shuttle"},
		{"name": "Barge Elise", "device_type": "AIS transponder"}, {"name": "Spare unit", "device_type": "LTE tracker", "is_active": false}} {
		devs = append(devs, data(e.Call(t, "POST", "/v1/devices", sys, d, http.StatusCreated))["id"].(string))
	}
	trip := data(e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "Container run to Altona", "description": "Terminal to the fish market",
		"device_id": devs[0], "gps_logging_enabled": true, "tags": []string{"containers", "night"}, "weight_kg": 12400}, http.StatusCreated))
	id := trip["id"].(string)
	e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "Fuel delivery", "device_id": devs[1]}, http.StatusCreated)
	e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "active", "latitude": 53.5330, "longitude": 9.9350}, http.StatusOK)
	// Along the river bank westwards, with a bend.
	const n = 28
	for i := 0; i < n; i++ {
		f := float64(i) / (n - 1)
		e.Clock.Advance(30 * time.Second)
		e.Call(t, "POST", "/v1/gps", sys, map[string]any{"latitude": 53.5330 + 0.0150*f + 0.0025*math.Sin(f*3*math.Pi),
			"longitude": 9.9350 - 0.0500*f, "altitude": 6, "heading": 280, "timestamp": e.Clock.Now().Unix(),
			"speed_kmh": 22, "speed_mps": 6.1, "speed_mph": 13.7, "speed_knots": 11.9, "device_id": devs[0]}, http.StatusCreated)
	}
	e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "paused"}, http.StatusOK)
	e.Clock.Advance(5 * time.Minute)
	e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "active"}, http.StatusOK)
	e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "completed", "end_latitude": 53.5480, "end_longitude": 9.8850}, http.StatusOK)

	webtest.Login(t, ctx, e.URL, op.Email, pw)
	webtest.Axe(t, ctx, e.URL+"/admin/tracking")
	webtest.Screenshots(t, ctx, "admin-tracking")
	webtest.Do(t, ctx, "open the trip", chromedp.Click(chromedp.CSS(`a[href="/admin/tracking/trips/`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`figure.track svg`)))
	webtest.Axe(t, ctx, "")
	// The drawing is on screen: a polyline of every point, the markers at its ends.
	got := webtest.Read(t, ctx, "the drawing", chromedp.Evaluate[string](`(() => {
		const svg = document.querySelector('figure.track svg'), line = svg.querySelector('polyline');
		const r = svg.getBoundingClientRect(), b = line.getBBox(), p = line.points;
		const s = svg.querySelector('.track-start'), end = svg.querySelector('.track-end').transform.baseVal.consolidate().matrix;
		const first = p.getItem(0), last = p.getItem(p.numberOfItems - 1);
		return [p.numberOfItems, Math.round(r.width) > 300, b.width > 500 || b.height > 280,
			Math.abs(s.cx.baseVal.value - first.x) < 0.01 && Math.abs(s.cy.baseVal.value - first.y) < 0.01,
			Math.abs(end.e - last.x) < 0.01 && Math.abs(end.f - last.y) < 0.01,
			getComputedStyle(line).stroke !== 'none'].join(' ');
	})()`))
	if want := fmt.Sprintf("%d true true true true true", n); got != want {
		t.Fatalf("the drawing: %q, want %q", got, want)
	}
	summary := webtest.Read(t, ctx, "summary", chromedp.Evaluate[string](`[...document.querySelectorAll('figure.track + dl.figures dt, figure.track + dl.figures dd')].map(e => e.textContent.trim()).join('|')`))
	if !strings.Contains(summary, fmt.Sprintf("Points|%d|", n)) || !regexp.MustCompile(`Distance\|\d+\.\d\d km\|`).MatchString(summary) {
		t.Fatalf("the track's summary: %q", summary)
	}
	webtest.Screenshots(t, ctx, "admin-tracking-trip")
}
