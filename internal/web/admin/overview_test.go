package admin

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/audit"
	"hmid/internal/health"
	"hmid/internal/web"
)

func TestOverviewServicesSayWhatFailed(t *testing.T) {
	free, total := uint64(5<<30), uint64(20<<30)
	rep := health.Report{Status: "redis and websocket unavailable; database disk full"}
	rep.Services.Database = health.Service{Status: "up", ResponseTime: 1.27, Type: "sqlite", Disk: &health.Disk{Status: "full", FreeBytes: &free, TotalBytes: &total}}
	rep.Services.Redis = health.Service{Status: "down", ResponseTime: 2000, Type: "redis", Error: "unreachable"}
	rep.Services.Websocket = health.Websocket{Status: "down", Error: "events cannot reach other instances while redis is unavailable"}
	got := overviewServices(web.Translator("en"), "en", rep)
	if !got[0].Up || got[0].Detail != "answers in 1.3 ms · its disk is full" || got[0].Kind != "sqlite" {
		t.Errorf("database: %+v", got[0])
	}
	if got[1].Up || got[1].Kind != "redis" || got[1].Detail != "answers in 2000.0 ms" {
		t.Errorf("cache: %+v", got[1])
	}
	if got[2].Up || !strings.Contains(got[2].Detail, "while redis is unavailable") {
		t.Errorf("real-time channel: %+v", got[2])
	}
	rep.Services.Database.Disk.Status = "ok"
	if d := overviewServices(web.Translator("de"), "de", rep)[0].Detail; d != "antwortet in 1,3 ms · 5,0 GiB von 20,0 GiB frei auf ihrem Datenträger" {
		t.Errorf("German disk: %q", d)
	}
}

func TestOverviewNumbers(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := overviewNumber("en", n); got != want {
			t.Errorf("overviewNumber(%d) = %q, want %q", n, got, want)
		}
	}
	if got := overviewNumber("de", 1234567); got != "1.234.567" {
		t.Errorf("German grouping: %q", got)
	}
	if got := overviewBytes("en", 1536); got != "1.5 KiB" {
		t.Errorf("overviewBytes = %q", got)
	}
}

func TestAxisSteps(t *testing.T) {
	for most, want := range map[int][2]int{0: {1, 1}, 3: {1, 3}, 5: {1, 5}, 6: {2, 3}, 22: {5, 5}, 26: {10, 3}, 99: {20, 5}, 1001: {500, 3}} {
		step, n := axisSteps(most)
		if step != want[0] || n != want[1] || step*n < most {
			t.Errorf("axisSteps(%d) = %d × %d, want %d × %d", most, step, n, want[0], want[1])
		}
	}
}

// TestChartLabelRoom: the left margin grows with the value labels, so a
// five-digit label is not cut at the SVG's edge on a phone (the browser
// test TestBrowserAdminLayout measures the drawn labels).
func TestChartLabelRoom(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	days := make([]audit.DaySignIns, 30)
	for i := range days {
		days[i] = audit.DaySignIns{Day: start.AddDate(0, 0, i), SignIns: 20}
	}
	if c := newSignInChart(web.Translator("en"), "en", days); c.PlotLeft != chartLeft {
		t.Errorf("two-digit labels: plot from %d, want %d", c.PlotLeft, chartLeft)
	}
	days[12].SignIns = 58000
	c := newSignInChart(web.Translator("en"), "en", days)
	if top := c.YTicks[len(c.YTicks)-1].Label; top != "60,000" {
		t.Fatalf("top label %q", top)
	}
	// Six characters at the phone's font size: at least 5 digits × 0.6 em.
	if min := chartLabelGap + int(5*0.6*chartLabelFont); c.PlotLeft < min {
		t.Errorf("plot from %d, want at least %d for %q", c.PlotLeft, min, "60,000")
	}
	if first, err := strconv.ParseFloat(c.Bars[0].X, 64); err != nil || first <= float64(c.PlotLeft) {
		t.Errorf("the first bar starts at %s, not right of the plot's edge at %d", c.Bars[0].X, c.PlotLeft)
	}
}

func TestSignInChart(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var days []audit.DaySignIns
	for i := range 30 {
		days = append(days, audit.DaySignIns{Day: start.AddDate(0, 0, i), SignIns: i, Failed: 30 - i})
	}
	c := newSignInChart(web.Translator("en"), "en", days)
	if len(c.Bars) != 30 || len(c.Dots) != 30 || len(c.Rows) != 30 || c.Empty {
		t.Fatalf("chart: %d bars, %d dots, %d rows", len(c.Bars), len(c.Dots), len(c.Rows))
	}
	// The axis reaches the largest value (30), bars stand on the base line,
	// the first day's bar has no height, the last reaches 29 of 30.
	if top := c.YTicks[len(c.YTicks)-1]; top.Label != "30" || top.At != "20.0" {
		t.Errorf("top tick %+v", top)
	}
	if c.Bars[0].H != "0.0" || c.Bars[29].Y != "27.3" || c.Bars[29].H != "212.7" {
		t.Errorf("bars %+v … %+v", c.Bars[0], c.Bars[29])
	}
	// Today is labelled, inside the drawing; the table starts with it.
	last := c.XTicks[len(c.XTicks)-1]
	if last.Label != "Nov 30" || last.Anchor != "end" || c.Rows[0].Day != "Nov 30" || c.Rows[0].SignIns != "29" {
		t.Errorf("today: tick %+v, row %+v", last, c.Rows[0])
	}
	if c.Desc != "From Nov 1 to Nov 30: 435 sign-ins and 465 failed sign-in attempts. The most sign-ins were on Nov 30 (29)." {
		t.Errorf("description %q", c.Desc)
	}
	empty := newSignInChart(web.Translator("de"), "de", make([]audit.DaySignIns, 30))
	if !empty.Empty || strings.Contains(empty.Desc, "meisten") {
		t.Errorf("empty chart: %+v", empty)
	}
}
