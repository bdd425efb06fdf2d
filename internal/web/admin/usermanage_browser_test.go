package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/mail/mailtest"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminUserManagement runs the operators' user management
// (issue 22) in headless Chromium: the users list found by a part of an
// address, sorted by a column, filtered by state and jumped to a page; a
// user created with an invitation and one refused for an address in use;
// on the user's page a verification link mailed, the address marked
// verified, the username and language changed (and a bad username
// refused), a password set and a reset link mailed. Each page passes
// axe-core in the light and the dark theme, in English and in German; with
// HMID_SCREENSHOTS set the list, the form and the user's page are saved at
// desktop and phone width, light and dark.
func TestBrowserAdminUserManagement(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := auditOperator(t, e, "ops_olga", "users:read", "users:write", "roles:read", "two_factor:manage")
		ada := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada.lovelace@example.test", Password: pw})
		for i := range 24 {
			e.NewUser(t, apptest.UserSpec{Username: fmt.Sprintf("member_%02d", i), Email: fmt.Sprintf("m%02d@example.test", i)})
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := e.Server.DB.ExecContext(context.Background(), q, args...); err != nil {
				t.Fatal(err)
			}
		}
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		ctx := webtest.Chromium(t)
		asked := acceptDialogs(ctx)
		webtest.Login(t, ctx, e.URL, op.Email, pw)

		// The list: a part of the address anywhere, then sorted by email.
		webtest.Do(t, ctx, "search for lovelace", chromedp.Navigate(e.URL+"/admin/users"), chromedp.WaitVisible(css(`#search`)),
			chromedp.SendKeys(css(`#search`), "LOVELACE@"), chromedp.Click(css(`form.user-search button[type=submit]`)))
		waitFor(t, ctx, "search=LOVELACE")
		webtest.Do(t, ctx, "ada is found", chromedp.WaitVisible(css(`#user-`+ada.ID)))
		webtest.Do(t, ctx, "all users, sorted by email", chromedp.Navigate(e.URL+"/admin/users?limit=10"), chromedp.WaitVisible(css(`table.users`)),
			chromedp.Click(css(`th:nth-child(2) a`)))
		waitFor(t, ctx, "sort_field=email")
		if s := untilText(t, ctx, "sorted header", `th[aria-sort="ascending"]`, "Email"); s == "" {
			t.Fatal("no sorted header")
		}
		first := webtest.Read(t, ctx, "first row", chromedp.Text(css(`table.users tbody tr:first-child .email`)))
		if first != "ada.lovelace@example.test" {
			t.Errorf("first address A to Z: %q", first)
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-users-sorted")
		webtest.ScreenshotTheme(t, ctx, "admin-users-sorted-dark-phone", webtest.PhoneWidth, webtest.PhoneHeight, "dark")
		webtest.Do(t, ctx, "jump to page 3", chromedp.SetValue(css(`#jump`), "3"), chromedp.Click(css(`form.page-jump button`)))
		waitFor(t, ctx, "page=3")
		untilText(t, ctx, "count on page 3", `#users-count`, "Users 21–")
		webtest.Do(t, ctx, "filter: banned", chromedp.Navigate(e.URL+"/admin/users?status=banned"), chromedp.WaitVisible(css(`#f-status`)))
		untilText(t, ctx, "no banned users", `main`, "No users match")

		// A user created with an invitation; an address in use is refused at its field.
		webtest.Do(t, ctx, "open the form", chromedp.Navigate(e.URL+"/admin/users"), chromedp.Click(css(`a[href="/admin/users/new"]`)),
			chromedp.WaitVisible(css(`#n-email`)))
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-user-new")
		webtest.Do(t, ctx, "an address in use", chromedp.SendKeys(css(`#n-email`), "ADA.lovelace@example.test"),
			chromedp.Click(css(`form[action="/admin/users"] button[type=submit]`)))
		untilText(t, ctx, "the refusal", `#n-email-err`, "in use")
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "a new address", chromedp.SetValue(css(`#n-email`), "grace@example.test"), chromedp.SendKeys(css(`#n-username`), "grace_h"),
			chromedp.Click(css(`form[action="/admin/users"] button[type=submit]`)))
		untilText(t, ctx, "flash after creating", `.notice`, "invitation was mailed")
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, "grace@example.test")
		if err != nil || len(msgs) != 1 || msgs[0].Kind != "invitation" {
			t.Fatalf("mail to the new user: %v %v", msgs, err)
		}
		untilText(t, ctx, "the new user's panel", `#signin`, "Not verified")
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-user-signin")

		// Ada's page: a verification link, then the address marked verified.
		exec(`UPDATE platform_accounts SET email_verified = FALSE WHERE user_id = $1`, ada.ID)
		webtest.Do(t, ctx, "open ada", chromedp.Navigate(e.URL+"/admin/users/"+ada.ID), chromedp.WaitVisible(css(`#signin`)))
		webtest.Do(t, ctx, "mail a verification link", chromedp.Click(css(`form[action$="/email/verification"] button`)))
		untilText(t, ctx, "flash after the link", `.notice`, "verification link was mailed")
		if msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, ada.Email); len(msgs) == 0 || msgs[0].Kind != "email_verify" {
			t.Fatalf("no verification mail: %v", msgs)
		}
		webtest.Do(t, ctx, "mark verified", chromedp.Click(css(`form[action$="/email/verified"] button`)))
		untilText(t, ctx, "verified badge", `#signin`, "Verified")

		// The profile: a bad username refused at its field, then a rename and German.
		webtest.Do(t, ctx, "a bad username", chromedp.SetValue(css(`#m-username`), "a b"), chromedp.Click(css(`form[action$="/profile"] button`)))
		untilText(t, ctx, "the refusal", `#m-username-err`, "3 to 30")
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "rename", chromedp.SetValue(css(`#m-username`), "countess_ada"), chromedp.SetValue(css(`#m-locale`), "de"),
			chromedp.Click(css(`form[action$="/profile"] button`)))
		untilText(t, ctx, "flash after the rename", `.notice`, "changes were saved")
		if got := e.Call(t, "GET", "/v1/users/"+ada.ID, e.SystemKey, nil, 200).JSON()["data"].(map[string]any); got["username"] != "countess_ada" || got["preferred_locale"] != "de" {
			t.Fatalf("after the rename: %v", got)
		}

		// A password set (confirmed), then a reset link.
		webtest.Do(t, ctx, "set a password", chromedp.SendKeys(css(`#m-password`), "brand-new-secret"), chromedp.Click(css(`form[action$="/password"] button`)))
		wantAsked(t, asked, "Set this password and sign the user out everywhere?")
		untilText(t, ctx, "flash after the password", `.notice`, "password was set")
		webtest.Do(t, ctx, "mail a reset link", chromedp.Click(css(`form[action$="/password-reset"] button`)))
		untilText(t, ctx, "flash after the reset", `.notice`, "link was mailed")
		webtest.Screenshots(t, ctx, "admin-user-manage")
		webtest.ScreenshotTheme(t, ctx, "admin-user-manage-dark", webtest.DesktopWidth, webtest.DesktopHeight, "dark")

		// The same pages in German.
		exec(`UPDATE users SET preferred_locale = 'de' WHERE id = $1`, op.ID)
		for _, page := range []string{"/admin/users?sort_field=username&sort_direction=asc", "/admin/users/new", "/admin/users/" + ada.ID} {
			webtest.Axe(t, ctx, e.URL+page)
		}
		if h := webtest.Read(t, ctx, "german panel", chromedp.Text(css(`#signin-title`))); h != "Anmeldung und E-Mail" {
			t.Errorf("German panel title %q", h)
		}
		webtest.Screenshots(t, ctx, "admin-user-manage-de")
		webtest.Do(t, ctx, "German list", chromedp.Navigate(e.URL+"/admin/users?limit=10"), chromedp.WaitVisible(css(`#users-count`)))
		if c := webtest.Read(t, ctx, "German count", chromedp.Text(css(`#users-count`))); !strings.HasPrefix(c, "Benutzer 1–10 von 2") {
			t.Errorf("German count %q", c)
		}
		webtest.Screenshots(t, ctx, "admin-users-de")
	})
}
