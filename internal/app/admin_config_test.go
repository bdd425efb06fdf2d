package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/db"
)

// configOperator is a user with a password (to sign in through the login
// page) holding a role with exactly perms.
func configOperator(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	return e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", roleWith(t, e, perms...)}})
}

// platformField reads one field of GET /v1/platforms/{slug}.
func platformField(t *testing.T, e *apptest.Env, slug, field string) any {
	t.Helper()
	return e.Call(t, "GET", "/v1/platforms/"+slug, "", nil, http.StatusOK).JSON()["data"].(map[string]any)[field]
}

// post sends a console form with the page's CSRF token for action.
func (b *browser) post(t *testing.T, pageBody, action string, form url.Values) page {
	t.Helper()
	form.Set("csrf_token", formToken(t, pageBody, action))
	return b.do("POST", action, form)
}

func TestAdminPlatforms(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := configOperator(t, e, "settings:read", "settings:write")
		b := signedInBrowser(t, e, op)
		p := b.get("/admin/platforms")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Discord") || !strings.Contains(p.body, `action="/admin/platforms/discord/enabled"`) {
			t.Fatalf("platforms page: %d %s", p.status, p.body)
		}

		// Disable Discord: the API lists it as disabled, the audit row is the backend's.
		q := b.post(t, p.body, "/admin/platforms/discord/enabled", url.Values{"enabled": {"false"}})
		if q.status != http.StatusSeeOther || q.location != "/admin/platforms" {
			t.Fatalf("disable: %d %q %s", q.status, q.location, q.body)
		}
		if platformField(t, e, "discord", "enabled") != false {
			t.Fatal("Discord is still enabled")
		}
		for _, x := range e.Call(t, "GET", "/v1/platforms/enabled", "", nil, http.StatusOK).JSON()["data"].([]any) {
			if x.(map[string]any)["slug"] == "discord" {
				t.Fatal("GET /v1/platforms/enabled lists the disabled platform")
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'platform_updated' AND user_id = $1 AND source_service = 'backend' AND resource_id = $2`,
			op.ID, platformField(t, e, "discord", "id")); n != 1 {
			t.Fatalf("platform_updated events from the backend = %d, want 1", n)
		}
		p = b.get("/admin/platforms")
		if !strings.Contains(p.body, "The platform was disabled") || !strings.Contains(p.body, `name="enabled" value="true"`) {
			t.Fatalf("after disabling: %s", p.body)
		}

		// The email platform: close registration and require two-factor authentication.
		q = b.post(t, p.body, "/admin/platforms/email/settings", url.Values{"two_factor_required": {"on"}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("settings: %d %s", q.status, q.body)
		}
		if platformField(t, e, "email", "registration_enabled") != false || platformField(t, e, "email", "two_factor_required") != true {
			t.Fatal("the email platform's settings were not stored")
		}
		if p = b.get("/admin/platforms"); !strings.Contains(p.body, "The platform settings were saved.") {
			t.Fatalf("after saving: %s", p.body)
		}
		events := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'platform_updated'`)
		if events != 3 {
			t.Fatalf("platform_updated events = %d, want 3", events)
		}

		// The same form again asks for no change: the spec's notice, no event.
		q = b.post(t, p.body, "/admin/platforms/email/settings", url.Values{"two_factor_required": {"on"}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("unchanged settings: %d %s", q.status, q.body)
		}
		if p = b.get("/admin/platforms"); !strings.Contains(p.body, "No changes requested") {
			t.Fatalf("no notice for an unchanged form: %s", p.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'platform_updated'`); n != events {
			t.Fatalf("an unchanged form wrote %d events", n-events)
		}

		// Requiring two-factor authentication where there is none is refused at the field.
		q = b.post(t, p.body, "/admin/platforms/github/settings", url.Values{"registration_enabled": {"on"}, "two_factor_required": {"on"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `class="field-error"`) || !strings.Contains(q.body, "does not support two-factor") {
			t.Fatalf("two-factor on GitHub: %d %s", q.status, q.body)
		}
		if platformField(t, e, "github", "two_factor_required") != false {
			t.Fatal("GitHub requires two-factor authentication after a refusal")
		}
		// A form that is not the page's, an unknown platform, no CSRF token.
		if q = b.post(t, p.body, "/admin/platforms/discord/enabled", url.Values{"enabled": {"maybe"}}); q.status != http.StatusBadRequest {
			t.Errorf("enabled=maybe: %d", q.status)
		}
		if q = b.post(t, p.body, "/admin/platforms/email/enabled", url.Values{}); q.status != http.StatusBadRequest || platformField(t, e, "email", "enabled") != true {
			t.Errorf("no enabled field: %d", q.status)
		}
		tok := formToken(t, p.body, "/admin/platforms/discord/enabled")
		if q = b.do("POST", "/admin/platforms/myspace/enabled", url.Values{"csrf_token": {tok}, "enabled": {"true"}}); q.status != http.StatusNotFound {
			t.Errorf("unknown platform: %d", q.status)
		}
		if q = b.do("POST", "/admin/platforms/discord/enabled", url.Values{"enabled": {"true"}}); q.status != http.StatusForbidden || platformField(t, e, "discord", "enabled") != false {
			t.Errorf("without CSRF: %d", q.status)
		}
		// Enable it again.
		if q = b.post(t, p.body, "/admin/platforms/discord/enabled", url.Values{"enabled": {"true"}}); q.status != http.StatusSeeOther || platformField(t, e, "discord", "enabled") != true {
			t.Fatalf("enable: %d %s", q.status, q.body)
		}

		// settings:read sees the platforms without forms and cannot change them.
		reader := signedInBrowser(t, e, configOperator(t, e, "settings:read"))
		if r := reader.get("/admin/platforms"); r.status != http.StatusOK || strings.Contains(r.body, `action="/admin/platforms/`) || !strings.Contains(r.body, "Registration is closed.") {
			t.Fatalf("reader's page: %d %s", r.status, r.body)
		}
		if r := reader.do("POST", "/admin/platforms/discord/enabled", url.Values{"csrf_token": {tok}, "enabled": {"false"}}); r.status != http.StatusForbidden || platformField(t, e, "discord", "enabled") != true {
			t.Errorf("reader's post: %d", r.status)
		}
		// Without settings:read the page is the 403 page.
		plain := signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"}))
		if r := plain.get("/admin/platforms"); r.status != http.StatusForbidden || !strings.Contains(r.body, "<html") {
			t.Errorf("plain user: %d %s", r.status, r.body)
		}
	})
}

