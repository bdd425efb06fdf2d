package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/policy"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminConfig drives a headless Chromium through /admin/platforms
// and /admin/config as an operator holding the settings permissions: disable
// Discord (accepting the confirmation) and see GET /v1/platforms say so,
// send a platform's form unchanged and see "No changes requested", type bad
// JSON into a config entry and see the error at the field with nothing
// changed, then a good value, and create, edit and delete a setting. Axe
// checks each page in the light and the dark theme; with HMID_SCREENSHOTS
// set the platforms and configuration pages are saved at desktop and phone
// width.
func TestBrowserAdminConfig(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		role := "role_settings"
		now := db.TS(e.Clock.Now())
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := e.Server.DB.ExecContext(t.Context(), q, args...); err != nil {
				t.Fatal(err)
			}
		}
		exec(`INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ($1, 'Settings', '', FALSE, FALSE, $2, $2)`, role, now)
		for _, a := range []string{"read", "write", "delete"} {
			exec(`INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`, role, access.PermissionID("settings", a), now)
		}
		exec(`INSERT INTO settings (key, value, description, is_public, created_at, updated_at) VALUES ('support.email', '"help@example.test"', 'Where people write for help', TRUE, $1, $1)`, now)
		op := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper", Email: "grace@example.test", Password: pw, Roles: []string{"role_user", role}})

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		until := func(what, sel, want string) { t.Helper(); webtest.WaitText(t, ctx, what, sel, want) }
		// at waits for the browser to be at path (with query).
		at := func(what, path string) {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for {
				loc, err := chromedp.Run(ctx, chromedp.Location())
				if err == nil && loc == e.URL+path {
					webtest.Do(t, ctx, what, chromedp.WaitReady(css(`body`)))
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: at %q, want %s", what, loc, path)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		// The data-confirm forms ask before they are sent: accept, and keep
		// what was asked.
		asked := webtest.AskedDialogs(ctx)
		confirmation := func(want string) {
			t.Helper()
			select {
			case msg := <-asked:
				if !strings.Contains(msg, want) {
					t.Errorf("confirmation %q, want %q", msg, want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("no confirmation asked (%q)", want)
			}
		}
		platform := func(slug string) map[string]any {
			return e.Call(t, "GET", "/v1/platforms/"+slug, "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		}
		config := func(key string) string {
			var entry struct{ Value json.RawMessage }
			e.Call(t, "GET", "/v1/system-config/"+key, e.SystemKey, nil, http.StatusOK).Decode(t, &entry)
			return string(entry.Value)
		}

		webtest.Login(t, ctx, e.URL, op.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin/platforms")

		// Disable Discord.
		webtest.Do(t, ctx, "disable Discord", chromedp.Click(css(`form[action="/admin/platforms/discord/enabled"] button`)))
		confirmation("Disable Discord?")
		until("after disabling", `main`, "The platform was disabled.")
		if platform("discord")["enabled"] != false {
			t.Fatal("GET /v1/platforms/discord: still enabled")
		}
		webtest.Screenshots(t, ctx, "admin-platforms")

		// Close registration through GitHub, then send the form unchanged.
		webtest.Do(t, ctx, "untick GitHub's registration", chromedp.Click(css(`form[action="/admin/platforms/github/settings"] input[name=registration_enabled]`)),
			chromedp.Click(css(`form[action="/admin/platforms/github/settings"] button`)))
		until("after saving", `main`, "The platform settings were saved.")
		if platform("github")["registration_enabled"] != false {
			t.Fatal("GitHub's registration is still open")
		}
		webtest.Do(t, ctx, "save GitHub unchanged", chromedp.Click(css(`form[action="/admin/platforms/github/settings"] button`)))
		until("after an unchanged form", `.notice`, "No changes requested")

		// A bad JSON value: the error at the field, nothing stored.
		webtest.Do(t, ctx, "open the configuration", chromedp.Navigate(e.URL+"/admin/config"), chromedp.WaitVisible(css(`#prefix`)))
		webtest.Axe(t, ctx, "")
		locales := `form[action="/admin/config/system/email.supported_locales"]`
		webtest.Do(t, ctx, "type bad JSON", chromedp.SetValue(css(locales+` textarea`), `["en", "de"`),
			chromedp.Click(css(locales+` button`)))
		until("after bad JSON", locales+` .field-error`, "is not valid JSON")
		webtest.Axe(t, ctx, "")
		if got := config("email.supported_locales"); got != `["en","de"]` {
			t.Fatalf("email.supported_locales = %s after a refusal", got)
		}
		webtest.Do(t, ctx, "type good JSON", chromedp.SetValue(css(locales+` textarea`), `["en", "de", "fr"]`),
			chromedp.Click(css(locales+` button`)))
		until("after good JSON", `.notice`, "The configuration value was saved.")
		webtest.Screenshots(t, ctx, "admin-config")
		if got := config("email.supported_locales"); got != `["en","de","fr"]` {
			t.Fatalf("email.supported_locales = %s", got)
		}
		// The prefix filter.
		webtest.Do(t, ctx, "filter", chromedp.SendKeys(css(`#prefix`), "stats."), chromedp.Submit(css(`#prefix`)))
		at("after filtering", "/admin/config?prefix=stats.")
		if body := webtest.Read(t, ctx, "filtered list", chromedp.Text(css(`ul.config-entries`))); strings.Contains(body, "email.supported_locales") {
			t.Errorf("the filter stats. shows %q", body)
		}

		// Create, edit and delete a setting.
		webtest.Do(t, ctx, "open the new setting form", chromedp.Navigate(e.URL+"/admin/config/new-setting"), chromedp.WaitVisible(css(`#key`)))
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "create a setting", chromedp.SendKeys(css(`#key`), "site.title"),
			chromedp.SetValue(css(`#value`), `{"en": "Harbour ID", "de": "Hafen-ID"}`),
			chromedp.SendKeys(css(`#description`), "The name the apps show"), chromedp.Click(css(`#is_public`)),
			chromedp.Click(css(`main form button[type=submit]`)))
		until("after creating", `.notice`, "The setting was created.")
		pub := e.Call(t, "GET", "/v1/settings/public", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(pub) != 2 {
			t.Fatalf("public settings = %v", pub)
		}
		at("after creating", "/admin/config/settings/site.title")
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "edit the setting", chromedp.SetValue(css(`#value`), `"Harbour ID"`),
			chromedp.Click(css(`form[action="/admin/config/settings/site.title"] button`)))
		until("after editing", `.notice`, "The setting was saved.")
		got := e.Call(t, "GET", "/v1/settings/site.title", e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["value"] != "Harbour ID" || got["is_public"] != true {
			t.Fatalf("edited setting = %v", got)
		}
		webtest.Do(t, ctx, "delete the setting", chromedp.Click(css(`input[name=confirm]`)), chromedp.Click(css(`form[action="/admin/config/settings/site.title/delete"] button`)))
		confirmation("Delete the setting site.title?")
		until("after deleting", `.notice`, "The setting was deleted.")
		if list := webtest.Read(t, ctx, "settings list", chromedp.Text(css(`table.list`))); strings.Contains(list, "site.title") || !strings.Contains(list, "support.email") {
			t.Errorf("settings after deleting site.title: %q", list)
		}
		e.Call(t, "GET", "/v1/settings/site.title", e.SystemKey, nil, http.StatusNotFound)
	})
}

// TestBrowserAdminPolicies drives a headless Chromium through the policies
// on /admin/config as a super admin: the idle timeout is set in seconds and
// shown in words, the common-password box is unticked and ticked again, and
// each change is in force at once (the server's snapshot) and audited from
// the backend. The page is checked by axe in both themes, in English and in
// German, and with HMID_SCREENSHOTS saved at desktop and phone width.
func TestBrowserAdminPolicies(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		admin := e.NewUser(t, apptest.UserSpec{Username: "ada_admin", Email: "ada@example.test", Password: pw, SuperAdmin: true})
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		until := func(what, sel, want string) { t.Helper(); webtest.WaitText(t, ctx, what, sel, want) }
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
