package admin_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/mail/mailtest"
	"hmid/internal/web/webtest"
)

// auditOperator makes a user who signs in with pw and holds a new role with
// exactly perms.
func auditOperator(t *testing.T, e *apptest.Env, username string, perms ...string) apptest.User {
	t.Helper()
	ctx := context.Background()
	role := "role_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	now := db.TS(e.Clock.Now())
	if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at)
		VALUES ($1, $1, '', FALSE, FALSE, $2, $2)`, role, now); err != nil {
		t.Fatal(err)
	}
	for _, p := range perms {
		res, act, _ := strings.Cut(p, ":")
		if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`,
			role, access.PermissionID(res, act), now); err != nil {
			t.Fatal(err)
		}
	}
	return e.NewUser(t, apptest.UserSpec{Username: username, Email: username + "@example.test", Password: pw, Roles: []string{role, "role_user"}})
}

// waitFor polls the browser's location until it contains part.
func waitFor(t *testing.T, ctx context.Context, part string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(webtest.Read(t, ctx, "location", chromedp.Location()), part); {
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not reach %q", part)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserAdminAudit drives headless Chromium through the audit area of
// the admin console on each engine: a reviewer filters the log, reviews a
// report and the reporting user's mail is in the outbox with the status
// visible through REST; an operator holding only audit:read sees the audit
// pages and nothing else. Each page passes axe-core in both themes; with
// HMID_SCREENSHOTS set the log and the queue are saved at desktop and phone
// width.
func TestBrowserAdminAudit(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		admin := e.Admin(t)
		reviewer := auditOperator(t, e, "grace_reviewer", "audit:read", "audit:write")
		reader := auditOperator(t, e, "rita_reader", "audit:read")
		carol := e.NewUser(t, apptest.UserSpec{Username: "carol", Email: "carol@example.test"})
		dave := e.NewUser(t, apptest.UserSpec{Username: "dave", Email: "dave@example.test"})
		rec := webtest.Recorder(t, e, 23*time.Minute)
		report := func(u apptest.User, ev, reason, desc string) string {
			t.Helper()
			r := e.Call(t, "POST", "/v1/users/me/audit/"+ev+"/report", u.Token, map[string]any{"reason": reason, "description": desc}, http.StatusCreated)
			return r.JSON()["report"].(map[string]any)["id"].(string)
		}
		firefox := "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0"
		safari := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
		rec(audit.Event{UserID: carol.ID, EventType: audit.Login, ResourceType: "user", ResourceID: carol.ID, IPAddress: "198.51.100.20", UserAgent: firefox,
			Description: "Logged in with email and password", SourceService: "id"})
		rec(audit.Event{UserID: dave.ID, EventType: audit.LoginFailed, ResourceType: "user", IPAddress: "192.0.2.14", UserAgent: firefox, Failed: true,
			ErrorMessage: "wrong password", SourceService: "id"})
		daveEv := rec(audit.Event{UserID: dave.ID, EventType: audit.Login, ResourceType: "user", IPAddress: "192.0.2.14", UserAgent: firefox, SourceService: "id"})
		rec(audit.Event{UserID: "discord:81203", EventType: audit.BotCommandExecuted, ResourceType: "command", ResourceID: "/pegel", SourceService: "chat_platform_bot"})
		rec(audit.Event{UserID: dave.ID, ActorID: admin.ID, EventType: audit.UserBanned, ResourceType: "ban", SourceService: "backend",
			Description: "Banned for 7 days: spam"})
		carolEv := rec(audit.Event{UserID: carol.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", IPAddress: "203.0.113.77", UserAgent: safari,
			Description: "API key backup-sync created"})
		old := report(dave, daveEv, "unknown_location", "I was in Berlin, not there.")
		e.Call(t, "PATCH", "/v1/admin/audit/reports/"+old, admin.Token, map[string]any{"status": "dismissed",
			"resolution_notes": "The address belongs to your mobile carrier."}, http.StatusOK)
		carolRep := report(carol, carolEv, "not_me", "I own no iPhone and made no key.")

		t.Run("review a report and see the mail in the outbox", func(t *testing.T) {
			ctx := webtest.Chromium(t)
			webtest.Login(t, ctx, e.URL, reviewer.Email, pw)
			webtest.Axe(t, ctx, e.URL+"/admin/audit")
			// Filter the log to carol's events through the form.
			webtest.Do(t, ctx, "filter by user",
				chromedp.Click(css(`.filter-box summary`)),
				chromedp.WaitVisible(css(`#f-user`)),
				chromedp.SendKeys(css(`#f-user`), "carol"),
				chromedp.Click(css(`.filter-actions button`)))
			waitFor(t, ctx, "user_search=carol")
			webtest.Do(t, ctx, "wait for the filtered log", chromedp.WaitVisible(css(`#events-count`)))
			if got := webtest.Read(t, ctx, "count", chromedp.Text(css(`#events-count`))); got != "Events 1–2 of 2" {
				t.Fatalf("filtered log: %q", got)
			}
			if row := webtest.Read(t, ctx, "carol's key", chromedp.Text(css(`#event-`+carolEv))); !strings.Contains(row, "API key created") ||
				!strings.Contains(row, "Safari") || !strings.Contains(row, "203.0.113.77") || !strings.Contains(row, "Reported") {
				t.Fatalf("carol's row: %q", row)
			}
			if href := webtest.Read(t, ctx, "CSV link", chromedp.AttributeValue(css(`a[download]`), "href")).Value; !strings.HasPrefix(href, "/admin/audit/export?") || !strings.Contains(href, "user_search=carol") ||
				strings.Contains(href, "page=") || strings.Contains(href, "limit=") {
				t.Errorf("CSV link %q", href)
			}
			if e.Engine.Name == "sqlite" {
				webtest.Do(t, ctx, "the whole log", chromedp.Navigate(e.URL+"/admin/audit?limit=10"), chromedp.WaitVisible(css(`#events-count`)))
				webtest.Screenshots(t, ctx, "admin-audit")
			}

			// The queue: carol's pending report first, its review form open.
			webtest.Axe(t, ctx, e.URL+"/admin/audit/reports")
			first := webtest.Read(t, ctx, "first report", chromedp.AttributeValue(css(`article.panel`), "id")).Value
			if first != "report-"+carolRep {
				t.Fatalf("first report %q, want carol's pending one", first)
			}
			form := `#report-` + carolRep
			webtest.Submit(t, ctx, "review carol's report",
				chromedp.WaitVisible(css(`#status-`+carolRep)),
				chromedp.SetValue(css(`#status-`+carolRep), "resolved"),
				chromedp.SendKeys(css(`#notes-`+carolRep), "We revoked the key and signed out the iPhone."),
				chromedp.Click(css(form+` form button[type=submit]`)),
				chromedp.WaitVisible(css(`.notice`)))
			if got := webtest.Read(t, ctx, "flash", chromedp.Text(css(`.notice`))); !strings.Contains(got, "The review is saved") {
				t.Fatalf("flash: %q", got)
			}
			if got := webtest.Read(t, ctx, "the reviewed report", chromedp.Text(css(form))); !strings.Contains(got, "Resolved") ||
				!strings.Contains(got, "by grace_reviewer") {
				t.Fatalf("reviewed report: %q", got)
			}
			webtest.Axe(t, ctx, "")

			// The mail is in carol's outbox; REST shows the new status.
			msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, carol.Email)
			if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0].Text, "We revoked the key and signed out the iPhone.") {
				t.Fatalf("outbox: %v %+v", err, msgs)
			}
			mine := e.Call(t, "GET", "/v1/users/me/audit/reports", carol.Token, nil, http.StatusOK).Array()
			if r := mine[0].(map[string]any); r["status"] != "resolved" || r["reviewed_by"] != reviewer.ID {
				t.Fatalf("REST: %v", r)
			}

			if e.Engine.Name == "sqlite" {
				// The queue with another pending report, as an operator meets it.
				report(dave, rec(audit.Event{UserID: dave.ID, EventType: audit.PasswordChanged, ResourceType: "user", IPAddress: "203.0.113.5",
					UserAgent: safari, SourceService: "id"}), "suspicious", "I did not change my password.")
				webtest.Do(t, ctx, "the queue", chromedp.Navigate(e.URL+"/admin/audit/reports"), chromedp.WaitVisible(css(`article.panel`)))
				webtest.Screenshots(t, ctx, "admin-audit-reports")
			}
		})

		t.Run("an audit:read-only operator sees nothing else", func(t *testing.T) {
			ctx := webtest.Chromium(t)
			webtest.Login(t, ctx, e.URL, reader.Email, pw)
			webtest.Do(t, ctx, "open the log", chromedp.Navigate(e.URL+"/admin/audit"), chromedp.WaitVisible(css(`#events-count`)))
			nav := webtest.Read(t, ctx, "navigation", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".sidenav ul a")].map(a => a.textContent)`))
			if strings.Join(nav, "|") != "Overview|Audit log" {
				t.Fatalf("navigation %v, want Overview and Audit log only", nav)
			}
			webtest.Axe(t, ctx, e.URL+"/admin/audit/reports")
			if n := webtest.Read(t, ctx, "review forms", chromedp.Evaluate[int](`document.querySelectorAll('form[method=post][action^="/admin/audit/reports/"]').length`)); n != 0 {
				t.Fatalf("%d review forms for a reader", n)
			}
			if text := webtest.Read(t, ctx, "queue", chromedp.Text(css(`main`))); !strings.Contains(text, "needs the audit:write permission") {
				t.Fatalf("read-only queue: %q", text)
			}
			routes := map[string]bool{}
			for _, r := range e.Server.Routes() {
				routes[r] = true
			}
			for _, path := range []string{"/admin/users", "/admin/roles", "/admin/clients", "/admin/api-keys", "/admin/platforms",
				"/admin/config", "/admin/chat", "/admin/tracking"} {
				want := "Page not found" // an area this build does not have
				if routes["GET "+path] {
					want = "Access denied"
				}
				webtest.Do(t, ctx, "open "+path, chromedp.Navigate(e.URL+path), chromedp.WaitVisible(css(`h1`)))
				if h1 := webtest.Read(t, ctx, "title of "+path, chromedp.Text(css(`h1`))); h1 != want {
					t.Errorf("%s: %q, want %q", path, h1, want)
				}
			}
		})
	})
}
