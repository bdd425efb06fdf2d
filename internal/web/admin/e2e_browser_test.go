package admin_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// The acceptance scenarios of the admin console (issue 14) run end to end in
// headless Chromium on each engine. Resetting a user's two-factor
// authentication is in TestBrowserAdminUser, reviewing a report with the mail
// in the outbox and the audit:read-only operator's pages in
// TestBrowserAdminAudit, a first-party client created by a super admin and
// refused to a developer in TestBrowserAdminClients; this file has what
// those leave out: the ban as the operator and the banned user each see
// it, from the search to signing in again, and the answers (403) to users
// without the permission of an area.

// untilText polls the text of sel in the tab of ctx until it contains want,
// so a test reads the page a form was sent to rather than the page it was
// sent from (whose elements match the same selector until the browser has
// navigated).
func untilText(t *testing.T, ctx context.Context, what, sel, want string) string {
	t.Helper()
	js := `(() => { const n = document.querySelector(` + strconv.Quote(sel) + `); return n ? n.innerText : ""; })()`
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := webtest.Read(t, ctx, what, chromedp.Evaluate[string](js))
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, want it to contain %q", what, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statusOf is the HTTP status the browser of ctx gets for path, with its
// cookies (a fetch from the page shown, which must be of the server).
func statusOf(t *testing.T, ctx context.Context, path string) int {
	t.Helper()
	return webtest.Read(t, ctx, "status of "+path, chromedp.Evaluate[int](
		`fetch(`+strconv.Quote(path)+`, {redirect: "manual"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
}

// TestBrowserAdminBanEndToEnd: a moderator searches a user by the start of
// their username in any case, opens their page from the results and bans
// them for an hour with a reason. The user's session is refused by the API
// (401) and their own browser is signed out: the account console sends it
// to the sign-in page, where the user cannot sign in while the ban lasts.
// The moderator lifts the ban and the user signs in again. The results,
// the user's page under the ban and the refused sign-in pass axe-core; with
// HMID_SCREENSHOTS set they are saved at desktop and phone width.
func TestBrowserAdminBanEndToEnd(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		mod := auditOperator(t, e, "mod_mia", "users:read", "users:ban")
		grace := e.NewUser(t, apptest.UserSpec{Username: "Grace_Hopper", Email: "grace@example.test", Password: pw})
		kelly := e.NewUser(t, apptest.UserSpec{Username: "grace_kelly", Email: "kelly@example.test", Password: pw})
		other := e.NewUser(t, apptest.UserSpec{Username: "amazing_grace", Email: "amazing@example.test", Password: pw})
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

		// The user is signed in to the account console in their own browser.
		user := webtest.Chromium(t)
		webtest.Login(t, user, e.URL, grace.Email, pw)
		webtest.Do(t, user, "open the account console", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`main h1`)))
		if loc := webtest.Read(t, user, "location", chromedp.Location()); loc != e.URL+"/account" {
			t.Fatalf("the user's browser is at %s, want the account console", loc)
		}

		// The moderator searches: the start of a username, any case.
		ctx := webtest.Chromium(t)
		asked := webtest.AskedDialogs(ctx)
		webtest.Login(t, ctx, e.URL, mod.Email, pw)
		webtest.Do(t, ctx, "search for grace",
			chromedp.Navigate(e.URL+"/admin/users"),
			chromedp.WaitVisible(css(`#search`)),
			chromedp.SendKeys(css(`#search`), "GRACE_"),
			chromedp.Click(css(`form.user-search button[type=submit]`)))
		waitFor(t, ctx, "search=GRACE_")
		webtest.Do(t, ctx, "the results", chromedp.WaitVisible(css(`#user-`+grace.ID)))
		found := webtest.Read(t, ctx, "result rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.users tbody tr")].map(r => r.id)`))
		if strings.Join(found, " ") != "user-"+kelly.ID+" user-"+grace.ID && strings.Join(found, " ") != "user-"+grace.ID+" user-"+kelly.ID {
			t.Fatalf("results %v: want grace_kelly and Grace_Hopper, not amazing_grace (%s)", found, other.ID)
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-users-search")

		// The user's page from the results; the ban for an hour.
		webtest.Do(t, ctx, "open grace's page", chromedp.Click(css(`#user-`+grace.ID+` a`)), chromedp.WaitVisible(css(`#ban-reason`)))
		banForm := `form[action="/admin/users/` + grace.ID + `/ban"]`
		webtest.Do(t, ctx, "ban grace",
			chromedp.SendKeys(css(`#ban-reason`), "Phishing links sent to other members"),
			chromedp.SetValue(css(`#ban-duration`), "3600"),
			chromedp.Click(css(banForm+` input[name=confirm]`)),
			chromedp.Click(css(banForm+` button[type=submit]`)))
		wantAsked(t, asked, "Ban this user?")
		untilText(t, ctx, "flash after the ban", `.notice`, "The user is banned")
		if b := untilText(t, ctx, "ban panel", `#ban`, "Banned since"); !strings.Contains(b, "Phishing links sent to other members") {
			t.Fatalf("ban panel: %q", b)
		}
		ban := e.Call(t, "GET", "/v1/users/"+grace.ID+"/ban", e.SystemKey, nil, http.StatusOK).JSON()
		if ban["is_banned"] != true {
			t.Fatalf("ban status: %v", ban)
		}

		// The API refuses the user's session; their browser is signed out.
		e.Call(t, "GET", "/v1/users/me", grace.Token, nil, http.StatusUnauthorized)
		webtest.Do(t, user, "reload the account console", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`#email`)))
		if loc := webtest.Read(t, user, "location", chromedp.Location()); !strings.HasPrefix(loc, e.URL+"/login") {
			t.Fatalf("the banned user's browser is at %s, want the sign-in page", loc)
		}
		// Signing in again is refused while the ban lasts, and says why.
		webtest.Do(t, user, "sign in while banned",
			chromedp.SendKeys(css(`#email`), grace.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form[action="/login"] button[type=submit]`)))
		refused := untilText(t, user, "the refused sign-in", `main`, "Your account is blocked until")
		if loc := webtest.Read(t, user, "location", chromedp.Location()); !strings.HasPrefix(loc, e.URL+"/login") {
			t.Fatalf("a banned user signed in: at %s (%q)", loc, refused)
		}
		webtest.Axe(t, user, "")
		webtest.Screenshots(t, user, "login-banned")

		// The moderator's view of the ban, then the lift.
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-user-banned")
		webtest.Do(t, ctx, "lift the ban", chromedp.Click(css(`form[action="/admin/users/`+grace.ID+`/ban/lift"] button`)))
		untilText(t, ctx, "flash after lifting", `.notice`, "The ban was lifted")
		webtest.Do(t, ctx, "the ban form is back", chromedp.WaitVisible(css(`#ban-reason`)))
		if e.Call(t, "GET", "/v1/users/"+grace.ID+"/ban", e.SystemKey, nil, http.StatusOK).JSON()["is_banned"] != false {
			t.Fatal("the ban was not lifted")
		}

		// The user signs in again and reaches the account console.
		webtest.Login(t, user, e.URL, grace.Email, pw)
		webtest.Do(t, user, "open the account console", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`main h1`)))
		if loc := webtest.Read(t, user, "location", chromedp.Location()); loc != e.URL+"/account" {
			t.Fatalf("after the ban the user's browser is at %s, want the account console", loc)
		}
	})
}

