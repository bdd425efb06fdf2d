package account_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleSecurity turns two-factor authentication on and off in
// a real headless Chromium, as a person would: the role's requirement is
// shown at the top; the setup shows the QR code and the key, which the test
// reads off the page to compute the code it types; the backup codes are
// shown once and downloaded as a text file; a backup code turns it off
// after the confirmation dialog. With HMID_SCREENSHOTS set, the page before
// the setup, during it and with the backup codes is saved at desktop and
// phone width.
func TestBrowserConsoleSecurity(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		if _, err := e.Server.DB.ExecContext(t.Context(), `UPDATE roles SET requires_two_factor = TRUE WHERE id = 'role_moderator'`); err != nil {
			t.Fatal(err)
		}
		u := e.NewUser(t, apptest.UserSpec{Password: pw, Roles: []string{"role_user", "role_moderator"}})

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		text := func(what, sel string) string {
			t.Helper()
			return webtest.Read(t, ctx, what, chromedp.Text(css(sel)))
		}
		check := func(what, js string) {
			t.Helper()
			if !webtest.Read(t, ctx, what, chromedp.Evaluate[bool](js)) {
				t.Fatalf("browser, %s: %s is false", what, js)
			}
		}

		webtest.Do(t, ctx, "sign in on the way to the page",
			chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(e.URL+"/account/security"),
			chromedp.WaitVisible(css(`#email`)),
			chromedp.SendKeys(css(`#email`), u.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)),
			chromedp.WaitVisible(css(`#tf-title`)))
		if c := text("the requirement", `.callout`); !strings.Contains(c, "Your role Moderator requires it.") {
			t.Fatalf("requirement call-out: %q", c)
		}
		webtest.Screenshots(t, ctx, "security-required")

		webtest.Do(t, ctx, "start the setup",
			chromedp.Click(css(`section[aria-labelledby="tf-title"] form[action="/account/security/2fa/setup"] button`)),
			chromedp.WaitVisible(css(`#totp-secret`)))
		check("the QR image is drawn (the CSP allows data: images)", `(() => { const i = document.querySelector("img.qr"); return i.complete && i.naturalWidth === 256; })()`)
		check("the copy buttons are shown by the script", `!document.querySelector('[data-copy="#totp-secret-raw"]').hidden`)
		if c := text("the call-out during the setup", `.callout`); !strings.Contains(c, "setting it up below") {
			t.Fatalf("call-out during the setup: %q", c)
		}
		webtest.Screenshots(t, ctx, "security-setup")

		secret := strings.ReplaceAll(text("the key", `#totp-secret`), " ", "")
		code, err := totp.GenerateCodeCustom(secret, e.Clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			t.Fatalf("the key on the page %q: %v", secret, err)
		}
		webtest.Do(t, ctx, "enter the code",
			chromedp.SendKeys(css(`#verify-code`), code),
			chromedp.Click(css(`form[action="/account/security/2fa/verify"] button`)),
			chromedp.WaitVisible(css(`#backup-codes`)))
		codes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#backup-codes code")].map(c => c.textContent)`))
		if err != nil || len(codes) != 10 {
			t.Fatalf("backup codes %v: %v", codes, err)
		}
		if n := text("the flash", `.notice`); !strings.Contains(n, "Two-factor authentication is on.") {
			t.Fatalf("flash %q", n)
		}
		if strings.Contains(text("the page", `main`), "is required for your account") {
			t.Fatal("the call-out stays after the requirement is met")
		}
		webtest.Screenshots(t, ctx, "security-codes")

		// The download link saves the codes as a text file, from this page.
		downloads := t.TempDir()
		begin := chromedp.Events(ctx, cdpbrowser.DownloadWillBegin)
		progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
		webtest.Do(t, ctx, "download the codes", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			events := true
			_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: &events})
			return err
		}), chromedp.Click(css(`#codes-download`)))
		for ev, err := range begin {
			if err != nil {
				t.Fatal(err)
			}
			if ev.SuggestedFilename != "hmid-backup-codes.txt" {
				t.Errorf("download name %q", ev.SuggestedFilename)
			}
			break
		}
		var file string
		for ev, err := range progress {
			if err != nil {
				t.Fatal(err)
			}
			if ev.State == cdpbrowser.DownloadProgressStateCompleted {
				file = filepath.Join(downloads, ev.GUID)
				break
			}
			if ev.State == cdpbrowser.DownloadProgressStateCanceled {
				t.Fatal("the download was canceled")
			}
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range codes {
			if !strings.Contains(string(raw), c+"\n") {
				t.Fatalf("downloaded file lacks %s:\n%s", c, raw)
			}
		}
		if !strings.Contains(string(raw), u.Username) {
			t.Errorf("downloaded file does not name the account:\n%s", raw)
		}

		// Shown once: the page shows none of them again.
		webtest.Do(t, ctx, "continue", chromedp.Click(css(`.done-link a`)), chromedp.WaitVisible(css(`#disable-code`)))
		if body := text("the page after the codes", `main`); strings.Contains(body, codes[0]) || strings.Contains(body, secret) {
			t.Fatal("a secret shows again")
		}

		// Turning it off asks for confirmation first.
		dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
		asked := make(chan string, 1)
		go func() {
			for ev, err := range dialogs {
				if err != nil {
					return
				}
				asked <- ev.Message
				go func() {
					_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true})
				}()
				return
			}
		}()
		webtest.Submit(t, ctx, "turn it off with a backup code",
			chromedp.SendKeys(css(`#disable-code`), codes[3]),
			chromedp.Click(css(`input[name=confirm]`)),
			chromedp.Click(css(`form[action="/account/security/2fa/disable"] button`)),
			chromedp.WaitVisible(css(`.notice`)))
		select {
		case msg := <-asked:
			if msg != "Turn off two-factor authentication?" {
				t.Errorf("confirmation %q", msg)
			}
		default:
			t.Error("no confirmation was asked")
		}
		if n := text("the flash", `.notice`); !strings.Contains(n, "Two-factor authentication is off.") {
			t.Fatalf("flash %q", n)
		}
		st := e.Call(t, "GET", "/v1/users/me/2fa/status", u.Token, nil, http.StatusOK).JSON()
		if st["enabled"] != false {
			t.Fatalf("status after turning it off: %v", st)
		}
	})
}

