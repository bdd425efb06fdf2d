package admin_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/policy"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminPolicies drives a headless Chromium through the policies
// on /admin/config as a super admin: the idle timeout is set in seconds and
// shown in words, the common-password box is unticked and ticked again, and
// each change is in force at once (the server's snapshot) and audited from
// the backend. The page is checked by axe in both themes, in English and in
// German, and with HMID_SCREENSHOTS saved at desktop and phone width.
func TestBrowserAdminPolicies(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := webtest.Chromium(t)
		admin := e.NewUser(t, apptest.UserSpec{Username: "ada_admin", Email: "ada@example.test", Password: pw, SuperAdmin: true})
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		until := func(what, sel, want string) {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for {
				got, err := chromedp.Run(ctx, chromedp.Text(css(sel), chromedp.AtLeast(0)))
				if err == nil && strings.Contains(got, want) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s shows %q, want %q", what, sel, got, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		config := func(key string) string {
			var entry struct{ Value json.RawMessage }
			e.Call(t, "GET", "/v1/system-config/"+key, e.SystemKey, nil, http.StatusOK).Decode(t, &entry)
			return string(entry.Value)
		}
		// settled waits for key to hold want: a form's answer replaces the
		// page, whose old notice may still show meanwhile.
		settled := func(key, want string) {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for config(key) != want {
				if time.Now().After(deadline) {
					t.Fatalf("%s = %s, want %s", key, config(key), want)
				}
				time.Sleep(100 * time.Millisecond)
			}
			webtest.Do(t, ctx, "wait for the page", chromedp.WaitReady(css(`body`)))
		}
		form := func(key string) string { return `form[action="/admin/config/system/` + key + `"]` }

		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin/config")
		until("the policies", `#policy-h`, "Policies")
		if got := webtest.Read(t, ctx, "session lifetime", chromedp.Text(css(form(policy.KeySessionAbsolute)))); !strings.Contains(got, "= 30 days") {
			t.Fatalf("the session lifetime reads %q, want it in days", got)
		}

		// The idle timeout: 1800 seconds, shown as 30 minutes.
		idle := form(policy.KeySessionIdle)
		webtest.Do(t, ctx, "set the idle timeout", chromedp.SetValue(css(idle+` input[name=value]`), "1800"), chromedp.Click(css(idle+` button`)))
		until("after saving", `.notice`, "The configuration value was saved.")
		until("in words", idle, "= 30 minutes")
		if got := config(policy.KeySessionIdle); got != "1800" {
			t.Fatalf("idle timeout = %s", got)
		}
		if got := e.Server.Policy.Current().SessionIdle; got != 30*time.Minute {
			t.Fatalf("idle timeout in force = %v", got)
		}
		webtest.Axe(t, ctx, "")

		// The common-password box, off and on.
		common := form(policy.KeyRefuseCommon)
		webtest.Do(t, ctx, "untick the common passwords", chromedp.Click(css(common+` input[type=checkbox]`)), chromedp.Click(css(common+` button`)))
		settled(policy.KeyRefuseCommon, "false")
		if e.Server.Policy.Current().Password.RefuseCommon {
			t.Fatal("password.refuse_common is still on")
		}
		webtest.Do(t, ctx, "tick the common passwords", chromedp.Click(css(common+` input[type=checkbox]`)), chromedp.Click(css(common+` button`)))
		settled(policy.KeyRefuseCommon, "true")
		until("after ticking", common, "")
		var n int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM audit_events WHERE event_type = 'system_config_updated' AND source_service = 'backend' AND user_id = $1`, admin.ID).Scan(&n); err != nil || n != 3 {
			t.Fatalf("system_config_updated events from the backend = %d (%v), want 3", n, err)
		}
		webtest.Do(t, ctx, "scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		webtest.Screenshots(t, ctx, "admin-policies")
		webtest.ScreenshotTheme(t, ctx, "admin-policies-phone-dark", webtest.PhoneWidth, webtest.PhoneHeight, "dark")

		// A client's own token lifetimes on its page: the stored one in its
		// field, the server's default beside the empty one.
		c := e.Call(t, "POST", "/v1/oauth/clients", e.SystemKey, map[string]any{"name": "Harbour Planner", "redirect_uris": []string{"https://planner.example/cb"},
			"access_token_lifetime_seconds": 900}, http.StatusCreated).JSON()["data"].(map[string]any)
		webtest.Axe(t, ctx, e.URL+"/admin/clients/"+c["id"].(string))
		if got := webtest.Read(t, ctx, "access lifetime", chromedp.Value(css(`#access_token_lifetime_seconds`))); got != "900" {
			t.Fatalf("access lifetime field = %q, want 900", got)
		}
		if got := webtest.Read(t, ctx, "refresh help", chromedp.Text(css(`#refresh-lifetime-help`))); !strings.Contains(got, "now 2592000 seconds") {
			t.Fatalf("refresh lifetime help = %q", got)
		}
		if dir := webtest.ScreenshotDir(t); dir != "" {
			png := webtest.Read(t, ctx, "the lifetimes", chromedp.Screenshot(css(`form fieldset:last-of-type`)))
			if err := os.WriteFile(filepath.Join(dir, "admin-client-lifetimes.png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}

		// German.
		e.Call(t, "PATCH", "/v1/users/"+admin.ID+"/locale", e.SystemKey, map[string]any{"locale": "de"}, http.StatusOK)
		webtest.Axe(t, ctx, e.URL+"/admin/config")
		until("German", `#policy-h`, "Richtlinien")
		until("German words", idle, "= 30 Minuten")
		webtest.Screenshot(t, ctx, "admin-policies-de-desktop", webtest.DesktopWidth, webtest.DesktopHeight)
		webtest.ScreenshotTheme(t, ctx, "admin-policies-de-phone-dark", webtest.PhoneWidth, webtest.PhoneHeight, "dark")
	})
}
