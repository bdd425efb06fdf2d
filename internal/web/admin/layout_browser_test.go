package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/web/webtest"
)

// layoutViewports are the widths the layout is measured at: a desktop
// window and a small phone held upright.
var layoutViewports = []struct {
	name          string
	width, height int
}{{"desktop", 1280, 800}, {"phone", 375, 812}}

// TestBrowserAdminLayout measures what the stylesheet does to the admin
// overview and the users list, at desktop and phone width, in the light and
// the dark theme: the computed layout, not only that the pages load. It is
// the guard for a stylesheet whose unclosed @media block left these pages
// styled on phones only: on a desktop the tiles were a bare list, the chart
// black and as wide as the page, and in the dark theme its labels were
// black on the dark card (1.29:1). It also checks that a five-digit value
// label ("60,000") is drawn whole inside the chart on a phone.
//
// With HMID_SCREENSHOTS set it saves both pages in every combination as
// layout-admin-{overview,users}-{desktop,phone}-{light,dark}.png.
func TestBrowserAdminLayout(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		bg := context.Background()
		admin := e.NewUser(t, apptest.UserSpec{Username: "operator", Email: "operator@example.test", Password: pw, SuperAdmin: true,
			Roles: []string{"role_admin", "role_user"}})
		for _, name := range []string{"grace_hopper", "alan_turing"} {
			e.NewUser(t, apptest.UserSpec{Username: name, Email: name + "@example.test"})
		}
		banned := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada@example.test"})
		e.Call(t, "POST", "/v1/users/"+banned.ID+"/ban", admin.Token, map[string]any{"reason": "spam", "duration_seconds": 86400}, http.StatusCreated)

		// A busy day: 58,000 sign-ins take the value axis to 60,000, the
		// widest label. The daily counts are what the chart reads; the
		// events themselves would take minutes to write.
		e.Clock.Set(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
		for _, failed := range []bool{false, true} {
			if _, err := e.Server.Audit.Record(bg, e.Server.DB, audit.Event{EventType: audit.Login, Failed: failed}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Server.DB.ExecContext(bg, `UPDATE audit_event_counts SET n = 58000 WHERE event_type = $1 AND status = $2`,
			audit.Login, audit.StatusSuccess); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(48 * time.Hour)

		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		for _, theme := range webtest.Themes {
			for _, vp := range layoutViewports {
				what := vp.name + ", " + theme
				webtest.SetTheme(t, ctx, theme)
				webtest.Viewport(t, ctx, vp.width, vp.height)

				webtest.Do(t, ctx, "open the overview", chromedp.Navigate(e.URL+"/admin"), chromedp.WaitVisible(chromedp.CSS(`svg.chart`)), webtest.Settle)
				checkOverviewLayout(t, what, vp.name == "desktop", readLayout[overviewLayout](t, ctx, overviewFacts))
				webtest.Do(t, ctx, "scroll to the chart", chromedp.Evaluate[chromedp.Void](`document.querySelector("#chart-heading").scrollIntoView()`))
				webtest.ScreenshotTheme(t, ctx, "layout-admin-overview-"+vp.name+"-"+theme, vp.width, vp.height, theme)

				webtest.SetTheme(t, ctx, theme)
				webtest.Viewport(t, ctx, vp.width, vp.height)
				webtest.Do(t, ctx, "open the users list", chromedp.Navigate(e.URL+"/admin/users"), chromedp.WaitVisible(chromedp.CSS(`table.users`)), webtest.Settle)
				checkUsersLayout(t, what, vp.name == "desktop", readLayout[usersLayout](t, ctx, usersFacts))
				webtest.ScreenshotTheme(t, ctx, "layout-admin-users-"+vp.name+"-"+theme, vp.width, vp.height, theme)
			}
		}
	})
}

// box is an element's getBoundingClientRect, in CSS pixels.
type box struct {
	Left, Top, Right, Bottom float64
}

// inside reports whether b lies within outer, give or take half a pixel of
// rounding.
func (b box) inside(outer box) bool {
	const slack = 0.5
	return b.Left >= outer.Left-slack && b.Top >= outer.Top-slack && b.Right <= outer.Right+slack && b.Bottom <= outer.Bottom+slack
}

// overviewLayout is what overviewFacts measures on /admin.
type overviewLayout struct {
	HealthDisplay string    `json:"healthDisplay"`
	HealthTops    []float64 `json:"healthTops"`
	TilesDisplay  string    `json:"tilesDisplay"`
	TileTops      []float64 `json:"tileTops"`
	TileBorder    string    `json:"tileBorder"`
	Chart         box       `json:"chart"`
	Labels        []struct {
		Class string `json:"cls"`
		Text  string `json:"text"`
		Box   box    `json:"box"`
	} `json:"labels"`
	TextFill   string `json:"textFill"`
	BarFill    string `json:"barFill"`
	Background string `json:"background"`
}

// layoutHelpers are the script functions both measurements use: an
// element's box, and the background colour behind an element (the first
// ancestor's that is not transparent).
const layoutHelpers = `
const rect = el => { const r = el.getBoundingClientRect(); return {Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom}; };
const backdrop = el => {
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && c !== "transparent" && !/^rgba\(.*,\s*0\)$/.test(c)) return c;
  }
  return "rgb(255, 255, 255)";
};
const css = (sel, prop) => { const el = document.querySelector(sel); return el ? getComputedStyle(el)[prop] : "(no " + sel + ")"; };
`

// overviewFacts measures the overview: the health list's and the count
// tiles' display and rows, the chart's box, every label's box, and the
// colours of the labels, the bars and what is behind them.
const overviewFacts = `(() => {` + layoutHelpers + `
const svg = document.querySelector("svg.chart");
return JSON.stringify({
  healthDisplay: css("ul.health", "display"),
  healthTops: [...document.querySelectorAll("ul.health > li")].map(li => li.getBoundingClientRect().top),
  tilesDisplay: css("dl.tiles", "display"),
  tileTops: [...document.querySelectorAll("dl.tiles > .tile")].map(d => d.getBoundingClientRect().top),
  tileBorder: css("dl.tiles > .tile", "borderTopStyle"),
  chart: rect(svg),
  labels: [...svg.querySelectorAll("text")].map(t => ({cls: t.getAttribute("class"), text: t.textContent, box: rect(t)})),
  textFill: css("svg.chart text.ylabel", "fill"),
  barFill: css("svg.chart rect.bar", "fill"),
  background: backdrop(svg),
});
})()`

// checkOverviewLayout asserts the overview's layout at one width and theme.
func checkOverviewLayout(t *testing.T, what string, desktop bool, got overviewLayout) {
	t.Helper()
	// The health of the services and the counts are tiles in a grid; a
	// desktop fits several in a row, a phone at least two counts.
	if got.HealthDisplay != "grid" || got.TilesDisplay != "grid" || got.TileBorder != "solid" {
		t.Errorf("%s: health list display %q, count tiles display %q with border %q; want grids of bordered tiles",
			what, got.HealthDisplay, got.TilesDisplay, got.TileBorder)
	}
	if n := sameRow(got.TileTops); n < 2 || desktop && n < 3 {
		t.Errorf("%s: %d count tiles in the first row (tops %v)", what, n, got.TileTops)
	}
	if n := sameRow(got.HealthTops); desktop && n < 2 {
		t.Errorf("%s: %d health tiles in the first row (tops %v)", what, n, got.HealthTops)
	}
	// The chart keeps to its column: 44rem at most.
	if w := got.Chart.Right - got.Chart.Left; w <= 0 || w > 44*16+0.5 {
		t.Errorf("%s: the chart is %.1f px wide, want at most 704", what, w)
	}
	// Every label is drawn whole inside the chart, the widest value too
	// (the top one of the widest, the labels go up).
	widest := ""
	for _, l := range got.Labels {
		if !l.Box.inside(got.Chart) {
			t.Errorf("%s: the %s %q at %+v is cut by the chart's edge %+v", what, l.Class, l.Text, l.Box, got.Chart)
		}
		if l.Class == "ylabel" && len(l.Text) >= len(widest) {
			widest = l.Text
		}
	}
	if widest != "60,000" {
		t.Errorf("%s: the widest value label is %q, want 60,000", what, widest)
	}
	// Readable labels (WCAG 2.2 SC 1.4.3: 4.5:1 for text) and bars that
	// stand out from the card (SC 1.4.11: 3:1 for graphics).
	if r, err := contrast(got.TextFill, got.Background); err != nil || r < 4.5 {
		t.Errorf("%s: the chart's labels (%s on %s) have a contrast of %.2f:1, want at least 4.5:1 (%v)", what, got.TextFill, got.Background, r, err)
	}
	if r, err := contrast(got.BarFill, got.Background); err != nil || r < 3 {
		t.Errorf("%s: the chart's bars (%s on %s) have a contrast of %.2f:1, want at least 3:1 (%v)", what, got.BarFill, got.Background, r, err)
	}
}

// usersLayout is what usersFacts measures on /admin/users.
type usersLayout struct {
	BadgesDisplay   string  `json:"badgesDisplay"`
	BadgesGap       string  `json:"badgesGap"`
	HeadDisplay     string  `json:"headDisplay"`
	HeadWhiteSpace  string  `json:"headWhiteSpace"`
	CellDisplay     string  `json:"cellDisplay"`
	CellPadding     string  `json:"cellPadding"`
	UserIDFontSize  string  `json:"userIdFontSize"`
	SearchLabelTop  string  `json:"searchLabelTop"`
	TableBoxWidth   float64 `json:"tableWidth"`
	PanelInnerWidth float64 `json:"panelInnerWidth"`
}

// usersFacts measures the users list: the badges, the table's head and
// cells, the user id's size and the search form.
const usersFacts = `(() => {` + layoutHelpers + `
const table = document.querySelector("table.users"), panel = table.parentElement, ps = getComputedStyle(panel);
return JSON.stringify({
  badgesDisplay: css("table.users .badges", "display"),
  badgesGap: css("table.users .badges", "columnGap"),
  headDisplay: css("table.users thead", "display"),
  headWhiteSpace: css("table.users th", "whiteSpace"),
  cellDisplay: css("table.users td", "display"),
  cellPadding: css("table.users td", "paddingTop"),
  userIdFontSize: css("table.users .user-id", "fontSize"),
  searchLabelTop: css("#search-label", "marginTop"),
  tableWidth: table.getBoundingClientRect().width,
  panelInnerWidth: panel.clientWidth - parseFloat(ps.paddingLeft) - parseFloat(ps.paddingRight),
});
})()`

// checkUsersLayout asserts the users list's layout at one width and theme.
func checkUsersLayout(t *testing.T, what string, desktop bool, got usersLayout) {
	t.Helper()
	// The state badges sit in a wrapping row with a gap, not as bare inline text.
	if got.BadgesDisplay != "flex" || got.BadgesGap != "4.8px" {
		t.Errorf("%s: badges display %q with gap %q, want flex with 4.8px (.3rem)", what, got.BadgesDisplay, got.BadgesGap)
	}
	// The user's id is set small (.8rem), and the search form's first label
	// has no margin above it.
	if got.UserIDFontSize != "12.8px" || got.SearchLabelTop != "0px" {
		t.Errorf("%s: user id font size %q, search label margin-top %q; want 12.8px and 0px", what, got.UserIDFontSize, got.SearchLabelTop)
	}
	if math.Abs(got.TableBoxWidth-got.PanelInnerWidth) > 1 {
		t.Errorf("%s: the table is %.1f px wide in a panel of %.1f", what, got.TableBoxWidth, got.PanelInnerWidth)
	}
	if desktop {
		// A table with one line of column names.
		if got.HeadDisplay != "table-header-group" || got.HeadWhiteSpace != "nowrap" || got.CellDisplay != "table-cell" || got.CellPadding != "8.8px" {
			t.Errorf("%s: head display %q white-space %q, cells display %q padding %q; want a table whose column names do not wrap",
				what, got.HeadDisplay, got.HeadWhiteSpace, got.CellDisplay, got.CellPadding)
		}
	} else if got.HeadDisplay != "none" || got.CellDisplay != "block" {
		// Each row a block of named fields.
		t.Errorf("%s: head display %q, cells display %q; want rows of blocks without the head", what, got.HeadDisplay, got.CellDisplay)
	}
}

// readLayout runs a measuring script that returns JSON and decodes it.
func readLayout[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	raw := webtest.Read(t, ctx, "measure the layout", chromedp.Evaluate[string](script))
	var out T
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("layout %s: %v", raw, err)
	}
	return out
}