// TestBrowserConsoleSessions does the sessions page's main action in a real
// Chromium: a person signed in on a laptop sees their phone's session in
// the list, revokes it, and the phone's token is refused by the API from
// then on while the others still work; "Sign out everywhere else" asks
// first and ends every session but the browser's own.
func TestBrowserConsoleSessions(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		phoneToken, phoneID := e.NewSession(t, u.ID)
		if _, err := e.Server.DB.ExecContext(t.Context(), `UPDATE sessions SET device_type = 'mobile', browser_name = 'Firefox', os_name = 'Android', ip_address = '203.0.113.24' WHERE id = $1`, phoneID); err != nil {
			t.Fatal(err)
		}
		asked := webtest.AcceptDialogs(ctx) // the confirmation of "Sign out everywhere else"
		me := func(tok string) int {
			t.Helper()
			return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users/me", Token: tok}).Status
		}
		if s := me(phoneToken); s != http.StatusOK {
			t.Fatalf("the phone's token before: %d", s)
		}

		webtest.Login(t, ctx, e.URL, u.Email, pw)
		revoke := `form[action="/account/sessions/` + phoneID + `/revoke"] button`
		webtest.Do(t, ctx, "open the sessions page", chromedp.Navigate(e.URL+"/account/sessions"), chromedp.WaitVisible(chromedp.CSS(revoke)))
		row := webtest.Read(t, ctx, "the phone's row", chromedp.Evaluate[string](`document.querySelector('`+revoke+`').closest("tr").innerText`))
		if !strings.Contains(row, "Firefox") || !strings.Contains(row, "203.0.113.24") || strings.Contains(row, "This device") {
			t.Fatalf("the phone's row: %q", row)
		}
		if name := webtest.Read(t, ctx, "the button's name", chromedp.Evaluate[string](`document.querySelector('`+revoke+`').textContent`)); name != "Revoke: Firefox · Android, 203.0.113.24" {
			t.Errorf("the revoke button is named %q, want the session it ends", name)
		}

		webtest.Submit(t, ctx, "revoke the phone's session", chromedp.Click(chromedp.CSS(revoke)), chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		if msg := webtest.Read(t, ctx, "flash", chromedp.Text(chromedp.CSS(`.notice`))); msg != "The session was revoked. That device is signed out." {
			t.Fatalf("flash %q", msg)
		}
		if n := webtest.Read(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('form[action="/account/sessions/`+phoneID+`/revoke"]').length`)); n != 0 {
			t.Error("the revoked session is still listed")
		}
		if s := me(phoneToken); s != http.StatusUnauthorized {
			t.Fatalf("the phone's token after the revocation: %d, want 401", s)
		}
		if s := me(u.Token); s != http.StatusOK {
			t.Fatalf("another session's token after revoking the phone's: %d", s)
		}
		if asked.Load() != 0 {
			t.Error("revoking one session asked for confirmation")
		}

		// Everywhere else: the fixture's session goes, the browser's stays.
		webtest.Submit(t, ctx, "sign out everywhere else",
			chromedp.Click(chromedp.CSS(`form[action="/account/sessions/revoke-others"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		if msg := webtest.Read(t, ctx, "flash", chromedp.Text(chromedp.CSS(`.notice`))); msg != "All other sessions were revoked." {
			t.Fatalf("flash %q", msg)
		}
		if asked.Load() != 1 {
			t.Errorf("%d confirmations, want 1", asked.Load())
		}
		if s := me(u.Token); s != http.StatusUnauthorized {
			t.Fatalf("the other session's token after signing out everywhere else: %d, want 401", s)
		}
		webtest.Do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
		if text := webtest.Read(t, ctx, "page", chromedp.Text(chromedp.CSS(`main`))); !strings.Contains(text, "This device") || !strings.Contains(text, "You are signed in only here.") {
			t.Fatalf("the browser's own session after signing out everywhere else: %q", text)
		}
	})
}
