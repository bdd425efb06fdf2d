package admin

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hmid/internal/access"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/health"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/sessions"
	"hmid/internal/users"
	"hmid/internal/web"
	"hmid/internal/webhooks"
)

// OverviewPages is /admin, the admin console's overview: the health
// of the service (what GET /health reports, from the same health.Handler
// Check), counts of what operators look after, and the sign-ins of the
// last month drawn from the audit log's daily counts. Every count calls the
// service its REST listing calls and shows only to holders of the
// permission that listing needs.
type OverviewPages struct {
	H        *web.Handler
	Health   *health.Handler
	Users    *users.Service
	Sessions *sessions.Service
	OAuth    *oauth.Service
	Access   *access.Service
	Audit    *audit.Service
	Webhooks *webhooks.Service
	// MailOutbox: hmid keeps mails in its outbox (no SMTP server), which
	// /admin/mail shows super admins (mail.go).
	MailOutbox bool
}

// overviewDays is how many days the sign-in chart shows.
const overviewDays = 30

// overviewCounts are the overview's counts, in order. Each shows to holders
// of perm, the permission of the REST route that reads what it counts: GET
// /v1/users (users and their sessions), GET /v1/oauth/clients/all, GET
// /v1/api-keys, GET /v1/admin/audit/reports and GET /v1/webhooks.
var overviewCounts = []struct {
	perm, label, href string
	count             func(ctx context.Context, op *OverviewPages, p *authn.Principal) (int, error)
}{
	{"users:read", "admin.overview.count.users", "/admin/users", func(ctx context.Context, op *OverviewPages, _ *authn.Principal) (int, error) {
		_, n, err := op.Users.List(ctx, users.ListQuery{Page: httpx.Page{Page: 1, Limit: 1}})
		return n, err
	}},
	{"users:read", "admin.overview.count.sessions", "", func(ctx context.Context, op *OverviewPages, _ *authn.Principal) (int, error) {
		return op.Sessions.CountActive(ctx)
	}},
	{"oauth_clients:read", "admin.overview.count.clients", "/admin/clients", func(ctx context.Context, op *OverviewPages, p *authn.Principal) (int, error) {
		_, n, err := op.OAuth.ListClients(ctx, p, true, httpx.Page{Page: 1, Limit: 1})
		return n, err
	}},
	{"api_keys:read", "admin.overview.count.apikeys", "/admin/api-keys", func(ctx context.Context, op *OverviewPages, p *authn.Principal) (int, error) {
		_, n, err := op.Access.ListKeys(ctx, p, "", httpx.Page{Page: 1, Limit: 1})
		return n, err
	}},
	{"audit:read", "admin.overview.count.reports", "/admin/audit/reports", func(ctx context.Context, op *OverviewPages, _ *authn.Principal) (int, error) {
		return op.Audit.CountReports(ctx, "pending")
	}},
	// Endpoints hmid turned off after a day of failed deliveries: the
	// operator must look at them (GET /v1/webhooks).
	{"webhooks:read", "admin.overview.count.hooksoff", "/admin/webhooks", func(ctx context.Context, op *OverviewPages, _ *authn.Principal) (int, error) {
		return op.Webhooks.CountTurnedOff(ctx)
	}},
}

// overviewCount is one count as the page shows it.
type overviewCount struct {
	Label, Value, Href string
}

// overviewService is one dependency in the health panel.
type overviewService struct {
	Name   string // in words
	Kind   string // sqlite, postgres, redis, memory
	Up     bool
	Detail string // response time, connections, the error
}

// overviewView is the page's data.
type overviewView struct {
	Healthy  bool
	Problem  string // the health status naming what failed
	Services []overviewService
	Counts   []overviewCount
	Chart    *signInChart // nil without audit:read
	// Outbox links the mail outbox (super admins, without SMTP).
	Outbox bool
}

// Show is GET /admin.
func (op *OverviewPages) Show(w http.ResponseWriter, r *http.Request) {
	op.H.Show(w, r, http.StatusOK, "admin_overview", web.ConsoleView{Title: "admin.overview.title", Section: "overview"},
		func() (any, error) { return op.view(r) })
}

