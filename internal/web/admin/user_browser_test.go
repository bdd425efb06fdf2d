package admin_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/web/webtest"
)

// acceptDialogs answers every confirmation dialog of the tab with OK and
// sends its message to the channel it returns, so a test can check what a
// data-confirm form asked.
func acceptDialogs(ctx context.Context) <-chan string {
	asked := make(chan string, 16)
	go func() {
		for ev, err := range chromedp.Events(ctx, cdppage.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			asked <- ev.Message
			go func() {
				_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true})
			}()
		}
	}()
	return asked
}

// wantAsked checks that the last form sent asked want first.
func wantAsked(t *testing.T, asked <-chan string, want string) {
	t.Helper()
	select {
	case msg := <-asked:
		if msg != want {
			t.Errorf("confirmation %q, want %q", msg, want)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("no confirmation %q was asked", want)
	}
}

// TestBrowserAdminUser runs an operator's tasks on one user's page in a
// real headless Chromium (issue 14): find the user (the page opened by its
// address), ban them, see the user's session refused by the API, lift the
// ban; then reset the user's two-factor authentication after they lost
// their phone, with the mail in the outbox; then read the user's audit log.
// Each page passes axe-core; with HMID_SCREENSHOTS set the user's page and
// the audit log are saved at desktop and phone width (the user's page
// while the ban is on).
func TestBrowserAdminUser(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := webtest.Chromium(t)
		asked := acceptDialogs(ctx)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := e.Server.DB.ExecContext(context.Background(), q, args...); err != nil {
				t.Fatal(err)
			}
		}
		// The operator: a role with the permissions of the page's actions.
		role := "role_support_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
		now := db.TS(e.Clock.Now())
		exec(`INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ($1, 'Support', 'Helps users', FALSE, FALSE, $2, $2)`, role, now)
		for _, perm := range []string{"users:read", "users:write", "users:ban", "users:delete", "two_factor:manage", "audit:read"} {
			res, act, _ := strings.Cut(perm, ":")
			exec(`INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`, role, access.PermissionID(res, act), now)
		}
		op := e.NewUser(t, apptest.UserSpec{Username: "support_sam", Email: "sam@example.test", Password: pw, Roles: []string{"role_user", role}})

		// The user: two-factor authentication on, signed in on a phone too.
		u := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada@example.test", Password: pw, Roles: []string{"role_user", "role_moderator"}})
		exec(`UPDATE users SET name = 'Ada Lovelace', last_login_at = $2 WHERE id = $1`, u.ID, db.TS(e.Clock.Now().Add(-3*time.Hour)))
		exec(`UPDATE sessions SET browser_name = 'Firefox', os_name = 'Android', device_type = 'mobile', ip_address = '203.0.113.24' WHERE id = $1`, u.SessionID)
		secret := e.Call(t, "POST", "/v1/users/me/2fa/setup", u.Token, nil, http.StatusOK).JSON()["secret"].(string)
		code, err := totp.GenerateCodeCustom(secret, e.Clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			t.Fatal(err)
		}
		e.Call(t, "POST", "/v1/users/me/2fa/verify", u.Token, map[string]any{"code": code}, http.StatusOK)

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		text := func(what, sel string) string {
			t.Helper()
			return webtest.Read(t, ctx, what, chromedp.Text(css(sel)))
		}
		path := e.URL + "/admin/users/" + u.ID
		form := func(action string) string { return `form[action="/admin/users/` + u.ID + action + `"]` }

		webtest.Login(t, ctx, e.URL, op.Email, pw)
		// Find the user: their page, by address.
		webtest.Do(t, ctx, "open the user's page", chromedp.Navigate(path), chromedp.WaitVisible(css(`#ban-title`)))
		if h1 := text("title", `h1`); h1 != "ada_lovelace" {
			t.Fatalf("title %q", h1)
		}
		if st := text("two-factor state", `#two-factor`); !strings.Contains(st, "10 backup codes left") {
			t.Fatalf("two-factor panel: %q", st)
		}
		webtest.Axe(t, ctx, "")
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)

		// Ban for a day, with a reason.
		webtest.Do(t, ctx, "ban the user",
			chromedp.SendKeys(css(`#ban-reason`), "Spam in every channel"),
			chromedp.SetValue(css(`#ban-duration`), "86400"),
			chromedp.Click(css(form("/ban")+` input[name=confirm]`)),
			chromedp.Click(css(form("/ban")+` button[type=submit]`)),
			chromedp.WaitVisible(css(form("/ban/lift"))))
		wantAsked(t, asked, "Ban this user?")
		if n := text("flash", `.notice`); !strings.Contains(n, "The user is banned") {
			t.Fatalf("flash after the ban: %q", n)
		}
		if b := text("ban panel", `#ban`); !strings.Contains(b, "Banned since") || !strings.Contains(b, "Spam in every channel") {
			t.Fatalf("ban panel: %q", b)
		}
		// The user's session is refused by the API now.
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-user")

		webtest.Do(t, ctx, "lift the ban", chromedp.Click(css(form("/ban/lift")+` button`)), chromedp.WaitVisible(css(`#ban-reason`)))
		if n := text("flash", `.notice`); !strings.Contains(n, "The ban was lifted") {
			t.Fatalf("flash after lifting: %q", n)
		}
		if e.Call(t, "GET", "/v1/users/"+u.ID+"/ban", e.SystemKey, nil, http.StatusOK).JSON()["is_banned"] != false {
			t.Fatal("the ban was not lifted")
		}
		fresh, _ := e.NewSession(t, u.ID)
		e.Call(t, "GET", "/v1/users/me", fresh, nil, http.StatusOK)
		if h := text("ban history", `#ban table`); !strings.Contains(h, "Lifted") || !strings.Contains(h, "support_sam") {
			t.Fatalf("ban history: %q", h)
		}

		// Reset two-factor authentication: the user lost their phone.
		webtest.Do(t, ctx, "reset two-factor authentication",
			chromedp.SendKeys(css(`#reset-reason`), "Lost phone; identity checked by video call"),
			chromedp.Click(css(form("/2fa/reset")+` input[name=confirm]`)),
			chromedp.Click(css(form("/2fa/reset")+` button[type=submit]`)),
			chromedp.WaitNotPresent(css(`#reset-reason`)))
		wantAsked(t, asked, "Turn off this user's two-factor authentication?")
		if n := text("flash", `.notice`); !strings.Contains(n, "Two-factor authentication was reset") {
			t.Fatalf("flash after the reset: %q", n)
		}
		if st := e.Call(t, "GET", "/v1/users/me/2fa/status", fresh, nil, http.StatusOK).JSON(); st["enabled"] != false {
			t.Fatalf("two-factor status after the reset: %v", st)
		}
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if err != nil || len(msgs) == 0 || msgs[0].Kind != mail.KindTwoFactorReset {
			t.Fatalf("outbox after the reset: %v %v", msgs, err)
		}
		webtest.Axe(t, ctx, "")

		// The user's audit log, from the page's link.
		webtest.Do(t, ctx, "open the audit log", chromedp.Click(css(`#audit a`)), chromedp.WaitVisible(css(`table.events`)))
		log := text("audit log", `table.events`)
		for _, want := range []string{"Account suspended", "Two-factor authentication turned off", "by support_sam", "the backend dashboard"} {
			if !strings.Contains(log, want) {
				t.Errorf("audit log lacks %q: %q", want, log)
			}
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-user-audit")
	})
}
