package account_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/mail/mailtest"
	"hmid/internal/upstream/upstreamtest"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleProfile drives a real headless Chromium through the
// profile and linked-accounts pages: sign in, see / lead to /account, rename
// with a taken name (the field error) and then a free one (the flash),
// connect GitHub from /account/linked through the provider and back, ask for
// an email change, and sign up with Discord to be offered an email login.
// With HMID_SCREENSHOTS=<dir> it saves the pages at desktop and phone width.
func TestBrowserConsoleProfile(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := webtest.Chromium(t)
		github := upstreamtest.NewGitHub(t)
		discord := upstreamtest.NewDiscord(t)
		env := upstreamtest.Merge(github.Env("github"), discord.Env("discord"))
		e := apptest.New(t, eng, func(c *config.Config) { c.LoginEnv = func(k string) string { return env[k] } })
		u := e.NewUser(t, apptest.UserSpec{Username: "ada_l", Password: pw})
		e.NewUser(t, apptest.UserSpec{Username: "grace_h"})
		github.SetPerson(upstreamtest.Person{Subject: "7007", Username: "ada-on-github", Email: "ada@github.example", EmailVerified: true})

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		// shoot saves the page at path (the one shown when path is "") at
		// desktop and phone width.
		shoot := func(name, path, wait string) {
			t.Helper()
			if path != "" {
				webtest.Do(t, ctx, "open "+path, chromedp.Navigate(e.URL+path), chromedp.WaitVisible(css(wait)))
			}
			webtest.Screenshots(t, ctx, name)
		}

		webtest.Do(t, ctx, "sign in",
			chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(e.URL+"/login"),
			chromedp.WaitVisible(css(`#email`)),
			chromedp.SendKeys(css(`#email`), u.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)),
			chromedp.WaitVisible(css(`#username`)))
		if loc := webtest.Read(t, ctx, "location after sign-in", chromedp.Location()); loc != e.URL+"/account" {
			t.Fatalf("after sign-in at %s, want /account (/ leads there)", loc)
		}

		// A taken name: the field says so, and nothing changed.
		webtest.Do(t, ctx, "try a taken name",
			chromedp.Clear(css(`#username`)),
			chromedp.SendKeys(css(`#username`), "GRACE_H"),
			chromedp.Click(css(`form[action="/account/profile"] button[type=submit]`)),
			chromedp.WaitVisible(css(`#username-error`)))
		if msg := webtest.Read(t, ctx, "field error", chromedp.Text(css(`#username-error`))); !strings.Contains(msg, "This username is taken") {
			t.Fatalf("field error %q", msg)
		}
		shoot("profile-error", "", "")

		// A free name and privacy mode: saved, with the flash after the redirect.
		webtest.Submit(t, ctx, "rename",
			chromedp.Clear(css(`#username`)),
			chromedp.SendKeys(css(`#username`), "ada_lovelace"),
			chromedp.Click(css(`#privacy_mode`)),
			chromedp.Click(css(`form[action="/account/profile"] button[type=submit]`)),
			chromedp.WaitVisible(css(`.notice`)))
		if msg := webtest.Read(t, ctx, "flash", chromedp.Text(css(`.notice`))); msg != "Your profile was saved." {
			t.Fatalf("flash %q", msg)
		}
		if who := webtest.Read(t, ctx, "top bar", chromedp.Text(css(`.whoami`))); who != "ada_lovelace" {
			t.Errorf("top bar names %q", who)
		}
		d := e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if d["username"] != "ada_lovelace" || d["privacy_mode"] != true {
			t.Fatalf("user after the save: %v", d)
		}
		shoot("profile-saved", "", "")

		// Connect GitHub: off to the provider (the fake consents at once),
		// back to a page whose Continue leads to /account/linked.
		webtest.Do(t, ctx, "open linked accounts", chromedp.Navigate(e.URL+"/account/linked"), chromedp.WaitVisible(css(`.providers.connect`)))
		webtest.Do(t, ctx, "connect GitHub",
			chromedp.Click(css(`form[action="/login/github"] button`)),
			chromedp.WaitVisible(css(`main.card .links a[href="/account/linked"]`)))
		if msg := webtest.Read(t, ctx, "connected page", chromedp.Text(css(`main.card`))); !strings.Contains(msg, "GitHub account is now connected") {
			t.Fatalf("connected page: %q", msg)
		}
		webtest.Do(t, ctx, "continue", chromedp.Click(css(`main.card .links a`)), chromedp.WaitVisible(css(`table.list`)))
		if list := webtest.Read(t, ctx, "linked accounts", chromedp.Text(css(`table.list`))); !strings.Contains(list, "GitHub") || !strings.Contains(list, "ada-on-github") {
			t.Fatalf("linked accounts after connecting: %q", list)
		}
		shoot("linked-github", "/account/linked", "table.list")

		// An email change waits for the mailed link; the page shows it pending.
		webtest.Do(t, ctx, "request an email change",
			chromedp.Navigate(e.URL+"/account"),
			chromedp.WaitVisible(css(`#new-email`)),
			chromedp.SendKeys(css(`#new-email`), "ada@new.example"),
			chromedp.Click(css(`form[action="/account/email"] button[type=submit]`)),
			chromedp.WaitVisible(css(`.pending`)))
		if msg := webtest.Read(t, ctx, "pending change", chromedp.Text(css(`.pending`))); !strings.Contains(msg, "Waiting for confirmation: ada@new.example") {
			t.Fatalf("pending change: %q", msg)
		}
		shoot("profile-email-pending", "/account", ".pending")

		// Someone who signs up with Discord lands on /account too, which
		// offers to add an email and password login.
		webtest.Do(t, ctx, "log out", chromedp.Click(css(`.topbar-logout button`)), chromedp.WaitVisible(css(`main.card`)))
		webtest.Do(t, ctx, "sign in with Discord",
			chromedp.Navigate(e.URL+"/login"),
			chromedp.Click(css(`a[href^="/login/discord"]`)),
			chromedp.WaitVisible(css(`#link-email`)))
		if loc := webtest.Read(t, ctx, "location after Discord", chromedp.Location()); loc != e.URL+"/account" {
			t.Fatalf("after the Discord sign-in at %s, want /account", loc)
		}
		shoot("profile-provider-user", "/account", "#link-email")
	})
}

// TestBrowserAccountState: a user whose address is not verified sees on
// /account a notice with a button that mails a new link, and the state of
// each address; a user whose account is scheduled for deletion sees that,
// with the button that keeps the account. Axe passes in the light and the
// dark theme, in English and in German; with HMID_SCREENSHOTS set the
// notices are saved at desktop and phone width, light and dark.
func TestBrowserAccountState(t *testing.T) {
	t.Parallel()
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