// sameRow is how many of the boxes whose tops are given stand in the
// first one's row.
func sameRow(tops []float64) int {
	n := 0
	for _, top := range tops {
		if math.Abs(top-tops[0]) < 1 {
			n++
		}
	}
	return n
}

// TestContrast checks the contrast ratio against known pairs: black on
// white, and the broken dark chart (black labels on the dark card).
func TestContrast(t *testing.T) {
	for _, c := range []struct {
		fg, bg string
		want   float64
	}{{"rgb(0, 0, 0)", "rgb(255, 255, 255)", 21}, {"rgb(0, 0, 0)", "rgb(26, 32, 43)", 1.29}, {"rgba(91, 101, 119, 1)", "rgb(255, 255, 255)", 5.88}} {
		if got, err := contrast(c.fg, c.bg); err != nil || math.Abs(got-c.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.2f, %v; want %.2f", c.fg, c.bg, got, err, c.want)
		}
	}
	if _, err := contrast("rgba(0, 0, 0, 0.5)", "rgb(255, 255, 255)"); err == nil {
		t.Error("a translucent colour was measured")
	}
}

// rgbRE reads a computed colour, rgb(r, g, b) or rgba(r, g, b, a).
var rgbRE = regexp.MustCompile(`^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:[,\s/]+([\d.]+))?\s*\)$`)

// contrast is the WCAG 2.2 contrast ratio of two computed colours
// (https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio).
func contrast(fg, bg string) (float64, error) {
	lf, err := luminance(fg)
	if err != nil {
		return 0, err
	}
	lb, err := luminance(bg)
	if err != nil {
		return 0, err
	}
	return (max(lf, lb) + 0.05) / (min(lf, lb) + 0.05), nil
}

// luminance is the relative luminance of an opaque computed colour
// (https://www.w3.org/TR/WCAG22/#dfn-relative-luminance).
func luminance(c string) (float64, error) {
	m := rgbRE.FindStringSubmatch(c)
	if m == nil {
		return 0, fmt.Errorf("colour %q is not rgb()", c)
	}
	if m[4] != "" && m[4] != "1" {
		return 0, fmt.Errorf("colour %q is not opaque", c)
	}
	var l float64
	for i, weight := range []float64{0.2126, 0.7152, 0.0722} {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, err
		}
		v /= 255
		if v <= 0.04045 {
			v /= 12.92
		} else {
			v = math.Pow((v+0.055)/1.055, 2.4)
		}
		l += weight * v
	}
	return l, nil
}
