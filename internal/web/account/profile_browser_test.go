package account_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
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
