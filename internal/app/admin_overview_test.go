package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
)

// overviewOperator is a user with a password who holds a new role with
// exactly perms (plus the User role).
func overviewOperator(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	return e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{roleWith(t, e, perms...), "role_user"}})
}

// overviewTile returns the number the overview shows under label, "" when
// the page has no such count.
func overviewTile(body, label string) string {
	m := regexp.MustCompile(`(?s)<dt>(?:<a href="[^"]*">)?` + regexp.QuoteMeta(label) + `(?:</a>)?</dt>\s*<dd>([^<]*)</dd>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// overviewNav lists the hrefs of the console's navigation in body.
func overviewNav(body string) []string {
	nav := body[strings.Index(body, `<nav class="sidenav"`):]
	nav = nav[:strings.Index(nav, "</nav>")]
	var out []string
	for _, m := range regexp.MustCompile(`<li><a href="([^"]+)"`).FindAllStringSubmatch(nav, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestAdminOverview(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		// A month of sign-ins: two days ago 3 sign-ins and 2 failed
		// attempts (one login_failed, one login recorded as failed), today 1
		// more (the admin's own sign-in below), and one older than the
		// chart's 30 days, which it leaves out.
		record := func(eventType string, failed bool) {
			t.Helper()
			if _, err := e.Server.Audit.Record(ctx, e.Server.DB, audit.Event{EventType: eventType, Failed: failed}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		e.Clock.Set(start)
		record(audit.Login, false)
		e.Clock.Set(start.AddDate(0, 0, 31))
		for range 3 {
			record(audit.Login, false)
		}
		record(audit.LoginFailed, true)
		record(audit.Login, true)
		record(audit.Logout, false) // not a sign-in
		e.Clock.Set(start.AddDate(0, 0, 33))

		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "correct horse battery"})
		// A pending report, and another already reviewed.
		for i, status := range []string{"pending", "resolved"} {
			id, err := e.Server.Audit.Record(ctx, e.Server.DB, audit.Event{UserID: admin.ID, EventType: audit.PasswordChanged})
			if err != nil {
				t.Fatal(err)
			}
			execSQL(t, e, `INSERT INTO audit_reports (id, audit_event_id, user_id, reason, status, created_at, updated_at) VALUES ($1, $2, $3, 'not_me', $4, 0, 0)`,
				"rep-"+string(rune('a'+i)), id, admin.ID, status)
		}

		// Without a session the page sends the browser to sign in.
		if p := newBrowser(t, e).get("/admin"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Fadmin" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		b := signedInBrowser(t, e, admin)
		p := b.get("/admin")
		if p.status != http.StatusOK {
			t.Fatalf("overview: %d %s", p.status, p.body)
		}
		// Health: what GET /health reports, service by service.
		h := e.Call(t, "GET", "/health", "", nil, http.StatusOK).JSON()
		if h["status"] != "ok" || !strings.Contains(p.body, "Everything is up.") || strings.Count(p.body, `<span class="badge ok">Up</span>`) != 3 ||
			!strings.Contains(p.body, "("+string(e.Server.DB.Flavor)+")") {
			t.Errorf("health panel:\n%s", p.body)
		}
		// Counts, each the total of the REST listing.
		total := func(path string) string {
			return strconv.Itoa(int(e.Call(t, "GET", path, admin.Token, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"].(float64)))
		}
		for label, want := range map[string]string{
			"Users":           total("/v1/users?limit=1"),
			"OAuth clients":   total("/v1/oauth/clients/all?limit=1"),
			"API keys":        total("/v1/api-keys?limit=1"),
			"Pending reports": "1",
			"Active sessions": strconv.Itoa(count(t, e, `SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > $1`, db.TS(e.Clock.Now()))),
		} {
			if got := overviewTile(p.body, label); got != want {
				t.Errorf("count %q = %q, want %q", label, got, want)
			}
		}
		// The chart: 30 days, two days ago 3 and 2, today the admin's sign-in.
		if n := strings.Count(p.body, `<rect class="bar"`); n != 30 {
			t.Errorf("%d bars, want 30", n)
		}
		for _, want := range []string{
			`<tr><th scope="row">Apr 1</th><td data-label="Sign-ins">3</td><td data-label="Failed sign-ins">2</td></tr>`,
			`<tr><th scope="row">Apr 3</th><td data-label="Sign-ins">1</td><td data-label="Failed sign-ins">0</td></tr>`,
			`<tr><th scope="row">Mar 5</th><td data-label="Sign-ins">0</td>`,
			"From Mar 5 to Apr 3: 4 sign-ins and 2 failed sign-in attempts. The most sign-ins were on Apr 1 (3).",
			`role="img" aria-labelledby="chart-title chart-desc"`,
		} {
			if !strings.Contains(p.body, want) {
				t.Errorf("chart lacks %s", want)
			}
		}
		if strings.Contains(p.body, `scope="row">Mar 1<`) || strings.Contains(p.body, "style=") {
			t.Error("the chart shows a day before its 30, or an inline style")
		}

		// An operator holding only audit:read sees the sign-ins and the
		// reports, no other count, and only the audit entry of the navigation.
		auditor := signedInBrowser(t, e, overviewOperator(t, e, "audit:read"))
		q := auditor.get("/admin")
		if q.status != http.StatusOK || overviewTile(q.body, "Pending reports") != "1" || overviewTile(q.body, "Users") != "" ||
			overviewTile(q.body, "API keys") != "" || !strings.Contains(q.body, `class="chart"`) {
			t.Errorf("audit:read overview: %d\n%s", q.status, q.body)
		}
		if got := strings.Join(overviewNav(q.body), " "); got != "/admin /admin/audit" {
			t.Errorf("audit:read navigation: %s", got)
		}
		// users:read: users and sessions, no chart.
		reader := signedInBrowser(t, e, overviewOperator(t, e, "users:read"))
		q = reader.get("/admin")
		if q.status != http.StatusOK || overviewTile(q.body, "Users") == "" || overviewTile(q.body, "Active sessions") == "" ||
			overviewTile(q.body, "Pending reports") != "" || strings.Contains(q.body, `class="chart"`) {
			t.Errorf("users:read overview: %d\n%s", q.status, q.body)
		}
		// A user without any admin permission is refused with the 403 page.
		plain := signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"}))
		if q := plain.get("/admin"); q.status != http.StatusForbidden || !strings.Contains(q.body, "<html") || strings.Contains(q.body, "Health") {
			t.Errorf("plain user: %d\n%s", q.status, q.body)
		}
		// The page is in German for a user who prefers it.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, admin.ID)
		if q := b.get("/admin"); !strings.Contains(q.body, "Alles läuft.") || !strings.Contains(q.body, `<th scope="row">1.4.</th>`) {
			t.Errorf("German overview:\n%s", q.body)
		}
	})
}

func TestAdminUserList(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		ada := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "Ada.Lovelace@Example.test"})
		e.Clock.Advance(time.Minute)
		grace := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper", Email: "grace@navy.test"})
		e.Clock.Advance(time.Minute)
		gone := e.NewUser(t, apptest.UserSpec{Username: "gone_user"})
		e.Clock.Advance(time.Minute)
		// Ada is banned, Grace has two-factor authentication on, gone_user
		// is deleted by an administrator (kept until the purge).
		e.Call(t, "POST", "/v1/users/"+ada.ID+"/ban", admin.Token, map[string]any{"reason": "spam"}, http.StatusCreated)
		execSQL(t, e, `INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, enabled_at, created_at, updated_at)
			SELECT $1, 'enabled', 'x', id, 0, 0, 0, 0 FROM platforms WHERE slug = 'email'`, grace.ID)
		e.Call(t, "DELETE", "/v1/users/"+gone.ID, admin.Token, nil, http.StatusNoContent)

		reader := overviewOperator(t, e, "users:read")
		b := signedInBrowser(t, e, reader)
		p := b.get("/admin/users")
		if p.status != http.StatusOK || !strings.Contains(p.body, `<a href="/admin/users/`+ada.ID+`"><strong>ada_lovelace</strong></a>`) ||
			strings.Contains(p.body, "gone_user") {
			t.Fatalf("users list: %d\n%s", p.status, p.body)
		}
		row := func(body, id string) string {
			i := strings.Index(body, `<tr id="user-`+id+`">`)
			if i < 0 {
				return ""
			}
			return body[i : i+strings.Index(body[i:], "</tr>")]
		}
		if r := row(p.body, ada.ID); !strings.Contains(r, ">Banned<") || strings.Contains(r, ">Active<") || !strings.Contains(r, "Ada.Lovelace@Example.test") {
			t.Errorf("banned row: %s", r)
		}
		// users:read alone does not show other users' two-factor state
		// (GET …/2fa/status for another user needs two_factor:manage).
		if r := row(p.body, grace.ID); !strings.Contains(r, ">Active<") || strings.Contains(r, "2FA") {
			t.Errorf("grace for users:read: %s", r)
		}
		manager := signedInBrowser(t, e, overviewOperator(t, e, "users:read", "two_factor:manage"))
		if r := row(manager.get("/admin/users").body, grace.ID); !strings.Contains(r, ">2FA on<") {
			t.Errorf("grace for two_factor:manage: %s", r)
		}

		// The search is GET /v1/users's: the start of a username or an email
		// in any case, or the exact id, the same users in the same order.
		for _, s := range []string{"ada_lo", "ADA.LOVELACE@example", "grace@navy", "navy.test", ada.ID, "u_", "nobody-here"} {
			var want []string
			for _, u := range e.Call(t, "GET", "/v1/users?search="+url.QueryEscape(s), admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
				want = append(want, u.(map[string]any)["id"].(string))
			}
			var got []string
			for _, m := range regexp.MustCompile(`<tr id="user-([^"]+)">`).FindAllStringSubmatch(b.get("/admin/users?search="+url.QueryEscape(s)).body, -1) {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("search %q: page %v, REST %v", s, got, want)
			}
		}
		if r := e.Call(t, "GET", "/v1/users?search="+ada.ID, admin.Token, nil, http.StatusOK).JSON()["data"].([]any); len(r) != 1 {
			t.Errorf("REST search by id: %v", r)
		}
		if q := b.get("/admin/users?search=nobody-here"); !strings.Contains(q.body, "No users match this search.") || !strings.Contains(q.body, `value="nobody-here"`) {
			t.Errorf("no match:\n%s", q.body)
		}
		// Deleted accounts on request, with their state.
		q := b.get("/admin/users?search=gone&include_deleted=true")
		if r := row(q.body, gone.ID); !strings.Contains(r, ">Deleted<") || !strings.Contains(r, "Deletion on ") || !strings.Contains(q.body, `value="true" checked`) {
			t.Errorf("deleted row: %s", r)
		}

		// Pages of the REST listing's size, the search kept in the links.
		for range 22 {
			e.NewUser(t, apptest.UserSpec{})
		}
		q = b.get("/admin/users?search=u_")
		if !strings.Contains(q.body, "Users 1–20 of 2") || !strings.Contains(q.body, `href="/admin/users?page=2&amp;search=u_" rel="next"`) {
			t.Fatalf("first page:\n%s", q.body)
		}
		q = b.get("/admin/users?search=u_&page=2")
		if !strings.Contains(q.body, "Page 2 of 2") || !strings.Contains(q.body, `rel="prev"`) || strings.Contains(q.body, `rel="next"`) {
			t.Errorf("second page:\n%s", q.body)
		}
		if q := b.get("/admin/users?page=99"); !strings.Contains(q.body, "past the end") || !strings.Contains(q.body, `href="/admin/users?page=1"`) {
			t.Errorf("past the end:\n%s", q.body)
		}
		// The page has the rule of GET /v1/users: users:read.
		auditor := signedInBrowser(t, e, overviewOperator(t, e, "audit:read"))
		if q := auditor.get("/admin/users"); q.status != http.StatusForbidden || !strings.Contains(q.body, "users:read") {
			t.Errorf("audit:read on the users list: %d\n%s", q.status, q.body)
		}
	})
}