// view is the health of the services and, for what the reader may read,
// the counts and the sign-ins per day.
func (op *OverviewPages) view(r *http.Request) (*overviewView, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	lang := op.H.UserLanguage(r, p)
	t := web.Translator(lang)
	rep := op.Health.Check(ctx)
	v := &overviewView{Healthy: rep.Status == "ok", Services: overviewServices(t, lang, rep), Outbox: op.MailOutbox && p.IsAdmin()}
	if !v.Healthy {
		v.Problem = rep.Status
	}
	for _, c := range overviewCounts {
		if !p.Can(c.perm) {
			continue
		}
		n, err := c.count(ctx, op, p)
		if err != nil {
			return v, err
		}
		v.Counts = append(v.Counts, overviewCount{Label: t(c.label), Value: overviewNumber(lang, n), Href: c.href})
	}
	// The sign-ins are audit events: the chart shows to readers of the
	// audit log (GET /v1/admin/audit).
	if p.Can("audit:read") {
		days, err := op.Audit.SignInsPerDay(ctx, overviewDays)
		if err != nil {
			return v, err
		}
		v.Chart = newSignInChart(t, lang, days)
	}
	return v, nil
}

// overviewServices are the health report's dependencies in words.
func overviewServices(t func(string) string, lang string, rep health.Report) []overviewService {
	ms := func(v float64) string {
		if v < 0.1 {
			return t("admin.overview.fast")
		}
		return fmt.Sprintf(t("admin.overview.ms"), strings.Replace(strconv.FormatFloat(v, 'f', 1, 64), ".", decimalMark(lang), 1))
	}
	db := rep.Services.Database
	dbDetail := ms(db.ResponseTime)
	if d := db.Disk; d != nil {
		switch {
		case d.Status == "full":
			dbDetail += " · " + t("admin.overview.diskfull")
		case d.FreeBytes != nil && d.TotalBytes != nil:
			dbDetail += " · " + fmt.Sprintf(t("admin.overview.disk"), overviewBytes(lang, *d.FreeBytes), overviewBytes(lang, *d.TotalBytes))
		}
	}
	cache := rep.Services.Redis
	ws := rep.Services.Websocket
	wsDetail := fmt.Sprintf(t("admin.overview.connections"), overviewNumber(lang, ws.Connections), overviewNumber(lang, ws.Subscriptions))
	if ws.Error != "" {
		wsDetail = ws.Error
	}
	return []overviewService{
		{Name: t("admin.overview.database"), Kind: db.Type, Up: db.Status == "up", Detail: dbDetail},
		{Name: t("admin.overview.cache"), Kind: cache.Type, Up: cache.Status == "up", Detail: ms(cache.ResponseTime)},
		{Name: t("admin.overview.realtime"), Up: ws.Status == "up", Detail: wsDetail},
	}
}

// decimalMark is the decimal separator of lang.
func decimalMark(lang string) string {
	if lang == "de" {
		return ","
	}
	return "."
}

