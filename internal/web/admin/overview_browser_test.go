package admin_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminOverview drives headless Chromium through the admin
// console's overview (health, counts and a month of sign-ins drawn as a
// chart, with its table) and its users list: searching for a user, seeing
// their state and following the row to the user's page. Both pages are
// checked with axe-core; with HMID_SCREENSHOTS set both are saved at
// desktop and phone width.
func TestBrowserAdminOverview(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		bg := context.Background()
		// A month of sign-ins, busier on weekdays, with a burst of failed
		// attempts one day.
		start := time.Date(2026, 10, 24, 9, 0, 0, 0, time.UTC)
		for d := range 30 {
			e.Clock.Set(start.AddDate(0, 0, d))
			signIns, failed := 14+(d*7)%9, 1+d%3
			if wd := e.Clock.Now().Weekday(); wd == time.Saturday || wd == time.Sunday {
				signIns /= 3
			}
			if d == 21 {
				failed = 17
			}
			for i := range signIns + failed {
				if _, err := e.Server.Audit.Record(bg, e.Server.DB, audit.Event{EventType: audit.Login, Failed: i >= signIns}); err != nil {
					t.Fatal(err)
				}
			}
		}
		admin := e.NewUser(t, apptest.UserSpec{Username: "operator", Email: "operator@example.test", Password: pw, SuperAdmin: true,
			Roles: []string{"role_admin", "role_user"}})
		// Newest first on the list: the users with a state to show are made last.
		var ada apptest.User
		for i, name := range []string{"barbara_l", "edsger_d", "katherine_j", "alan_turing", "grace_hopper", "ada_lovelace"} {
			e.Clock.Advance(time.Hour)
			u := e.NewUser(t, apptest.UserSpec{Username: name, Email: strings.ReplaceAll(name, "_", ".") + "@example.test"})
			if _, err := e.Server.DB.ExecContext(bg, `UPDATE users SET last_login_at = $1 WHERE id = $2`,
				db.TS(e.Clock.Now().Add(-time.Duration(i*i)*time.Hour)), u.ID); err != nil {
				t.Fatal(err)
			}
			switch name {
			case "ada_lovelace":
				ada = u
				e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", admin.Token, map[string]any{"reason": "spam", "duration_seconds": 7 * 24 * 3600}, http.StatusCreated)
			case "grace_hopper":
				if _, err := e.Server.DB.ExecContext(bg, `INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, enabled_at, created_at, updated_at)
					SELECT $1, 'enabled', 'x', id, 0, 0, 0, 0 FROM platforms WHERE slug = 'email'`, u.ID); err != nil {
					t.Fatal(err)
				}
			case "alan_turing":
				if _, err := e.Server.DB.ExecContext(bg, `UPDATE users SET scheduled_deletion_at = $1 WHERE id = $2`, db.TS(e.Clock.Now().AddDate(0, 0, 7)), u.ID); err != nil {
					t.Fatal(err)
				}
			}
		}

		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin")
		main := webtest.Read(t, ctx, "overview", chromedp.Text(chromedp.CSS(`main`)))
		for _, want := range []string{"Everything is up.", "Database", "Real-time channel", "Users", "Sign-ins per day, last 30 days"} {
			if !strings.Contains(main, want) {
				t.Errorf("the overview lacks %q:\n%s", want, main)
			}
		}
		bars := webtest.Read(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll("svg.chart rect.bar").length`))
		if bars != 30 {
			t.Errorf("%d bars, want 30", bars)
		}
		// The numbers behind the chart, for those who cannot see it.
		webtest.Do(t, ctx, "open the table", chromedp.Click(chromedp.CSS(`details.chart-table summary`)))
		if row := webtest.Read(t, ctx, "busy day", chromedp.Text(chromedp.CSS(`details.chart-table tbody tr:nth-child(9)`))); !strings.Contains(row, "17") {
			t.Errorf("the table's day of failed attempts: %q", row)
		}
		// The desktop picture shows the counts and the whole chart, the
		// phone's the top of the page, the health panel.
		webtest.Do(t, ctx, "close the table", chromedp.Click(chromedp.CSS(`details.chart-table summary`)),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#counts-title").parentElement.scrollIntoView()`))
		webtest.Screenshot(t, ctx, "admin-overview-desktop", webtest.DesktopWidth, webtest.DesktopHeight)
		webtest.Do(t, ctx, "scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		webtest.Screenshot(t, ctx, "admin-overview-phone", webtest.PhoneWidth, webtest.PhoneHeight)

		// The users list: search, see the state, follow the row.
		webtest.Axe(t, ctx, e.URL+"/admin/users")
		webtest.Screenshots(t, ctx, "admin-users")
		webtest.Do(t, ctx, "search for ada",
			chromedp.SendKeys(chromedp.CSS(`#search`), "ADA_LOVE"),
			chromedp.Click(chromedp.CSS(`form.user-search button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#users-count`)))
		overviewWaitFor(t, ctx, "?search=ADA_LOVE&status=&two_factor=&role_id=")
		rows := webtest.Read(t, ctx, "result rows", chromedp.Evaluate[int](`document.querySelectorAll("table.users tbody tr").length`))
		row := webtest.Read(t, ctx, "ada's row", chromedp.Text(chromedp.CSS(`#user-`+ada.ID)))
		if rows != 1 || !strings.Contains(row, "Banned") || !strings.Contains(row, "ada.lovelace@example.test") {
			t.Errorf("search result: %d rows, %q", rows, row)
		}
		webtest.Do(t, ctx, "open ada", chromedp.Click(chromedp.CSS(`#user-`+ada.ID+` a`)))
		overviewWaitFor(t, ctx, "/admin/users/"+ada.ID)
	})
}

// overviewWaitFor waits until the browser's location ends with suffix.
func overviewWaitFor(t *testing.T, ctx context.Context, suffix string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		loc := webtest.Read(t, ctx, "location", chromedp.Location())
		if strings.HasSuffix(loc, suffix) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser is at %s, not …%s", loc, suffix)
		}
	}
}