// TestBrowserAdminForbidden: each admin area answers 403 to a signed-in
// user without its permission, as its REST route does. A user with no
// admin permission gets 403 on /admin itself, on a page that offers no
// admin navigation; an operator holding only audit:read gets 200 on the
// overview and the audit pages and 403 on every other area, and the
// navigation lists only the overview and the audit log.
func TestBrowserAdminForbidden(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		areas := []string{"/admin/users", "/admin/roles", "/admin/clients", "/admin/api-keys", "/admin/platforms", "/admin/config",
			"/admin/chat", "/admin/tracking"}
		routes := map[string]bool{}
		for _, r := range e.Server.Routes() {
			routes[r] = true
		}

		t.Run("no admin permission", func(t *testing.T) {
			plain := e.NewUser(t, apptest.UserSpec{Username: "plain_pat", Email: "pat@example.test", Password: pw})
			ctx := webtest.Chromium(t)
			webtest.Login(t, ctx, e.URL, plain.Email, pw)
			webtest.Do(t, ctx, "open /admin", chromedp.Navigate(e.URL+"/admin"), chromedp.WaitVisible(css(`h1`)))
			if h1 := webtest.Read(t, ctx, "title", chromedp.Text(css(`h1`))); h1 != "Access denied" {
				t.Fatalf("/admin for a user: %q", h1)
			}
			if n := webtest.Read(t, ctx, "admin links", chromedp.Evaluate[int](`document.querySelectorAll('a[href^="/admin/"]').length`)); n != 0 {
				t.Errorf("the refusal offers %d links into the admin console", n)
			}
			webtest.Axe(t, ctx, "")
			webtest.Screenshots(t, ctx, "admin-forbidden")
			for _, path := range append([]string{"/admin", "/admin/audit", "/admin/audit/reports"}, areas...) {
				if !routes["GET "+path] {
					continue
				}
				if got := statusOf(t, ctx, path); got != http.StatusForbidden {
					t.Errorf("%s for a user without admin permissions: %d, want 403", path, got)
				}
			}
		})

		t.Run("audit:read only", func(t *testing.T) {
			reader := auditOperator(t, e, "auditor_ali", "audit:read")
			ctx := webtest.Chromium(t)
			webtest.Login(t, ctx, e.URL, reader.Email, pw)
			webtest.Do(t, ctx, "open /admin", chromedp.Navigate(e.URL+"/admin"), chromedp.WaitVisible(css(`.sidenav`)))
			nav := webtest.Read(t, ctx, "navigation", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".sidenav ul a")].map(a => a.getAttribute("href"))`))
			if strings.Join(nav, " ") != "/admin /admin/audit" {
				t.Fatalf("navigation %v, want the overview and the audit log only", nav)
			}
			for _, path := range []string{"/admin", "/admin/audit", "/admin/audit/reports", "/admin/audit/export"} {
				if got := statusOf(t, ctx, path); got != http.StatusOK {
					t.Errorf("%s for an audit reader: %d, want 200", path, got)
				}
			}
			for _, path := range areas {
				if !routes["GET "+path] {
					continue
				}
				if got := statusOf(t, ctx, path); got != http.StatusForbidden {
					t.Errorf("%s for an audit reader: %d, want 403", path, got)
				}
			}
		})
	})
}
