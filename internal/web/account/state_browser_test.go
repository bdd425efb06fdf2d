package account_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/mail/mailtest"
	"hmid/internal/web/webtest"
)

// TestBrowserAccountState: a user whose address is not verified sees on
// /account a notice with a button that mails a new link, and the state of
// each address; a user whose account is scheduled for deletion sees that,
// with the button that keeps the account. Axe passes in the light and the
// dark theme, in English and in German; with HMID_SCREENSHOTS set the
// notices are saved at desktop and phone width, light and dark.
func TestBrowserAccountState(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "new_nina", Email: "nina@example.test", Password: pw})
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := e.Server.DB.ExecContext(context.Background(), q, args...); err != nil {
				t.Fatal(err)
			}
		}
		exec(`UPDATE platform_accounts SET email_verified = FALSE WHERE user_id = $1`, u.ID)
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		ctx := webtest.Chromium(t)
		webtest.Login(t, ctx, e.URL, u.Email, pw)
		webtest.Do(t, ctx, "open /account", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`#verify-notice`)))
		if b := webtest.Read(t, ctx, "badges", chromedp.Text(css(`section[aria-labelledby="profile-email"]`))); !strings.Contains(b, "Not verified") {
			t.Errorf("the address's state: %q", b)
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "account-verify-notice")
		webtest.ScreenshotTheme(t, ctx, "account-verify-notice-dark-phone", webtest.PhoneWidth, webtest.PhoneHeight, "dark")
		webtest.Do(t, ctx, "send a new link", chromedp.Click(css(`form[action="/account/email/verification"] button`)))
		untilText(t, ctx, `main`, "A new link was sent")
		if msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, u.Email); len(msgs) == 0 || msgs[0].Kind != "email_verify" {
			t.Fatalf("no verification mail: %v", msgs)
		}

		// Verified: the notice is gone, the badge says so.
		exec(`UPDATE platform_accounts SET email_verified = TRUE WHERE user_id = $1`, u.ID)
		webtest.Do(t, ctx, "reload", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`#profile-email`)))
		if n := webtest.Read(t, ctx, "notices", chromedp.Evaluate[int](`document.querySelectorAll("#verify-notice").length`)); n != 0 {
			t.Error("the notice shows for a verified address")
		}

		// Scheduled for deletion: the notice and the button that keeps the account.
		exec(`UPDATE users SET scheduled_deletion_at = $1 WHERE id = $2`, e.Clock.Now().Add(72*3600e9).UnixMicro(), u.ID)
		exec(`UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		webtest.Do(t, ctx, "reload", chromedp.Navigate(e.URL+"/account"), chromedp.WaitVisible(css(`#deletion-notice`)))
		if h := webtest.Read(t, ctx, "title", chromedp.Text(css(`#deletion-notice`))); h != "Ihr Konto ist zur Löschung vorgemerkt" {
			t.Errorf("German notice %q", h)
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "account-deletion-notice-de")
		webtest.Do(t, ctx, "keep the account", chromedp.Click(css(`section[aria-labelledby="deletion-notice"] form button`)))
		untilText(t, ctx, `main`, "abgebrochen")
		var sched *int64
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT scheduled_deletion_at FROM users WHERE id = $1`, u.ID).Scan(&sched); err != nil || sched != nil {
			t.Fatalf("the deletion is still scheduled: %v %v", sched, err)
		}
	})
}

// untilText polls the text of sel until it contains want.
func untilText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := `(() => { const n = document.querySelector(` + strconv.Quote(sel) + `); return n ? n.innerText : ""; })()`
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := webtest.Read(t, ctx, "text of "+sel, chromedp.Evaluate[string](js))
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, want it to contain %q", sel, got, want)
		}
	}
}