func TestAdminConfig(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		now := db.TS(e.Clock.Now())
		execSQL(t, e, `INSERT INTO system_config (key, value, description, updated_at) VALUES ('feature.beta', 'false', 'Beta features', $1), ('site.motto', '"Fleet"', 'Shown in the footer', $1)`, now)
		op := configOperator(t, e, "settings:read", "settings:write", "settings:delete")
		b := signedInBrowser(t, e, op)
		p := b.get("/admin/config")
		// The ids count the entries in key order, which seeded entries of
		// other features shift: the pattern takes any.
		for _, want := range []string{`<textarea id="cfg-0" name="value"`, `type="number" step="any" inputmode="decimal" id="cfg-\d+"`, `type="checkbox" id="cfg-1" name="value" value="true"`, `type="text" id="cfg-\d+" name="value" value="Fleet"`} {
			if !regexp.MustCompile(want).MatchString(p.body) {
				t.Fatalf("config page lacks %s: %s", want, p.body)
			}
		}
		// The prefix filter.
		if f := b.get("/admin/config?prefix=stats."); !strings.Contains(f.body, "stats.cache_ttl_seconds") || strings.Contains(f.body, "email.supported_locales") {
			t.Fatalf("prefix filter: %s", f.body)
		}
		config := func(key string) string {
			var entry struct{ Value json.RawMessage }
			e.Call(t, "GET", "/v1/system-config/"+key, op.Token, nil, http.StatusOK).Decode(t, &entry)
			return string(entry.Value)
		}

		// Each type through its input.
		q := b.post(t, p.body, "/admin/config/system/stats.cache_ttl_seconds", url.Values{"value": {"120"}, "prefix": {"stats."}})
		if q.status != http.StatusSeeOther || q.location != "/admin/config?prefix=stats." || config("stats.cache_ttl_seconds") != "120" {
			t.Fatalf("number: %d %q %s", q.status, q.location, q.body)
		}
		if q = b.post(t, p.body, "/admin/config/system/feature.beta", url.Values{"value": {"true"}}); q.status != http.StatusSeeOther || config("feature.beta") != "true" {
			t.Fatalf("checkbox on: %d %s", q.status, q.body)
		}
		if q = b.post(t, p.body, "/admin/config/system/feature.beta", url.Values{}); q.status != http.StatusSeeOther || config("feature.beta") != "false" {
			t.Fatalf("checkbox off: %d %s", q.status, q.body)
		}
		if q = b.post(t, p.body, "/admin/config/system/site.motto", url.Values{"value": {`Ships "R" <us>`}}); q.status != http.StatusSeeOther || config("site.motto") != `"Ships \"R\" <us>"` {
			t.Fatalf("text: %d %s", q.status, config("site.motto"))
		}
		if q = b.post(t, p.body, "/admin/config/system/email.supported_locales", url.Values{"value": {"[\n  \"en\",\n  \"de\",\n  \"fr\"\n]"}}); q.status != http.StatusSeeOther || config("email.supported_locales") != `["en","de","fr"]` {
			t.Fatalf("array: %d %s", q.status, config("email.supported_locales"))
		}
		if f := b.get("/admin/config"); !strings.Contains(f.body, "The configuration value was saved.") {
			t.Fatalf("no flash: %s", f.body)
		}

		// Refusals: shown at the entry, with what was typed; nothing changes.
		for _, c := range []struct{ key, value, want string }{
			{"email.supported_locales", `["en", "de"`, "is not valid JSON"},
			{"email.supported_locales", `"en"`, "must be an array"},
			{"email.supported_locales", `[]`, "non-empty array"},
			{"stats.cache_ttl_seconds", "abc", "is not valid JSON"},
			{"stats.cache_ttl_seconds", "0", "whole number of seconds"},
			{"stats.cache_ttl_seconds", "", "value is required"},
		} {
			before := config(c.key)
			q := b.post(t, p.body, "/admin/config/system/"+c.key, url.Values{"value": {c.value}})
			if q.status != http.StatusBadRequest || !strings.Contains(q.body, `class="field-error"`) || !strings.Contains(q.body, c.want) || !strings.Contains(q.body, `aria-invalid="true"`) {
				t.Errorf("%s = %s: %d, want 400 with %q at the field: %s", c.key, c.value, q.status, c.want, q.body)
			}
			if c.value != "" && !strings.Contains(q.body, strings.ReplaceAll(c.value, `"`, "&#34;")) {
				t.Errorf("%s = %s: the typed value is not kept", c.key, c.value)
			}
			if after := config(c.key); after != before {
				t.Errorf("%s changed from %s to %s on a refusal", c.key, before, after)
			}
		}
		if q = b.do("POST", "/admin/config/system/nope", url.Values{"csrf_token": {formToken(t, p.body, "/admin/config/system/site.motto")}, "value": {"1"}}); q.status != http.StatusNotFound {
			t.Errorf("unknown key: %d", q.status)
		}

		// Settings: create, with refusals at their field first.
		n := b.get("/admin/config/new-setting")
		if n.status != http.StatusOK || !strings.Contains(n.body, `action="/admin/config/new-setting"`) {
			t.Fatalf("new setting form: %d %s", n.status, n.body)
		}
		for _, c := range []struct {
			form   url.Values
			status int
			field  string
		}{
			{url.Values{"key": {"bad key"}, "value": {"1"}}, http.StatusBadRequest, "key-error"},
			{url.Values{"key": {"site.title"}, "value": {"{en: Fleet}"}}, http.StatusBadRequest, "value-error"},
			{url.Values{"key": {"site.title"}, "value": {""}}, http.StatusBadRequest, "value-error"},
		} {
			q := b.post(t, n.body, "/admin/config/new-setting", c.form)
			if q.status != c.status || !strings.Contains(q.body, `id="`+c.field+`"`) {
				t.Errorf("create %v: %d, want %d with %s: %s", c.form, q.status, c.status, c.field, q.body)
			}
		}
		if k := count(t, e, `SELECT COUNT(*) FROM settings`); k != 0 {
			t.Fatalf("%d settings after refusals", k)
		}
		q = b.post(t, n.body, "/admin/config/new-setting", url.Values{"key": {"site.title"}, "value": {`{"en": "Fleet"}`}, "description": {"Title"}, "is_public": {"on"}})
		if q.status != http.StatusSeeOther || q.location != "/admin/config/settings/site.title" {
			t.Fatalf("create: %d %s", q.status, q.body)
		}
		pub := e.Call(t, "GET", "/v1/settings/public", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(pub) != 1 || pub[0].(map[string]any)["value"].(map[string]any)["en"] != "Fleet" || pub[0].(map[string]any)["description"] != "Title" {
			t.Fatalf("public settings = %v", pub)
		}
		if created := b.get(q.location); !strings.Contains(created.body, "The setting was created.") {
			t.Fatalf("no flash on the new setting's page: %s", created.body)
		}
		list := b.get("/admin/config")
		if !strings.Contains(list.body, `<span class="badge ok">Public</span>`) || !strings.Contains(list.body, `href="/admin/config/settings/site.title"`) {
			t.Fatalf("settings list: %s", list.body)
		}

		if q = b.post(t, n.body, "/admin/config/new-setting", url.Values{"key": {"site.title"}, "value": {"1"}}); q.status != http.StatusConflict || !strings.Contains(q.body, "exists already") {
			t.Errorf("duplicate key: %d %s", q.status, q.body)
		}
		// Edit: a bad value changes nothing; a good one is stored.
		s := b.get("/admin/config/settings/site.title")
		if s.status != http.StatusOK || !strings.Contains(s.body, "&#34;en&#34;: &#34;Fleet&#34;") {
			t.Fatalf("setting page: %d %s", s.status, s.body)
		}
		if q = b.post(t, s.body, "/admin/config/settings/site.title", url.Values{"value": {`"Fleet 2`}, "description": {"Changed"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="value-error"`) {
			t.Errorf("bad edit: %d %s", q.status, q.body)
		}
		got := e.Call(t, "GET", "/v1/settings/site.title", op.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["description"] != "Title" || got["is_public"] != true {
			t.Fatalf("a refused edit changed the setting: %v", got)
		}
		if q = b.post(t, s.body, "/admin/config/settings/site.title", url.Values{"value": {`"Fleet 2"`}, "description": {"Changed"}}); q.status != http.StatusSeeOther {
			t.Fatalf("edit: %d %s", q.status, q.body)
		}
		got = e.Call(t, "GET", "/v1/settings/site.title", op.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["value"] != "Fleet 2" || got["description"] != "Changed" || got["is_public"] != false {
			t.Fatalf("edited setting = %v", got)
		}

		// Permissions: settings:read sees without forms; settings:write cannot delete.
		reader := signedInBrowser(t, e, configOperator(t, e, "settings:read"))
		if r := reader.get("/admin/config"); r.status != http.StatusOK || strings.Contains(r.body, `action="/admin/config/`) || !strings.Contains(r.body, `<pre class="value">`) {
			t.Fatalf("reader's page: %d %s", r.status, r.body)
		}
		if r := reader.get("/admin/config/settings/site.title"); r.status != http.StatusOK || strings.Contains(r.body, `action="/admin/config/settings/site.title`) {
			t.Fatalf("reader's setting page: %d %s", r.status, r.body)
		}
		tok := formToken(t, s.body, "/admin/config/settings/site.title/delete")
		for _, path := range []string{"/admin/config/new-setting", "/admin/config/system/stats.cache_ttl_seconds", "/admin/config/settings/site.title"} {
			if r := reader.do("POST", path, url.Values{"csrf_token": {tok}, "key": {"x"}, "value": {"1"}}); r.status != http.StatusForbidden {
				t.Errorf("reader POST %s: %d", path, r.status)
			}
		}
		if r := reader.get("/admin/config/new-setting"); r.status != http.StatusForbidden {
			t.Errorf("reader's new setting form: %d", r.status)
		}
		writer := signedInBrowser(t, e, configOperator(t, e, "settings:read", "settings:write"))
		if w := writer.get("/admin/config/settings/site.title"); w.status != http.StatusOK || strings.Contains(w.body, "/delete") {
			t.Fatalf("writer's setting page offers deletion: %s", w.body)
		}
		if w := writer.do("POST", "/admin/config/settings/site.title/delete", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); w.status != http.StatusForbidden {
			t.Errorf("writer deletes: %d", w.status)
		}
		if r := signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})).get("/admin/config"); r.status != http.StatusForbidden {
			t.Errorf("plain user: %d", r.status)
		}

		// Delete: the box must be ticked.
		if q = b.post(t, s.body, "/admin/config/settings/site.title/delete", url.Values{}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="confirm-error"`) {
			t.Fatalf("delete unconfirmed: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/settings/site.title", op.Token, nil, http.StatusOK)
		if q = b.post(t, s.body, "/admin/config/settings/site.title/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther {
			t.Fatalf("delete: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/settings/site.title", op.Token, nil, http.StatusNotFound)
		if q = b.post(t, s.body, "/admin/config/settings/site.title/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusNotFound {
			t.Errorf("delete again: %d", q.status)
		}
		if r := b.get("/admin/config/settings/site.title"); r.status != http.StatusNotFound {
			t.Errorf("deleted setting's page: %d", r.status)
		}
	})
}
