package account_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/upstream/upstreamtest"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleA11y opens every page of the account console in a real
// Chromium, signed in as a person with something to show on each (four
// other devices, a connected app, an OAuth client and an API key of their
// own, a history of events with a report, an export, a pending email
// change, a linked GitHub account and a streaming integration), and checks
// each with axe-core in the light and the dark theme: the pages as they
// open, and the states a form post leads to — the two-factor setup with its
// QR code, a wrong code, the backup codes, a client's secret shown once,
// field errors and the account scheduled for deletion. No page may be wider
// than a phone. With HMID_SCREENSHOTS set it saves each page at desktop and
// phone width (the README's pictures).
func TestBrowserConsoleA11y(t *testing.T) {
	t.Parallel()
	ctx := webtest.Chromium(t)
	github := upstreamtest.NewGitHub(t)
	github.SetPerson(upstreamtest.Person{Subject: "7007", Username: "ada-codes", Email: "ada@github.example", EmailVerified: true})
	env := github.Env("github")
	stream := activityFakePlatform(t)
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, func(c *config.Config) {
		c.LoginEnv = func(k string) string { return env[k] }
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: stream.URL + "/oauth2/authorize",
			TokenURL: stream.URL + "/oauth2/token", APIURL: stream.URL + "/helix"}
	})
	u := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada@example.test", Password: pw,
		Roles: []string{"role_user", "role_developer"}})
	fillAccount(t, e, u)

	webtest.AcceptDialogs(ctx) // the confirmations of forms with data-confirm
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// page checks the page the browser shows now, also that nothing on it
	// is wider than a phone, and saves its pictures as name; want is a text
	// the page must show.
	page := func(name, want string) {
		t.Helper()
		webtest.Axe(t, ctx, "")
		if text := webtest.Read(t, ctx, name, chromedp.Text(css(`main`))); !strings.Contains(text, want) {
			t.Errorf("%s: the page lacks %q:\n%s", name, want, text)
		}
		webtest.Do(t, ctx, "phone width", chromedp.EmulateViewport(webtest.PhoneWidth, webtest.PhoneHeight, chromedp.EmulateMobile))
		if w := webtest.Read(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > webtest.PhoneWidth {
			t.Errorf("%s: %d pixels wide on a phone %d pixels wide", name, w, webtest.PhoneWidth)
		}
		webtest.Do(t, ctx, "window width", chromedp.EmulateReset())
		webtest.Screenshots(t, ctx, name)
	}
	open := func(path, waitFor string) {
		t.Helper()
		webtest.Do(t, ctx, "open "+path, chromedp.Navigate(e.URL+path), chromedp.WaitVisible(css(waitFor)))
	}
	submit := func(what, form, waitFor string) {
		t.Helper()
		webtest.Do(t, ctx, what, chromedp.Click(css(`form[action="`+form+`"] button[type=submit]`)), chromedp.WaitVisible(css(waitFor)))
	}

	webtest.Login(t, ctx, e.URL, u.Email, pw)

	// Profile, with the email change waiting for its link.
	open("/account", `.pending`)
	page("account-profile", "Waiting for confirmation: ada@newmail.example")
	webtest.Do(t, ctx, "a name that breaks the rules", chromedp.SetValue(css(`#username`), "a"))
	submit("save the bad name", "/account/profile", `#username-error`)
	webtest.Axe(t, ctx, "")

	// Sessions: this browser and four other devices.
	open("/account/sessions", `table.list`)
	page("account-sessions", "Firefox")

	// Linked accounts: connect GitHub through the provider and back.
	open("/account/linked", `.providers.connect`)
	webtest.Do(t, ctx, "connect GitHub", chromedp.Click(css(`form[action="/login/github"] button`)),
		chromedp.WaitVisible(css(`main.card .links a[href="/account/linked"]`)))
	webtest.Axe(t, ctx, "")
	open("/account/linked", `table.list`)
	page("account-linked", "ada-codes")

	// Connected apps.
	open("/account/apps", `ul.scopes`)
	page("account-apps", "Harbour Planner")

	// Activity: the events, one reported, with a report form open.
	open("/account/activity", `table.events`)
	page("account-activity", "Your reports")
	webtest.Do(t, ctx, "open a report form", chromedp.Click(css(`details.report summary`)), chromedp.WaitVisible(css(`details.report[open] select`)))
	webtest.Axe(t, ctx, "")

	// Developer: the list, a new client with its secret, the key's page.
	open("/account/developer", `#keys-h`)
	page("account-developer", "Backup script")
	open("/account/developer/clients/new", `#redirect_uris`)
	webtest.Axe(t, ctx, "")
	webtest.Do(t, ctx, "fill in the client", chromedp.SendKeys(css(`#name`), "Lock Keeper"),
		chromedp.SendKeys(css(`#redirect_uris`), "not a uri"))
	submit("register with a bad redirect URI", "/account/developer/clients", `#redirect_uris-error`)
	webtest.Axe(t, ctx, "")
	webtest.Do(t, ctx, "correct the redirect URI", chromedp.SetValue(css(`#redirect_uris`), "https://lockkeeper.example/callback"))
	submit("register", "/account/developer/clients", `#client-secret`)
	page("account-developer-secret", "hm_sec_")
	open("/account/developer/keys/new", `#expires`)
	webtest.Axe(t, ctx, "")
	open("/account/developer", `#keys-h`)
	webtest.Do(t, ctx, "open the key", chromedp.Click(css(`a[href^="/account/developer/keys/"]:not([href$="/new"])`)), chromedp.WaitVisible(css(`#key-h`)))
	webtest.Axe(t, ctx, "")

	// Integrations: connect the streaming account, then its statistics.
	open("/account/integrations", `#connect-title`)
	webtest.Axe(t, ctx, "")
	submit("connect the streaming account", "/account/integrations/connect", `.integration`)
	webtest.Do(t, ctx, "show statistics", chromedp.Click(css(`form[action$="/stats"] button`)), chromedp.WaitVisible(css(`.stats`)))
	page("account-integrations", "Live now")

	// Security: the two-factor setup with the QR code, then the backup codes.
	open("/account/security", `#tf-title`)
	page("account-security", "Change password")
	submit("start the two-factor setup", "/account/security/2fa/setup", `#totp-secret`)
	page("account-security-setup", "Scan")
	secret := strings.ReplaceAll(webtest.Read(t, ctx, "the key", chromedp.Text(css(`#totp-secret`))), " ", "")
	code, err := totp.GenerateCodeCustom(secret, e.Clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatalf("the key on the page %q: %v", secret, err)
	}
	wrong := string('0'+(code[0]-'0'+1)%10) + code[1:]
	webtest.Do(t, ctx, "enter a wrong code", chromedp.SendKeys(css(`#verify-code`), wrong))
	submit("verify the wrong code", "/account/security/2fa/verify", `#verify-error`)
	webtest.Axe(t, ctx, "")
	webtest.Do(t, ctx, "enter the code", chromedp.SendKeys(css(`#verify-code`), code))
	submit("verify the code", "/account/security/2fa/verify", `#backup-codes`)
	page("account-security-codes", "shown only this once")
	open("/account/security", `#disable-code`)
	webtest.Axe(t, ctx, "")

	// Your data: the export history, then the account scheduled for deletion.
	open("/account/data", `table.list`)
	page("account-data", "Download")
	webtest.Do(t, ctx, "ask for the deletion", chromedp.SendKeys(css(`#delete-password`), pw), chromedp.Click(css(`input[name=confirm]`)))
	submit("request deletion", "/account/data/deletion", `form[action="/account/data/deletion/cancel"]`)
	page("account-data-scheduled", "scheduled")
}

