package signin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/upstream/upstreamtest"
	"hmid/internal/web/webtest"
)

// TestPagesAccessible opens the pages outside the consoles' own areas in a
// real Chromium and checks each with axe-core in the light and the dark
// theme: the login page with provider buttons, registration, password
// reset, the error pages (a 404 and a bad authorization request) and the
// consent page. The account console has a test of its own (TestBrowserConsoleA11y).
// With HMID_SCREENSHOTS set it saves the README's pictures of the login page.
func TestPagesAccessible(t *testing.T) {
	ctx := webtest.Chromium(t)
	discord, github, twitch := upstreamtest.NewDiscord(t), upstreamtest.NewGitHub(t), upstreamtest.NewTwitch(t)
	env := upstreamtest.Merge(discord.Env("discord"), github.Env("github"), twitch.Env("twitch"))
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)},
		func(c *config.Config) { c.LoginEnv = func(k string) string { return env[k] } })

	webtest.Axe(t, ctx, e.URL+"/login")
	if buttons := webtest.Read(t, ctx, "provider buttons", chromedp.Text(chromedp.CSS(`.providers`))); !strings.Contains(buttons, "Discord") || !strings.Contains(buttons, "GitHub") {
		t.Fatalf("the login page shows no provider buttons: %q", buttons)
	}
	webtest.Screenshots(t, ctx, "login")
	webtest.Axe(t, ctx, e.URL+"/register")
	webtest.Axe(t, ctx, e.URL+"/forgot-password")

	// The error pages, for what a browser can run into.
	webtest.Axe(t, ctx, e.URL+"/no/such/page")
	if h1 := webtest.Read(t, ctx, "404 title", chromedp.Text(chromedp.CSS(`h1`))); h1 != "Page not found" {
		t.Errorf("404 page title %q", h1)
	}
	bad := url.Values{"response_type": {"code"}, "client_id": {"no-such-client"}, "redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}}
	webtest.Axe(t, ctx, e.URL+"/v1/oauth/authorize?"+bad.Encode())
	if text := webtest.Read(t, ctx, "authorize error", chromedp.Text(chromedp.CSS(`main`))); !strings.Contains(text, "unknown client_id") {
		t.Errorf("authorize error page: %q", text)
	}

	// The consent page of a third-party app, signed in.
	u := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada@example.test", Password: pw})
	webtest.Login(t, ctx, e.URL, u.Email, pw)
	owner := e.NewUser(t, apptest.UserSpec{})
	r := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
		"name": "Photo Printer", "redirect_uris": []string{"https://printer.example/cb"}}, http.StatusCreated)
	clientID := r.JSON()["data"].(map[string]any)["id"].(string)
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {"https://printer.example/cb"},
		"scope": {"openid profile email"}, "state": {"s"}}
	webtest.Do(t, ctx, "open the consent page", chromedp.Navigate(e.URL+"/v1/oauth/authorize?"+q.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
	webtest.Axe(t, ctx, "")
}
