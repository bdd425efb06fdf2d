package account_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleSessions does the sessions page's main action in a real
// Chromium: a person signed in on a laptop sees their phone's session in
// the list, revokes it, and the phone's token is refused by the API from
// then on while the others still work; "Sign out everywhere else" asks
// first and ends every session but the browser's own.
func TestBrowserConsoleSessions(t *testing.T) {
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