// fillAccount gives u something to show on every page of the console: three
// more signed-in devices besides the fixture's session, an app u consented to, an OAuth client and an API
// key of u's own, events from elsewhere with one reported, a data export and
// an email change waiting for its link.
func fillAccount(t *testing.T, e *apptest.Env, u apptest.User) {
	t.Helper()
	ctx := context.Background()
	now := e.Clock.Now()
	for i, s := range []struct {
		device, browser, os, ip string
		ago                     time.Duration
	}{
		{"mobile", "Firefox", "Android", "203.0.113.24", 2 * time.Hour},
		{"tablet", "Safari", "iOS", "198.51.100.7", 72 * time.Hour},
		{"desktop", "Chrome", "macOS", "192.0.2.14", 9 * 24 * time.Hour},
	} {
		if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO sessions (id, user_id, token_hash, ip_address, user_agent, device_type, browser_name, os_name, provider, auth_time, created_at, expires_at, last_activity_at)
			VALUES ($1, $2, $3, $4, '', $5, $6, $7, 'email', $8, $8, $9, $8)`,
			fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), u.ID, fmt.Sprintf("hash-%d", i), s.ip, s.device, s.browser, s.os,
			db.TS(now.Add(-s.ago)), db.TS(now.AddDate(0, 0, 30))); err != nil {
			t.Fatal(err)
		}
	}
	// The fixture's own session reads as another laptop's.
	if _, err := e.Server.DB.ExecContext(ctx, `UPDATE sessions SET browser_name = 'Edge', os_name = 'Windows', ip_address = '192.0.2.81' WHERE id = $1`, u.SessionID); err != nil {
		t.Fatal(err)
	}

	consentedClient(t, e, u, "Harbour Planner")
	e.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Tide Tables", "description": "Tide times for the harbour",
		"redirect_uris": []string{"https://tides.example/callback"}}, http.StatusCreated)
	e.Call(t, "POST", "/v1/api-keys", u.Token, map[string]any{"name": "Backup script", "scopes": []string{"two_factor:read"},
		"expires_at": now.AddDate(0, 3, 0).Format(time.RFC3339)}, http.StatusCreated)

	safari := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	var reported string
	rec := webtest.Recorder(t, e, 11*time.Minute)
	for _, ev := range []audit.Event{
		{UserID: u.ID, EventType: audit.LoginFailed, ResourceType: "session", IPAddress: "203.0.113.77", UserAgent: safari,
			Failed: true, ErrorMessage: "wrong password", Description: "Failed login with email"},
		{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "203.0.113.77", UserAgent: safari,
			Description: "Logged in with email and password"},
	} {
		reported = rec(ev)
	}
	e.Call(t, "POST", "/v1/users/me/audit/"+reported+"/report", u.Token, map[string]any{"reason": "unknown_device",
		"description": "I own no iPhone."}, http.StatusCreated)

	e.Call(t, "GET", "/v1/user/export", u.Token, nil, http.StatusOK)
	e.Call(t, "POST", "/v1/users/"+u.ID+"/email/request-change", u.Token, map[string]any{"email": "ada@newmail.example"}, http.StatusOK)
}
