package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/token"
)

// platformField reads one field of GET /v1/platforms/{slug}.
func platformField(t *testing.T, e *apptest.Env, slug, field string) any {
	t.Helper()
	return e.Call(t, "GET", "/v1/platforms/"+slug, "", nil, http.StatusOK).JSON()["data"].(map[string]any)[field]
}

// post sends a console form to action with the CSRF token of the form for
// action in pageBody; the token is set in form (nil for a form of no fields).
func (b *browser) post(t *testing.T, pageBody, action string, form url.Values) page {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", formToken(t, pageBody, action))
	return b.do("POST", action, form)
}

// postFrom is post with the page at from, which must answer 200.
func postFrom(t *testing.T, b *browser, from, action string, form url.Values) page {
	t.Helper()
	p := b.get(from)
	if p.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", from, p.status, p.body)
	}
	return b.post(t, p.body, action, form)
}

func TestAdminPlatforms(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := operator(t, e, "settings:read", "settings:write")
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
		reader := signedInBrowser(t, e, operator(t, e, "settings:read"))
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
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		now := db.TS(e.Clock.Now())
		execSQL(t, e, `INSERT INTO system_config (key, value, description, updated_at) VALUES ('feature.beta', 'false', 'Beta features', $1), ('site.motto', '"Fleet"', 'Shown in the footer', $1)`, now)
		op := operator(t, e, "settings:read", "settings:write", "settings:delete")
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
		reader := signedInBrowser(t, e, operator(t, e, "settings:read"))
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
		writer := signedInBrowser(t, e, operator(t, e, "settings:read", "settings:write"))
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

// backendEvents counts the audit events of type kind about resource written
// by the admin console (source_service backend).
func resourceBackendEvents(t *testing.T, e *apptest.Env, kind, resource string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND resource_id = $2 AND source_service = 'backend'`, kind, resource)
}

// wantRefusedPage checks that p is the HTML 403 page naming perm.
func wantRefusedPage(t *testing.T, what string, p page, perm string) {
	t.Helper()
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "<html") || !strings.Contains(p.body, "missing permission "+perm) {
		t.Errorf("%s: %d %s", what, p.status, p.body)
	}
}

// rowOf is the table row of body that holds marker ("" when none does).
func rowOf(body, marker string) string {
	i := strings.Index(body, marker)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr>")
	end := strings.Index(body[i:], "</tr>")
	if start < 0 || end < 0 {
		return ""
	}
	return body[start : i+end]
}

// clientJSON reads a client through the REST API.
func clientJSON(t *testing.T, e *apptest.Env, id string) map[string]any {
	t.Helper()
	return e.Call(t, "GET", "/v1/oauth/clients/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
}

func TestAdminClients(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		owner := e.NewUser(t, apptest.UserSpec{Password: "owner good password"})
		made := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{"name": "Owner App", "redirect_uris": []string{cb}}, http.StatusCreated)
		ownerClient := made.JSON()["data"].(map[string]any)["id"].(string)

		// Without oauth_clients:read: the refused page, no list.
		plain := signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "plain good password"}))
		wantRefusedPage(t, "a plain user's list", plain.get("/admin/clients"), "oauth_clients:read")

		// A developer (oauth_clients:*) sees every client, with its owner, type, first-party flag and state.
		b := signedInBrowser(t, e, dev)
		list := b.get("/admin/clients")
		if list.status != http.StatusOK || !strings.Contains(list.body, "Owner App") || !strings.Contains(list.body, owner.Username) ||
			!strings.Contains(list.body, `href="/admin/clients/`+ownerClient+`"`) || !strings.Contains(list.body, `href="/admin/clients" aria-current="page"`) ||
			!strings.Contains(list.body, "Confidential") || !strings.Contains(list.body, `<span class="badge ok">Active</span>`) {
			t.Fatalf("list: %d %s", list.status, list.body)
		}
		// The owner links to the user's page only for readers of users.
		if strings.Contains(list.body, `href="/admin/users/`+owner.ID+`"`) {
			t.Error("the developer, who may not read users, gets a link to the owner's page")
		}

		// Create a first-party client as a developer: offered, but the service refuses it and nothing is made.
		devClients := func() int { return count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE owner_id = $1`, dev.ID) }
		form := b.get("/admin/clients/new")
		if form.status != http.StatusOK || !strings.Contains(form.body, `name="is_first_party"`) || !strings.Contains(form.body, "Only super admins can set it") {
			t.Fatalf("registration form for a developer: %d %s", form.status, form.body)
		}
		refused := postFrom(t, b, "/admin/clients/new", "/admin/clients", clientForm("Sneaky First Party", "is_first_party", "yes"))
		if refused.status != http.StatusForbidden || !strings.Contains(refused.body, `id="firstparty-error"`) ||
			!strings.Contains(refused.body, "only super admins and system keys can register first-party clients") ||
			!strings.Contains(refused.body, `value="Sneaky First Party"`) || developerSecret(refused.body) != "" {
			t.Errorf("first party by a developer: %d %s", refused.status, refused.body)
		}
		if n := devClients(); n != 0 {
			t.Fatalf("the refused registration made %d clients", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE name = 'Sneaky First Party'`); n != 0 {
			t.Fatal("the refused first-party client exists")
		}

		// ... and as a super admin: registered, first party, its secret shown once, audited from the backend.
		ab := signedInBrowser(t, e, admin)
		fp := postFrom(t, ab, "/admin/clients/new", "/admin/clients", clientForm("Our Own App", "is_first_party", "yes"))
		secret := developerSecret(fp.body)
		if fp.status != http.StatusCreated || !strings.HasPrefix(secret, "hm_sec_") || !strings.Contains(fp.body, "first-party client: it cannot be changed") {
			t.Fatalf("first party by a super admin: %d %s", fp.status, fp.body)
		}
		var fpID, hash string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT id, secret_hash FROM oauth_clients WHERE owner_id = $1 AND is_first_party`, admin.ID).Scan(&fpID, &hash); err != nil {
			t.Fatal(err)
		}
		if hash != token.Hash(secret) || !strings.Contains(fp.body, `data-location="/admin/clients/`+fpID+`"`) {
			t.Error("the shown secret is not the client's, or the page does not name its address")
		}
		if got := clientJSON(t, e, fpID); got["is_first_party"] != true || got["name"] != "Our Own App" {
			t.Errorf("first-party client: %v", got)
		}
		if n := resourceBackendEvents(t, e, "client_created", fpID); n != 1 {
			t.Errorf("client_created events from the backend: %d", n)
		}
		// A first-party client is locked: no settings, no switch, no delete.
		if p := ab.get("/admin/clients/" + fpID); p.status != http.StatusOK || strings.Contains(p.body, "/active") || strings.Contains(p.body, "/delete") ||
			strings.Contains(p.body, secret) || !strings.Contains(p.body, admin.Username) {
			t.Errorf("first-party client page: %d %s", p.status, p.body)
		}

		// Edit another user's client (oauth_clients:update).
		page := "/admin/clients/" + ownerClient
		if p := b.get(page); p.status != http.StatusOK || !strings.Contains(p.body, `action="`+page+`/active"`) || !strings.Contains(p.body, `name="active" value="no"`) || !strings.Contains(p.body, owner.Username) {
			t.Fatalf("client page: %d %s", p.status, p.body)
		}
		edit := clientForm("Owner App Renamed", "redirect_uris", cb, "is_active", "yes")
		if q := postFrom(t, b, page, page, edit); q.status != http.StatusSeeOther || q.location != page {
			t.Fatalf("edit: %d %q %s", q.status, q.location, q.body)
		}
		if got := clientJSON(t, e, ownerClient); got["name"] != "Owner App Renamed" {
			t.Errorf("edited: %v", got)
		}
		if n := resourceBackendEvents(t, e, "client_updated", ownerClient); n != 1 {
			t.Errorf("client_updated events: %d", n)
		}

		// Deactivate: the box is required; then the client is off and its tokens revoked; activate again.
		c := testClient{ID: ownerClient, Secret: made.JSON()["data"].(map[string]any)["client_secret"].(string)}
		tokens := exchange(t, e, c, getCode(t, e, owner.Token, authzParams(ownerClient)))
		if tokens.Status != http.StatusOK {
			t.Fatalf("token: %d %s", tokens.Status, tokens.Body)
		}
		if q := postFrom(t, b, page, page+"/active", url.Values{"active": {"no"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="confirm_deactivate-error"`) || clientJSON(t, e, ownerClient)["is_active"] != true {
			t.Errorf("deactivate without the box: %d %s", q.status, q.body)
		}
		if q := postFrom(t, b, page, page+"/active", url.Values{"active": {"no"}, "confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != page {
			t.Fatalf("deactivate: %d %s", q.status, q.body)
		}
		if clientJSON(t, e, ownerClient)["is_active"] != false {
			t.Error("the client is still active")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_tokens WHERE client_id = $1 AND revoked_at IS NULL`, ownerClient); n != 0 {
			t.Errorf("%d tokens of the deactivated client still live", n)
		}
		after := b.get(page)
		if !strings.Contains(after.body, "The client was deactivated") || !strings.Contains(after.body, `name="active" value="yes"`) {
			t.Errorf("page after deactivating: %s", after.body)
		}
		if q := b.do("POST", page+"/active", url.Values{"csrf_token": {formToken(t, after.body, page+"/active")}, "active": {"yes"}}); q.status != http.StatusSeeOther {
			t.Fatalf("activate: %d %s", q.status, q.body)
		}
		if clientJSON(t, e, ownerClient)["is_active"] != true {
			t.Error("the client is not active again")
		}
		if n := resourceBackendEvents(t, e, "client_updated", ownerClient); n != 3 {
			t.Errorf("client_updated events after the switches: %d", n)
		}

		// Regenerate the secret: the box, then shown once; the old one dies.
		if q := postFrom(t, b, page, page+"/secret", url.Values{}); q.status != http.StatusBadRequest {
			t.Errorf("regenerate without the box: %d", q.status)
		}
		q := postFrom(t, b, page, page+"/secret", url.Values{"confirm": {"yes"}})
		newSecret := developerSecret(q.body)
		if q.status != http.StatusOK || newSecret == "" || newSecret == c.Secret {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		if count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE id = $1 AND secret_hash = $2`, ownerClient, token.Hash(newSecret)) != 1 ||
			resourceBackendEvents(t, e, "client_secret_regenerated", ownerClient) != 1 {
			t.Error("the new secret is not stored, or not audited from the backend")
		}

		// Reading is not changing: oauth_clients:read alone lists clients but may not switch one off.
		reader := signedInBrowser(t, e, roleUserWith(t, e, apptest.UserSpec{Password: "reader good password"}, "oauth_clients:read"))
		if p := reader.get("/admin/clients"); p.status != http.StatusOK || !strings.Contains(p.body, "Owner App Renamed") {
			t.Errorf("reader's list: %d", p.status)
		}
		if p := postFrom(t, reader, page, page+"/active", url.Values{"active": {"no"}, "confirm": {"yes"}}); p.status != http.StatusForbidden ||
			!strings.Contains(p.body, "missing permission oauth_clients:update") || clientJSON(t, e, ownerClient)["is_active"] != true {
			t.Errorf("deactivate by a reader: %d %s", p.status, p.body)
		}
		// Someone who may not read every client does not get into the admin
		// area's client pages (their own clients are at /account/developer).
		if p := plain.get(page); p.status != http.StatusForbidden || strings.Contains(p.body, "Owner App") {
			t.Errorf("a plain user's view of the client: %d", p.status)
		}

		// Delete: the box, then gone, back to the list.
		if q := postFrom(t, b, page, page+"/delete", url.Values{}); q.status != http.StatusBadRequest {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := postFrom(t, b, page, page+"/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/admin/clients" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+ownerClient, e.SystemKey, nil, http.StatusNotFound)
		if resourceBackendEvents(t, e, "client_deleted", ownerClient) != 1 {
			t.Error("client_deleted is not audited from the backend")
		}
		if l := b.get("/admin/clients"); !strings.Contains(l.body, "The client was deleted.") || strings.Contains(l.body, ownerClient) {
			t.Errorf("list after delete: %s", l.body)
		}

		// Paging through GET parameters.
		for _, name := range []string{"Paged A", "Paged B", "Paged C"} {
			e.Clock.Advance(time.Second) // newest first: each a second later
			e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{"name": name, "redirect_uris": []string{cb}}, http.StatusCreated)
		}
		first := b.get("/admin/clients?limit=2")
		if !strings.Contains(first.body, "Paged C") || strings.Contains(first.body, "Paged A") || !strings.Contains(first.body, `href="/admin/clients?limit=2&amp;page=2" rel="next"`) {
			t.Errorf("first page: %s", first.body)
		}
		if second := b.get("/admin/clients?limit=2&page=2"); !strings.Contains(second.body, "Paged A") || !strings.Contains(second.body, "3–4 of 4") {
			t.Errorf("second page: %s", second.body)
		}
		if past := b.get("/admin/clients?page=9"); past.status != http.StatusOK || !strings.Contains(past.body, "nothing on this page") {
			t.Errorf("past the end: %d %s", past.status, past.body)
		}

		// In the reader's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, dev.ID)
		if l := b.get("/admin/clients"); !strings.Contains(l.body, `lang="de"`) || !strings.Contains(l.body, "Eigentümer") || !strings.Contains(l.body, "Alle Clients") {
			t.Errorf("German list: %s", l.body)
		}
	})
}

func TestAdminAPIKeys(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		devKey, devKeyID := e.NewAPIKey(t, dev.ID, "two_factor:read")

		wantRefusedPage(t, "a plain user's list", signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "plain good password"})).get("/admin/api-keys"), "api_keys:read")

		// A super admin sees every key with its owner, prefix, scopes and last use.
		e.Call(t, "GET", "/v1/users/me", devKey, nil, http.StatusOK)
		ab := signedInBrowser(t, e, admin)
		list := ab.get("/admin/api-keys")
		var prefix string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT key_prefix FROM api_keys WHERE id = $1`, devKeyID).Scan(&prefix); err != nil {
			t.Fatal(err)
		}
		if list.status != http.StatusOK || !strings.Contains(list.body, "All keys") || !strings.Contains(list.body, dev.Username) ||
			!strings.Contains(list.body, prefix) || !strings.Contains(list.body, "<code>two_factor:read</code>") ||
			!strings.Contains(rowOf(list.body, `href="/admin/api-keys/`+devKeyID+`"`), e.Clock.Now().UTC().Format("Jan 2, 2006, 15:04")+" UTC") ||
			!strings.Contains(list.body, `href="/admin/users/`+dev.ID+`"`) || !strings.Contains(list.body, `href="/admin/api-keys" aria-current="page"`) {
			t.Fatalf("super admin's list: %d %s", list.status, list.body)
		}
		if f := ab.get("/admin/api-keys?user_id=" + dev.ID); !strings.Contains(f.body, "Keys of") || !strings.Contains(f.body, devKeyID) || strings.Contains(f.body, "<code>*:*</code>") {
			t.Errorf("filtered by owner: %s", f.body)
		}
		// A developer sees only their own keys, as GET /v1/api-keys shows them.
		b := signedInBrowser(t, e, dev)
		if l := b.get("/admin/api-keys"); l.status != http.StatusOK || !strings.Contains(l.body, "Your keys") || !strings.Contains(l.body, devKeyID) || strings.Contains(l.body, "<code>*:*</code>") {
			t.Errorf("developer's list: %d %s", l.status, l.body)
		}

		// System keys: a developer is not offered the box and is refused when sending it anyway.
		if f := b.get("/admin/api-keys/new"); f.status != http.StatusOK || strings.Contains(f.body, `name="is_system"`) {
			t.Errorf("developer's key form: %d %s", f.status, f.body)
		}
		systemKeys := func() int { return count(t, e, `SELECT COUNT(*) FROM api_keys WHERE is_system`) }
		before := systemKeys()
		if p := postFrom(t, b, "/admin/api-keys/new", "/admin/api-keys", url.Values{"name": {"sys"}, "is_system": {"yes"}}); p.status != http.StatusForbidden ||
			!strings.Contains(p.body, `id="system-error"`) || developerSecret(p.body) != "" || systemKeys() != before {
			t.Errorf("system key by a developer: %d %s", p.status, p.body)
		}
		// A super admin: with scopes it is refused, without it is made, shown once and works as a system key.
		if f := ab.get("/admin/api-keys/new"); !strings.Contains(f.body, `name="is_system"`) || !strings.Contains(f.body, `value="users:read"`) {
			t.Errorf("super admin's key form: %s", f.body)
		}
		if p := postFrom(t, ab, "/admin/api-keys/new", "/admin/api-keys", url.Values{"name": {"sys"}, "is_system": {"yes"}, "scopes": {"users:read"}}); p.status != http.StatusBadRequest ||
			!strings.Contains(p.body, `id="scopes-error"`) || !strings.Contains(p.body, `name="is_system" value="yes" checked`) || systemKeys() != before {
			t.Errorf("system key with scopes: %d %s", p.status, p.body)
		}
		p := postFrom(t, ab, "/admin/api-keys/new", "/admin/api-keys", url.Values{"name": {"Deploy bot"}, "is_system": {"yes"}})
		sysKey := developerSecret(p.body)
		if p.status != http.StatusCreated || !strings.HasPrefix(sysKey, "hm_") || !strings.Contains(p.body, "System key") || !strings.Contains(p.body, "No user") {
			t.Fatalf("system key: %d %s", p.status, p.body)
		}
		var sysID string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT id FROM api_keys WHERE is_system AND user_id IS NULL AND name = 'Deploy bot'`).Scan(&sysID); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/roles", sysKey, nil, http.StatusOK)
		if n := resourceBackendEvents(t, e, "api_key_created", sysID); n != 1 {
			t.Errorf("api_key_created events from the backend: %d", n)
		}
		// It cannot be deleted (the page offers no deletion; a post is refused), but it can be switched off.
		sysPage := "/admin/api-keys/" + sysID
		sp := ab.get(sysPage)
		if strings.Contains(sp.body, sysPage+"/delete") || strings.Contains(sp.body, sysKey) {
			t.Errorf("system key page: %s", sp.body)
		}
		tok := formToken(t, sp.body, sysPage+"/active")
		if q := ab.do("POST", sysPage+"/delete", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); q.status != http.StatusForbidden || !strings.Contains(q.body, "system API keys cannot be deleted") {
			t.Errorf("delete a system key: %d %s", q.status, q.body)
		}
		if q := postFrom(t, ab, sysPage, sysPage+"/active", url.Values{"active": {"no"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="confirm_deactivate-error"`) {
			t.Errorf("deactivate without the box: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/roles", sysKey, nil, http.StatusOK)
		if q := postFrom(t, ab, sysPage, sysPage+"/active", url.Values{"active": {"no"}, "confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != sysPage {
			t.Fatalf("deactivate: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/roles", sysKey, nil, http.StatusUnauthorized)
		if q := postFrom(t, ab, sysPage, sysPage+"/active", url.Values{"active": {"yes"}}); q.status != http.StatusSeeOther {
			t.Fatalf("activate: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/roles", sysKey, nil, http.StatusOK)

		// An ordinary key by the super admin is theirs.
		p = postFrom(t, ab, "/admin/api-keys/new", "/admin/api-keys", url.Values{"name": {"Admin script"}, "scopes": {"users:read"}})
		if p.status != http.StatusCreated || count(t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1 AND name = 'Admin script' AND NOT is_system`, admin.ID) != 1 {
			t.Fatalf("ordinary key: %d %s", p.status, p.body)
		}

		// The developer's key, handled by the super admin: roles, a new value, deletion.
		page := "/admin/api-keys/" + devKeyID
		kp := ab.get(page)
		if kp.status != http.StatusOK || !strings.Contains(kp.body, dev.Username) || !strings.Contains(kp.body, `<option value="role_admin">`) {
			t.Fatalf("key page: %d %s", kp.status, kp.body)
		}
		if q := postFrom(t, ab, page, page+"/roles", url.Values{"role_id": {"role_developer"}}); q.status != http.StatusSeeOther || q.location != page {
			t.Fatalf("add role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+devKeyID+"/roles", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 1 {
			t.Fatalf("roles after adding: %v", rl)
		}
		if q := postFrom(t, ab, page, page+"/roles/role_developer/remove", url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("remove role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+devKeyID+"/roles", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 0 {
			t.Fatalf("roles after removing: %v", rl)
		}
		q := postFrom(t, ab, page, page+"/regenerate", url.Values{"confirm": {"yes"}})
		newKey := developerSecret(q.body)
		if q.status != http.StatusOK || newKey == "" || newKey == devKey {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/users/me", devKey, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", newKey, nil, http.StatusOK)
		if q := postFrom(t, ab, page, page+"/delete", url.Values{}); q.status != http.StatusBadRequest {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := postFrom(t, ab, page, page+"/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/admin/api-keys" {
			t.Fatalf("delete: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/users/me", newKey, nil, http.StatusUnauthorized)
		if resourceBackendEvents(t, e, "api_key_revoked", devKeyID) != 1 {
			t.Error("api_key_revoked is not audited from the backend")
		}
		if l := ab.get("/admin/api-keys"); !strings.Contains(l.body, "The API key was deleted.") || strings.Contains(l.body, devKeyID) {
			t.Errorf("list after delete: %s", l.body)
		}

		// Without api_keys:write the key pages offer no changes and the posts are refused.
		reader := signedInBrowser(t, e, roleUserWith(t, e, apptest.UserSpec{Password: "reader good password"}, "api_keys:read"))
		wantRefusedPage(t, "key form for a reader", reader.get("/admin/api-keys/new"), "api_keys:write")
		if l := reader.get("/admin/api-keys"); l.status != http.StatusOK || strings.Contains(l.body, `href="/admin/api-keys/new"`) {
			t.Errorf("reader's list: %d %s", l.status, l.body)
		}
	})
}

// TestSystemKeyREST: POST /v1/api-keys with is_system (extension) makes a
// system key for super admins only; PATCH cannot change it.
func TestSystemKeyREST(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", "role_developer"}})
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		before := count(t, e, `SELECT COUNT(*) FROM api_keys`)
		e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "sys", "is_system": true}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys", e.SystemKey, map[string]any{"name": "sys", "is_system": true}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys", admin.Token, map[string]any{"name": "sys", "is_system": true, "scopes": []string{"users:read"}}, http.StatusBadRequest)
		if n := count(t, e, `SELECT COUNT(*) FROM api_keys`); n != before {
			t.Fatalf("refused requests made %d keys", n-before)
		}
		k := e.Call(t, "POST", "/v1/api-keys", admin.Token, map[string]any{"name": "sys", "is_system": true}, http.StatusCreated).JSON()
		if k["is_system"] != true || k["user_id"] != nil || len(k["scopes"].([]any)) != 1 || k["scopes"].([]any)[0] != "*:*" {
			t.Fatalf("system key: %v", k)
		}
		id := k["id"].(string)
		e.Call(t, "GET", "/v1/users", k["key"].(string), nil, http.StatusOK)
		e.Call(t, "PATCH", "/v1/api-keys/"+id, admin.Token, map[string]any{"is_system": false}, http.StatusBadRequest)
		// Sending the key's own value back (a read, edited and sent whole) is fine.
		if got := e.Call(t, "PATCH", "/v1/api-keys/"+id, admin.Token, map[string]any{"name": "sys2", "is_system": true}, http.StatusOK).JSON()["data"].(map[string]any); got["name"] != "sys2" || got["is_system"] != true {
			t.Errorf("patched: %v", got)
		}
		// An ordinary key stays ordinary.
		own := e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "mine", "is_system": false}, http.StatusCreated).JSON()
		if own["is_system"] != false || own["user_id"] != dev.ID {
			t.Errorf("ordinary key: %v", own)
		}
		e.Call(t, "PATCH", "/v1/api-keys/"+own["id"].(string), dev.Token, map[string]any{"is_system": true}, http.StatusBadRequest)
	})
}

// TestPlatformsNotConfigured: an OAuth platform without its provider's app
// shows "Not configured" and how to configure it, not "Enabled"; one with
// an app shows "Enabled".
func TestPlatformsNotConfigured(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HMID_LOGIN_DISCORD_CLIENT_ID": "discord-app", "HMID_LOGIN_DISCORD_CLIENT_SECRET": "discord-secret"}
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := operator(t, e, "settings:read", "settings:write")
		p := signedInBrowser(t, e, op).get("/admin/platforms")
		section := func(name string) string {
			i := strings.Index(p.body, ">"+name+" <span")
			if i < 0 {
				t.Fatalf("no section of %s: %s", name, p.body)
			}
			return p.body[i : i+200]
		}
		if s := section("GitHub"); !strings.Contains(s, "Not configured") || strings.Contains(s, ">Enabled<") {
			t.Errorf("GitHub without an app: %s", s)
		}
		if !strings.Contains(p.body, "HMID_LOGIN_GITHUB_CLIENT_ID and HMID_LOGIN_GITHUB_CLIENT_SECRET") {
			t.Error("the page does not say how to configure GitHub")
		}
		if s := section("Discord"); !strings.Contains(s, ">Enabled<") {
			t.Errorf("Discord with an app: %s", s)
		}
		if s := section("Email"); strings.Contains(s, "Not configured") {
			t.Errorf("the email platform needs no app: %s", s)
		}
	}, func(c *config.Config) { c.LoginEnv = func(k string) string { return env[k] } })
}
