package account_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleAppsAndData drives a headless Chromium through
// /account/apps and /account/data: it disconnects an app and sees the app's
// access token refused by the API, downloads the data export through the
// page and opens the ZIP, and asks for the deletion of the account with the
// password and cancels it. With HMID_SCREENSHOTS=<dir> it saves the pages at
// desktop and phone width.
func TestBrowserConsoleAppsAndData(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		clientID, accessToken := consentedClient(t, e, u, "Harbour Planner")

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		// The forms' data-confirm asks before a destructive post.
		dialogs := webtest.AcceptDialogs(ctx)

		// ---- Connected apps: disconnect one ----
		webtest.Do(t, ctx, "sign in", chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(e.URL+"/login?return_to="+url.QueryEscape("/account/apps")),
			chromedp.WaitVisible(css(`#email`)),
			chromedp.SendKeys(css(`#email`), u.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)),
			chromedp.WaitVisible(css(`form[action="/account/apps/`+clientID+`/revoke"] button`)))
		if text := webtest.Read(t, ctx, "apps page", chromedp.Text(css(`main`))); !strings.Contains(text, "Harbour Planner") || !strings.Contains(text, "See your email address") {
			t.Fatalf("apps page: %q", text)
		}
		webtest.Screenshots(t, ctx, "apps-connected")
		webtest.Submit(t, ctx, "disconnect", chromedp.Click(css(`form[action="/account/apps/`+clientID+`/revoke"] button`)),
			chromedp.WaitVisible(css(`p.notice`)))
		if text := webtest.Read(t, ctx, "flash", chromedp.Text(css(`p.notice`))); !strings.Contains(text, "disconnected") {
			t.Fatalf("after disconnecting: %q", text)
		}
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: accessToken}); r.Status != http.StatusUnauthorized {
			t.Fatalf("the app's access token after disconnecting: %d %s", r.Status, r.Body)
		}

		// ---- Your data: download the export and open it ----
		dir := t.TempDir()
		progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
		webtest.Do(t, ctx, "download", chromedp.Navigate(e.URL+"/account/data"),
			chromedp.WaitVisible(css(`a[href="/account/data/export"]`)),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				events := true
				_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
					Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &events})
				return err
			}),
			chromedp.Click(css(`a[href="/account/data/export"]`)))
		var file string
		for ev, err := range progress {
			if err != nil {
				t.Fatalf("download: %v", err)
			}
			if ev.State == cdpbrowser.DownloadProgressStateCanceled {
				t.Fatal("the download was cancelled")
			}
			if ev.State == cdpbrowser.DownloadProgressStateCompleted {
				file = filepath.Join(dir, ev.GUID)
				break
			}
		}
		zr, err := zip.OpenReader(file)
		if err != nil {
			t.Fatalf("the download is not a ZIP archive: %v", err)
		}
		defer zr.Close()
		var data struct {
			User struct{ ID, Username string }
		}
		names := map[string]bool{}
		for _, f := range zr.File {
			names[f.Name] = true
			if f.Name != "data.json" {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(rc)
			rc.Close()
			if err := json.Unmarshal(raw, &data); err != nil {
				t.Fatalf("data.json: %v", err)
			}
		}
		if data.User.ID != u.ID || data.User.Username != u.Username || !names["report.pdf"] || !names["README.txt"] {
			t.Fatalf("archive %v with user %+v", names, data.User)
		}
		webtest.Do(t, ctx, "history", chromedp.Reload(), chromedp.WaitVisible(css(`table.list`)))
		webtest.Screenshots(t, ctx, "data-history")

		// ---- Delete the account with the password, then cancel ----
		webtest.Do(t, ctx, "request deletion",
			chromedp.SendKeys(css(`#delete-password`), pw),
			chromedp.Click(css(`input[name=confirm]`)),
			chromedp.Click(css(`form[action="/account/data/deletion"] button[type=submit]`)),
			chromedp.WaitVisible(css(`form[action="/account/data/deletion/cancel"] button`)))
		if text := webtest.Read(t, ctx, "scheduled", chromedp.Text(css(`main`))); !strings.Contains(text, "Nov 29, 2026, 12:00 UTC") {
			t.Fatalf("scheduled page: %q", text)
		}
		if st := e.Call(t, "GET", "/v1/users/me/deletion", u.Token, nil, http.StatusOK).JSON(); st["is_scheduled_for_deletion"] != true {
			t.Fatalf("deletion status after the request: %v", st)
		}
		webtest.Screenshots(t, ctx, "data-scheduled")
		webtest.Submit(t, ctx, "cancel deletion", chromedp.Click(css(`form[action="/account/data/deletion/cancel"] button`)),
			chromedp.WaitVisible(css(`p.notice`)), chromedp.WaitVisible(css(`#delete-password`)))
		if st := e.Call(t, "GET", "/v1/users/me/deletion", u.Token, nil, http.StatusOK).JSON(); st["is_scheduled_for_deletion"] != false {
			t.Fatalf("deletion status after cancelling: %v", st)
		}
		if n := dialogs.Load(); n != 2 {
			t.Errorf("%d confirmation dialogs, want 2 (disconnect, delete)", n)
		}
	})
}

// consentedClient registers a client owned by another user, lets u consent
// to it through the API and returns its id and the access token it got.
func consentedClient(t *testing.T, e *apptest.Env, u apptest.User, name string) (string, string) {
	t.Helper()
	owner := e.NewUser(t, apptest.UserSpec{})
	const cb = "https://app.example/cb"
	d := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{"name": name, "redirect_uris": []string{cb}}, http.StatusCreated).JSON()["data"].(map[string]any)
	id, secret := d["id"].(string), d["client_secret"].(string)
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {cb}, "scope": {"openid profile email"}, "state": {"s"}}
	pending := e.Call(t, "GET", "/v1/oauth/authorize?"+q.Encode(), u.Token, nil, http.StatusOK).JSON()["pending_authorization_id"].(string)
	r := e.Call(t, "POST", "/v1/oauth/authorize/consent", u.Token, map[string]any{"pending_authorization_id": pending, "approved": true}, http.StatusFound)
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent redirect %q", r.Header.Get("Location"))
	}
	tr := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{"grant_type": {"authorization_code"},
		"code": {loc.Query().Get("code")}, "redirect_uri": {cb}, "client_id": {id}, "client_secret": {secret}}})
	at, _ := tr.JSON()["access_token"].(string)
	if tr.Status != http.StatusOK || at == "" {
		t.Fatalf("token: %d %s", tr.Status, tr.Body)
	}
	e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
	return id, at
}