// overviewNumber writes n with the digit grouping of lang: 12,345 or 12.345.
func overviewNumber(lang string, n int) string {
	sep := ","
	if lang == "de" {
		sep = "."
	}
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// overviewBytes writes a size in the largest binary unit below it, with one
// decimal: 12.3 GiB.
func overviewBytes(lang string, n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strings.Replace(strconv.FormatFloat(v, 'f', 1, 64), ".", decimalMark(lang), 1) + " " + units[u]
}

// The sign-in chart's drawing area, in SVG user units: the viewBox is
// chartWidth × chartHeight, the plot inside the margins. chartLeft is the
// narrowest left margin; a wider one is taken when the value labels need
// it (chartLabelRoom). chartTop leaves room above the top value label,
// whose middle is on the plot's top line, at the phone's font size.
const (
	chartWidth, chartHeight = 600, 280
	chartLeft, chartRight   = 64, 8
	chartTop, chartBottom   = 20, 40
	chartPlotHigh           = chartHeight - chartTop - chartBottom
)

// The value labels' font size in user units at its largest: the
// stylesheet's svg.chart text on phones (22px, which is drawn at about
// 12 CSS pixels once the chart is scaled down to a phone's width). Digits
// are at most 0.64 em wide in the fonts the pages ask for (DejaVu Sans's
// are 0.636 em, Arial's and Roboto's 0.56 em), the group separators about
// half that. chartLabelGap is the space between a label and the plot (its
// dx) plus a margin at the SVG's left edge.
const (
	chartLabelFont = 22.0
	chartLabelGap  = 6 + 4
)

// chartLabelRoom is the left margin that fits every value label: "60,000"
// in a fixed margin of 64 units lost its first digit on phones.
func chartLabelRoom(ticks []chartTick) int {
	room := chartLeft
	for _, tk := range ticks {
		em := 0.0
		for _, r := range tk.Label {
			if r >= '0' && r <= '9' || r == '-' {
				em += 0.64
			} else {
				em += 0.34
			}
		}
		room = max(room, chartLabelGap+int(math.Ceil(em*chartLabelFont)))
	}
	return room
}

// signInChart is the sign-ins of the last days drawn as bars (successful
// sign-ins) and a line (failed ones), with the same numbers as a table.
type signInChart struct {
	Width, Height int
	Title, Desc   string
	Bars          []chartBar
	Line          string // the failed sign-ins' polyline points
	Dots          []chartDot
	YTicks        []chartTick
	XTicks        []chartTick
	PlotLeft      int
	PlotRight     int
	Rows          []chartRow // the table, newest first
	SignIns       string     // totals, formatted
	Failed        string
	Empty         bool // nothing at all in the period
}

// chartBar is one day's bar and its tooltip.
type chartBar struct {
	X, Y, W, H string
	Tip        string
}

// chartDot is one day's point of the failed sign-ins' line.
type chartDot struct {
	X, Y string
	Tip  string
}

// chartTick is an axis label and the position of its grid line.
type chartTick struct {
	At     string // y of a horizontal grid line, x of a day
	Label  string
	Anchor string // the text-anchor of a day: middle, or end for the last, so it stays inside
}

// chartRow is one day in the table.
type chartRow struct {
	Day, SignIns, Failed string
}

// chartDate writes a day for the axis and the table.
func chartDate(lang string, d time.Time) string {
	if lang == "de" {
		return d.Format("2.1.")
	}
	return d.Format("Jan 2")
}

// axisSteps returns the step of the chart's value axis, the smallest 1, 2
// or 5 times a power of ten that reaches most in at most five steps, and
// the number of steps (at least one).
func axisSteps(most int) (step, n int) {
	step = 1
	for pow := 1; ; pow *= 10 {
		for _, m := range []int{1, 2, 5} {
			if step = m * pow; most <= 5*step {
				return step, max(1, (most+step-1)/step)
			}
		}
	}
}

// newSignInChart lays out days (oldest first) as the chart and its table.
func newSignInChart(t func(string) string, lang string, days []audit.DaySignIns) *signInChart {
	c := &signInChart{Width: chartWidth, Height: chartHeight, PlotRight: chartWidth - chartRight}
	most, total, failed := 0, 0, 0
	for _, d := range days {
		most = max(most, d.SignIns, d.Failed)
		total += d.SignIns
		failed += d.Failed
	}
	c.Empty = total+failed == 0
	step, steps := axisSteps(most)
	top := steps * step
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	y := func(n int) float64 { return chartTop + chartPlotHigh - float64(n)/float64(top)*chartPlotHigh }
	for i := 0; i <= steps; i++ {
		c.YTicks = append(c.YTicks, chartTick{At: f(y(i * step)), Label: overviewNumber(lang, i*step)})
	}
	c.PlotLeft = chartLabelRoom(c.YTicks)
	slot := float64(c.PlotRight-c.PlotLeft) / float64(len(days))
	var points []string
	busiest := 0
	for i, d := range days {
		x := float64(c.PlotLeft) + float64(i)*slot
		mid := x + slot/2
		day := chartDate(lang, d.Day)
		c.Bars = append(c.Bars, chartBar{X: f(x + slot*0.2), Y: f(y(d.SignIns)), W: f(slot * 0.6), H: f(y(0) - y(d.SignIns)),
			Tip: fmt.Sprintf(t("admin.overview.tip.signins"), day, overviewNumber(lang, d.SignIns))})
		points = append(points, f(mid)+","+f(y(d.Failed)))
		c.Dots = append(c.Dots, chartDot{X: f(mid), Y: f(y(d.Failed)),
			Tip: fmt.Sprintf(t("admin.overview.tip.failed"), day, overviewNumber(lang, d.Failed))})
		// A label every seven days, counted back from today, which is labelled.
		if (len(days)-1-i)%7 == 0 {
			tick := chartTick{At: f(mid), Label: day, Anchor: "middle"}
			if i == len(days)-1 {
				tick.At, tick.Anchor = f(chartWidth-chartRight), "end"
			}
			c.XTicks = append(c.XTicks, tick)
		}
		if d.SignIns > days[busiest].SignIns {
			busiest = i
		}
	}
	c.Line = strings.Join(points, " ")
	for i := len(days) - 1; i >= 0; i-- {
		d := days[i]
		c.Rows = append(c.Rows, chartRow{Day: chartDate(lang, d.Day), SignIns: overviewNumber(lang, d.SignIns), Failed: overviewNumber(lang, d.Failed)})
	}
	c.SignIns, c.Failed = overviewNumber(lang, total), overviewNumber(lang, failed)
	first, last := chartDate(lang, days[0].Day), chartDate(lang, days[len(days)-1].Day)
	c.Title = fmt.Sprintf(t("admin.overview.chart.title"), len(days))
	c.Desc = fmt.Sprintf(t("admin.overview.chart.desc"), first, last, c.SignIns, c.Failed)
	if total > 0 {
		b := days[busiest]
		c.Desc += " " + fmt.Sprintf(t("admin.overview.chart.busiest"), chartDate(lang, b.Day), overviewNumber(lang, b.SignIns))
	}
	return c
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.overview.title":          "Overview",
			"admin.overview.health":         "Health",
			"admin.overview.healthy":        "Everything is up.",
			"admin.overview.unhealthy":      "Something needs attention:",
			"admin.overview.up":             "Up",
			"admin.overview.down":           "Down",
			"admin.overview.database":       "Database",
			"admin.overview.cache":          "Cache",
			"admin.overview.realtime":       "Real-time channel",
			"admin.overview.ms":             "answers in %s ms",
			"admin.overview.fast":           "answers in under 0.1 ms",
			"admin.overview.disk":           "%s of %s free on its disk",
			"admin.overview.diskfull":       "its disk is full",
			"admin.overview.connections":    "%s connections, %s subscriptions",
			"admin.overview.counts":         "In numbers",
			"admin.overview.count.users":    "Users",
			"admin.overview.count.sessions": "Active sessions",
			"admin.overview.count.clients":  "OAuth clients",
			"admin.overview.count.apikeys":  "API keys",
			"admin.overview.count.reports":  "Pending reports",
			"admin.overview.count.hooksoff": "Webhook endpoints turned off after failing",
			"admin.overview.chart.title":    "Sign-ins per day, last %d days",
			"admin.overview.chart.desc":     "From %s to %s: %s sign-ins and %s failed sign-in attempts.",
			"admin.overview.chart.busiest":  "The most sign-ins were on %s (%s).",
			"admin.overview.chart.empty":    "No sign-ins in this period.",
			"admin.overview.legend.signins": "Sign-ins",
			"admin.overview.legend.failed":  "Failed sign-ins",
			"admin.overview.tip.signins":    "%s: %s sign-ins",
			"admin.overview.tip.failed":     "%s: %s failed sign-ins",
			"admin.overview.table":          "Show the numbers as a table",
			"admin.overview.col.day":        "Day (UTC)",
		},
		"de": {
			"admin.overview.title":          "Übersicht",
			"admin.overview.health":         "Zustand",
			"admin.overview.healthy":        "Alles läuft.",
			"admin.overview.unhealthy":      "Etwas braucht Aufmerksamkeit:",
			"admin.overview.up":             "Läuft",
			"admin.overview.down":           "Ausgefallen",
			"admin.overview.database":       "Datenbank",
			"admin.overview.cache":          "Cache",
			"admin.overview.realtime":       "Echtzeitkanal",
			"admin.overview.ms":             "antwortet in %s ms",
			"admin.overview.fast":           "antwortet in unter 0,1 ms",
			"admin.overview.disk":           "%s von %s frei auf ihrem Datenträger",
			"admin.overview.diskfull":       "ihr Datenträger ist voll",
			"admin.overview.connections":    "%s Verbindungen, %s Abonnements",
			"admin.overview.counts":         "In Zahlen",
			"admin.overview.count.users":    "Benutzer",
			"admin.overview.count.sessions": "Aktive Sitzungen",
			"admin.overview.count.clients":  "OAuth-Clients",
			"admin.overview.count.apikeys":  "API-Schlüssel",
			"admin.overview.count.reports":  "Offene Meldungen",
			"admin.overview.count.hooksoff": "Wegen Fehlern abgeschaltete Webhook-Endpunkte",
			"admin.overview.chart.title":    "Anmeldungen pro Tag, letzte %d Tage",
			"admin.overview.chart.desc":     "Vom %s bis zum %s: %s Anmeldungen und %s fehlgeschlagene Anmeldeversuche.",
			"admin.overview.chart.busiest":  "Die meisten Anmeldungen gab es am %s (%s).",
			"admin.overview.chart.empty":    "In diesem Zeitraum gab es keine Anmeldungen.",
			"admin.overview.legend.signins": "Anmeldungen",
			"admin.overview.legend.failed":  "Fehlgeschlagene Anmeldungen",
			"admin.overview.tip.signins":    "%s: %s Anmeldungen",
			"admin.overview.tip.failed":     "%s: %s fehlgeschlagene Anmeldungen",
			"admin.overview.table":          "Die Zahlen als Tabelle zeigen",
			"admin.overview.col.day":        "Tag (UTC)",
		},
	})
}
