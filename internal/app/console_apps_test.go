package app_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/deletion"
	"hmid/internal/integrations"
)

// consentedApp registers a client owned by a third user, lets u consent to
// it and returns the client and the access token it got for u.
func consentedApp(t *testing.T, e *apptest.Env, u apptest.User, name string) (testClient, string) {
	t.Helper()
	owner := e.NewUser(t, apptest.UserSpec{})
	c := mkClient(t, e, owner.Token, map[string]any{"name": name})
	tr := exchange(t, e, c, getCode(t, e, u.Token, authzParams(c.ID)))
	at, _ := tr.JSON()["access_token"].(string)
	if tr.Status != http.StatusOK || at == "" {
		t.Fatalf("token: %d %s", tr.Status, tr.Body)
	}
	e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
	return c, at
}

func TestConsoleApps(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c, at := consentedApp(t, e, u, "Harbour Planner")

		b := signedInBrowser(t, e, u)
		p := b.get("/account/apps")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Harbour Planner") || !strings.Contains(p.body, "See your email address") ||
			!strings.Contains(p.body, `<span class="client-initial" aria-hidden="true">H</span>`) {
			t.Fatalf("apps page: %d %s", p.status, p.body)
		}
		action := "/account/apps/" + c.ID + "/revoke"
		// Without the CSRF token nothing changes.
		if q := b.do("POST", action, url.Values{}); q.status != http.StatusForbidden {
			t.Errorf("revoke without CSRF: %d", q.status)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)

		tok := formToken(t, p.body, action)
		q := b.do("POST", action, url.Values{"csrf_token": {tok}})
		if q.status != http.StatusSeeOther || q.location != "/account/apps" {
			t.Fatalf("revoke: %d %q %s", q.status, q.location, q.body)
		}
		// As revokeOauthConsent: the consent is gone and the app's token refused.
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: at}); r.Status != http.StatusUnauthorized {
			t.Errorf("access token after revoking: %d %s", r.Status, r.Body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_consents WHERE user_id = $1`, u.ID); n != 0 {
			t.Errorf("%d consents left", n)
		}
		if n := auditCount(t, e, "consent_revoked", c.ID); n != 1 {
			t.Errorf("%d consent_revoked events", n)
		}
		after := b.get("/account/apps")
		if !strings.Contains(after.body, "The app was disconnected") || strings.Contains(after.body, "Harbour Planner") ||
			!strings.Contains(after.body, "No apps are connected") {
			t.Errorf("after revoking: %s", after.body)
		}
		// A consent that does not exist (any more) is a 404 on the page.
		again := b.do("POST", action, url.Values{"csrf_token": {tok}})
		if again.status != http.StatusNotFound || !strings.Contains(again.body, `role="alert"`) {
			t.Errorf("revoking twice: %d %s", again.status, again.body)
		}

		// The page speaks the user's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		consentedApp(t, e, u, "Hafenplaner")
		if de := b.get("/account/apps"); !strings.Contains(de.body, "Verbundene Apps") || !strings.Contains(de.body, "Ihre E-Mail-Adresse sehen") {
			t.Errorf("German page: %s", de.body)
		}
	})
}

func TestMyConsentsREST(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		c, at := consentedApp(t, e, u, "Lock Keeper")
		other := e.NewUser(t, apptest.UserSpec{})

		list := e.Call(t, "GET", "/v1/users/me/consents", u.Token, nil, http.StatusOK).JSON()["consents"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["client_id"] != c.ID || list[0].(map[string]any)["client_name"] != "Lock Keeper" {
			t.Fatalf("consents: %v", list)
		}
		if l := e.Call(t, "GET", "/v1/users/me/consents", other.Token, nil, http.StatusOK).JSON()["consents"].([]any); len(l) != 0 {
			t.Errorf("another user sees %v", l)
		}
		// A system key acts for no user; an OAuth token is not accepted here.
		e.Call(t, "GET", "/v1/users/me/consents", e.SystemKey, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/me/consents/"+c.ID, e.SystemKey, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/me/consents/"+c.ID, at, nil, http.StatusForbidden)
		// Another user has no consent to revoke; a malformed id is no consent either.
		e.Call(t, "DELETE", "/v1/users/me/consents/"+c.ID, other.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/me/consents/not-a-uuid", u.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)

		r := e.Call(t, "DELETE", "/v1/users/me/consents/"+c.ID, u.Token, nil, http.StatusOK).JSON()
		if r["success"] != true {
			t.Errorf("revoke: %v", r)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized)
		if l := e.Call(t, "GET", "/v1/users/me/consents", u.Token, nil, http.StatusOK).JSON()["consents"].([]any); len(l) != 0 {
			t.Errorf("after revoking: %v", l)
		}
		if n := auditCount(t, e, "consent_revoked", c.ID); n != 1 {
			t.Errorf("%d consent_revoked events", n)
		}
		e.Call(t, "DELETE", "/v1/users/me/consents/"+c.ID, u.Token, nil, http.StatusNotFound)
	})
}

func TestConsoleDataExport(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		consentedApp(t, e, u, "Tide Tables")
		b := signedInBrowser(t, e, u)
		p := b.get("/account/data")
		if p.status != http.StatusOK || !strings.Contains(p.body, `href="/account/data/export"`) || !strings.Contains(p.body, "You have not downloaded your data yet") {
			t.Fatalf("data page: %d %s", p.status, p.body)
		}

		z := b.get("/account/data/export")
		if z.status != http.StatusOK {
			t.Fatalf("download: %d %s", z.status, z.body)
		}
		files := openZip(t, []byte(z.body))
		var data struct {
			User struct {
				ID, Username string
			}
			ConnectedApps []struct{ Name string }
		}
		if err := json.Unmarshal(files["data.json"], &data); err != nil {
			t.Fatalf("data.json: %v", err)
		}
		if data.User.ID != u.ID || data.User.Username != u.Username || len(data.ConnectedApps) != 1 || data.ConnectedApps[0].Name != "Tide Tables" {
			t.Errorf("data.json: %s", files["data.json"])
		}
		if len(files["report.pdf"]) == 0 || len(files["README.txt"]) == 0 {
			t.Errorf("archive files: %v", len(files))
		}
		// The download is in the history, as GET /v1/user/export/logs shows it.
		if n := count(t, e, `SELECT COUNT(*) FROM export_logs WHERE user_id = $1`, u.ID); n != 1 {
			t.Errorf("%d export log entries", n)
		}
		logs := e.Call(t, "GET", "/v1/user/export/logs", u.Token, nil, http.StatusOK).JSON()
		if logs["total"] != float64(1) {
			t.Errorf("export logs: %v", logs)
		}
		after := b.get("/account/data")
		if strings.Contains(after.body, "You have not downloaded") || !strings.Contains(after.body, "Earlier downloads") ||
			!strings.Contains(after.body, " KB</td>") {
			t.Errorf("history on the page: %s", after.body)
		}

		// Without a session the download leads to the login page, not to an archive.
		anon := newBrowser(t, e)
		if q := anon.get("/account/data/export"); q.status != http.StatusSeeOther || !strings.HasPrefix(q.location, "/login?") {
			t.Errorf("anonymous download: %d %q", q.status, q.location)
		}
	})
}

func TestConsoleDataDeletion(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pw = "correct horse battery"
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := signedInBrowser(t, e, u)
		p := b.get("/account/data")
		const action = "/account/data/deletion"
		if !strings.Contains(p.body, `name="password"`) || !strings.Contains(p.body, `name="confirm"`) || !strings.Contains(p.body, "data-confirm=") {
			t.Fatalf("deletion form: %s", p.body)
		}
		tok := formToken(t, p.body, action)
		scheduled := func() bool {
			return count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND scheduled_deletion_at IS NOT NULL`, u.ID) == 1
		}

		// The box unticked, or a wrong password: a field error, nothing scheduled.
		q := b.do("POST", action, url.Values{"csrf_token": {tok}, "password": {pw}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "Tick the box") || scheduled() {
			t.Fatalf("without the box: %d %s", q.status, q.body)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "password": {"wrong password"}, "confirm": {"yes"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "The password is not correct") ||
			!strings.Contains(q.body, `aria-invalid="true"`) || scheduled() {
			t.Fatalf("wrong password: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND status = 'failure'`, u.ID); n != 1 {
			t.Errorf("%d refused requests audited", n)
		}

		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "password": {pw}, "confirm": {"yes"}})
		if q.status != http.StatusSeeOther || q.location != "/account/data" {
			t.Fatalf("request: %d %q %s", q.status, q.location, q.body)
		}
		want := e.Clock.Now().Add(7 * 24 * time.Hour)
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND scheduled_deletion_at = $2 AND deleted_at IS NULL`, u.ID, db.TS(want)); n != 1 {
			t.Fatal("the deletion is not scheduled 7 days ahead with the account still active")
		}
		st := e.Call(t, "GET", "/v1/users/me/deletion", u.Token, nil, http.StatusOK).JSON()
		if st["is_scheduled_for_deletion"] != true || st["is_deleted"] != false || st["scheduled_deletion_at"] != want.Format(time.RFC3339) {
			t.Errorf("status: %v", st)
		}
		// The account stays usable during the grace period; the page shows the date and the cancel button.
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		sp := b.get("/account/data")
		if !strings.Contains(sp.body, "Your account is scheduled for deletion") || !strings.Contains(sp.body, "Nov 29, 2026, 12:00 UTC") ||
			!strings.Contains(sp.body, `action="/account/data/deletion/cancel"`) || strings.Contains(sp.body, `name="password"`) {
			t.Fatalf("scheduled page: %s", sp.body)
		}

		c := b.do("POST", "/account/data/deletion/cancel", url.Values{"csrf_token": {formToken(t, sp.body, "/account/data/deletion/cancel")}})
		if c.status != http.StatusSeeOther || scheduled() {
			t.Fatalf("cancel: %d %s", c.status, c.body)
		}
		if cp := b.get("/account/data"); !strings.Contains(cp.body, "The deletion was cancelled") || !strings.Contains(cp.body, `name="password"`) {
			t.Errorf("after cancelling: %s", cp.body)
		}
		// Cancelling what is not scheduled is refused on the page.
		if again := b.do("POST", "/account/data/deletion/cancel", url.Values{"csrf_token": {tok}}); again.status != http.StatusBadRequest {
			t.Errorf("cancelling twice: %d", again.status)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND status = 'success' AND source_service = 'id'`, u.ID); n != 2 {
			t.Errorf("%d audited page actions, want the request and the cancellation", n)
		}
	})
}

func TestOwnDeletionREST(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pw = "correct horse battery"
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		const path = "/v1/users/me/deletion"

		// An API key is not the person: the routes need a session.
		key, _ := e.NewAPIKey(t, u.ID)
		e.Call(t, "POST", path, key, map[string]any{"password": pw}, http.StatusForbidden)
		e.Call(t, "GET", path, e.SystemKey, nil, http.StatusForbidden)

		e.Call(t, "POST", path, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", path, u.Token, map[string]any{"password": "not it"}, http.StatusBadRequest)
		e.Call(t, "DELETE", path, u.Token, nil, http.StatusBadRequest) // nothing to cancel
		if st := e.Call(t, "GET", path, u.Token, nil, http.StatusOK).JSON(); st["is_scheduled_for_deletion"] != false {
			t.Fatalf("scheduled by refused requests: %v", st)
		}

		r := e.Call(t, "POST", path, u.Token, map[string]any{"password": pw}, http.StatusOK).JSON()
		if r["success"] != true || r["scheduled_deletion_at"] != e.Clock.Now().Add(deletion.GracePeriod).Format(time.RFC3339) {
			t.Fatalf("request: %v", r)
		}
		e.Call(t, "POST", path, u.Token, map[string]any{"password": pw}, http.StatusConflict)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND status = 'success'`, u.ID); n != 1 {
			t.Errorf("%d deletion_requested events", n)
		}
		e.Call(t, "DELETE", path, u.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)

		// Scheduled again and left alone: the purge deletes the account when the grace period ends.
		e.Call(t, "POST", path, u.Token, map[string]any{"password": pw}, http.StatusOK)
		e.Advance(t, deletion.GracePeriod-time.Minute)
		if n := purge(t, e); n != 0 {
			t.Fatalf("purged %d before the time", n)
		}
		e.Advance(t, 2*time.Minute)
		if n := purge(t, e); n != 1 {
			t.Fatalf("purged %d", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1`, u.ID); n != 0 {
			t.Error("the account outlived its grace period")
		}
	})
}

func TestOwnDeletionThrottledAndSecondFactor(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const path = "/v1/users/me/deletion"
		// Wrong passwords count as failed logins of the account: after five, even the right one waits.
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		ub := signedInBrowser(t, e, u)
		form := ub.get("/account/data").body
		for i := 0; i < 5; i++ {
			e.Call(t, "POST", path, u.Token, map[string]any{"password": "guess"}, http.StatusBadRequest)
		}
		r := e.Call(t, "POST", path, u.Token, map[string]any{"password": "correct horse battery"}, http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		// The page says so above the form, and schedules nothing.
		q := ub.do("POST", "/account/data/deletion", url.Values{"csrf_token": {formToken(t, form, "/account/data/deletion")},
			"password": {"correct horse battery"}, "confirm": {"yes"}})
		if q.status != http.StatusTooManyRequests || !strings.Contains(q.body, `<p class="alert" role="alert">Too many attempts`) {
			t.Errorf("throttled on the page: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND scheduled_deletion_at IS NOT NULL`, u.ID); n != 0 {
			t.Error("a throttled request scheduled the deletion")
		}

		// Without a password the second factor confirms; without either there is nothing to confirm with.
		d, _ := providerUser(t, e, "discord")
		e.Call(t, "POST", path, d.Token, map[string]any{"code": "123456"}, http.StatusForbidden)
		b := browserWithToken(t, e, d.Token)
		if p := b.get("/account/data"); !strings.Contains(p.body, "Turn on two-factor authentication first") || strings.Contains(p.body, `action="/account/data/deletion"`) {
			t.Errorf("page without a way to confirm: %s", p.body)
		}
		secret, codes := tfEnable(t, e, d)
		p := b.get("/account/data")
		if !strings.Contains(p.body, `name="code"`) || strings.Contains(p.body, `name="password"`) {
			t.Errorf("page for a two-factor user: %s", p.body)
		}
		q = b.do("POST", "/account/data/deletion", url.Values{"csrf_token": {formToken(t, p.body, "/account/data/deletion")},
			"code": {tfWrongCode(t, secret, e.Clock.Now())}, "confirm": {"yes"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="delete-error" role="alert"`) || !strings.Contains(q.body, "invalid two-factor code") {
			t.Errorf("wrong code on the page: %d %s", q.status, q.body)
		}
		e.Call(t, "POST", path, d.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", path, d.Token, map[string]any{"code": tfWrongCode(t, secret, e.Clock.Now())}, http.StatusBadRequest)
		e.Call(t, "POST", path, d.Token, map[string]any{"code": codes[0]}, http.StatusOK)
		if n := count(t, e, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1 AND used_at IS NOT NULL`, d.ID); n != 1 {
			t.Errorf("%d backup codes spent", n)
		}
		e.Call(t, "DELETE", path, d.Token, nil, http.StatusOK)
		e.Call(t, "POST", path, d.Token, map[string]any{"code": codes[0]}, http.StatusBadRequest) // single use
		e.Call(t, "POST", path, d.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now().Add(30*time.Second))}, http.StatusOK)
	})
}

// developerSecretRE finds a secret shown once on a developer page.
var developerSecretRE = regexp.MustCompile(`id="(?:client-secret|api-key)">([^<]+)</div>`)

// developerSecret returns the secret a developer page shows, or "".
func developerSecret(body string) string {
	if m := developerSecretRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// clientForm is a valid registration form.
func clientForm(name string, extra ...string) url.Values {
	f := url.Values{"name": {name}, "description": {"console test"}, "client_type": {"confidential"},
		"redirect_uris": {cb + "\r\n\r\n  myapp://callback  "}, "allowed_scopes": {"openid", "profile", "email"},
		"id_token_signed_response_alg": {"HS256"}, "homepage_url": {""}, "logo_url": {""}, "privacy_policy_url": {""}, "terms_of_service_url": {""}}
	for i := 0; i+1 < len(extra); i += 2 {
		f[extra[i]] = []string{extra[i+1]}
	}
	return f
}

func TestConsoleDeveloperClients(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		list := b.get("/account/developer")
		if list.status != http.StatusOK || !strings.Contains(list.body, "Your OAuth clients") || !strings.Contains(list.body, "Your API keys") ||
			!strings.Contains(list.body, `href="/account/developer/clients/new"`) || !strings.Contains(list.body, `aria-current="page"`) {
			t.Fatalf("developer page: %d %s", list.status, list.body)
		}
		clients := func() int {
			return count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE owner_id = $1`, dev.ID)
		}

		// Bad input: a field error, 400, nothing registered.
		for _, c := range []struct{ field, value, want string }{
			{"redirect_uris", "not a uri", `id="redirect_uris-error"`},
			{"redirect_uris", "https://app.example/cb#frag", `id="redirect_uris-error"`},
			{"allowed_scopes", "bogus", `id="allowed_scopes-error"`},
			{"name", " ", `id="name-error"`},
			{"homepage_url", "ftp://x", `id="homepage_url-error"`},
			{"post_logout_redirect_uris", "https://app.example/bye#frag", `id="postlogout-error"`},
			// Logout tokens need an asymmetric algorithm (HS256 here).
			{"backchannel_logout_uri", "https://app.example/bcl", `id="backchannel-error"`},
		} {
			p := postFrom(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Bad App", c.field, c.value))
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, c.want) || !strings.Contains(p.body, "Nothing was saved") ||
				(c.field != "allowed_scopes" && !strings.Contains(p.body, `aria-invalid="true"`)) {
				t.Errorf("%s=%q: %d %s", c.field, c.value, p.status, p.body)
			}
			if !strings.Contains(p.body, `value="Bad App"`) && c.field != "name" {
				t.Errorf("%s=%q: the form lost the entered name", c.field, c.value)
			}
		}
		if n := clients(); n != 0 {
			t.Fatalf("bad input registered %d clients", n)
		}
		// The first-party box is for super admins only: not shown, and refused when sent anyway.
		if strings.Contains(b.get("/account/developer/clients/new").body, `name="is_first_party"`) {
			t.Error("the first-party box is shown to a developer")
		}
		if p := postFrom(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Mine", "is_first_party", "yes")); p.status != http.StatusForbidden ||
			!strings.Contains(p.body, `id="firstparty-error"`) || clients() != 0 {
			t.Errorf("first party by a developer: %d %s", p.status, p.body)
		}

		// Register: the answer shows the secret once, and the secret works at the token endpoint.
		p := postFrom(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Console App"))
		secret := developerSecret(p.body)
		if p.status != http.StatusCreated || !strings.HasPrefix(secret, "hm_sec_") || !strings.Contains(p.body, "only time the secret is shown") {
			t.Fatalf("register: %d %s", p.status, p.body)
		}
		var clientID string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT id FROM oauth_clients WHERE owner_id = $1`, dev.ID).Scan(&clientID); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.body, `data-location="/account/developer/clients/`+clientID+`"`) {
			t.Error("the secret page does not name the client's page")
		}
		got := e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Console App" || got["client_type"] != "confidential" || len(got["redirect_uris"].([]any)) != 2 || got["is_first_party"] != false {
			t.Fatalf("registered client: %v", got)
		}
		c := testClient{ID: clientID, Secret: secret}
		if r := exchange(t, e, c, getCode(t, e, dev.Token, authzParams(clientID))); r.Status != http.StatusOK {
			t.Fatalf("token with the shown secret: %d %s", r.Status, r.Body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'client_created' AND resource_id = $1 AND source_service = 'id'`, clientID); n != 1 {
			t.Errorf("client_created events from the pages: %d", n)
		}
		// The client's page and the list never show it again.
		page := b.get("/account/developer/clients/" + clientID)
		if page.status != http.StatusOK || strings.Contains(page.body, secret) || developerSecret(page.body) != "" || !strings.Contains(page.body, clientID) {
			t.Fatalf("client page: %d %s", page.status, page.body)
		}
		if l := b.get("/account/developer"); !strings.Contains(l.body, "Console App") || strings.Contains(l.body, secret) {
			t.Errorf("list: %s", l.body)
		}

		// Edit: names, URLs, redirect URIs, scopes, logout.
		edit := clientForm("Renamed App", "redirect_uris", cb, "homepage_url", "https://app.example/", "is_active", "yes",
			"post_logout_redirect_uris", "https://app.example/bye\n", "backchannel_logout_uri", "https://app.example/bcl",
			"id_token_signed_response_alg", "ES256")
		edit["allowed_scopes"] = []string{"openid", "email", "offline_access"}
		if q := postFrom(t, b, "/account/developer/clients/"+clientID, "/account/developer/clients/"+clientID, edit); q.status != http.StatusSeeOther || q.location != "/account/developer/clients/"+clientID {
			t.Fatalf("edit: %d %q %s", q.status, q.location, q.body)
		}
		got = e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Renamed App" || got["homepage_url"] != "https://app.example/" || len(got["redirect_uris"].([]any)) != 1 ||
			!containsAny(got["allowed_scopes"].([]any), "offline_access") || containsAny(got["allowed_scopes"].([]any), "profile") ||
			got["backchannel_logout_uri"] != "https://app.example/bcl" || !containsAny(got["post_logout_redirect_uris"].([]any), "https://app.example/bye") {
			t.Fatalf("edited client: %v", got)
		}
		if after := b.get("/account/developer/clients/" + clientID); !strings.Contains(after.body, "The client was saved.") {
			t.Error("no confirmation after saving")
		}
		bad := clientForm("Not Saved", "redirect_uris", "javascript://x", "is_active", "yes")
		if q := postFrom(t, b, "/account/developer/clients/"+clientID, "/account/developer/clients/"+clientID, bad); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="redirect_uris-error"`) || !strings.Contains(q.body, "javascript://x") ||
			!strings.Contains(q.body, `value="Not Saved"`) || !strings.Contains(q.body, `<h2 id="client-h">Renamed App`) {
			t.Errorf("edit with a bad redirect URI: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE id = $1 AND name = 'Renamed App'`, clientID); n != 1 {
			t.Error("a refused edit changed the client")
		}

		// Regenerate: needs the box; the new secret is shown once and the old one dies.
		regen := "/account/developer/clients/" + clientID + "/secret"
		if q := postFrom(t, b, "/account/developer/clients/"+clientID, regen, url.Values{}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="confirm_regen-error"`) {
			t.Errorf("regenerate without the box: %d %s", q.status, q.body)
		}
		q := postFrom(t, b, "/account/developer/clients/"+clientID, regen, url.Values{"confirm": {"yes"}})
		newSecret := developerSecret(q.body)
		if q.status != http.StatusOK || newSecret == "" || newSecret == secret {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		edited := authzParams(clientID, "scope", "openid email")
		oauthErr(t, exchange(t, e, c, getCode(t, e, dev.Token, edited)), http.StatusUnauthorized, "invalid_client")
		c.Secret = newSecret
		if r := exchange(t, e, c, getCode(t, e, dev.Token, edited)); r.Status != http.StatusOK {
			t.Fatalf("token with the new secret: %d %s", r.Status, r.Body)
		}

		// Someone else: the client is not theirs to see or delete (404, as REST).
		other := e.NewUser(t, apptest.UserSpec{Password: "another good password"})
		ob := signedInBrowser(t, e, other)
		if op := ob.get("/account/developer/clients/" + clientID); op.status != http.StatusNotFound || strings.Contains(op.body, "Renamed App") {
			t.Errorf("another user's view: %d %s", op.status, op.body)
		}
		ol := ob.get("/account/developer")
		if ol.status != http.StatusOK || strings.Contains(ol.body, "Renamed App") || strings.Contains(ol.body, "Your API keys") {
			t.Errorf("another user's list: %d %s", ol.status, ol.body)
		}
		otok := formToken(t, ob.get("/account/developer/clients/new").body, "/account/developer/clients")
		if op := ob.do("POST", "/account/developer/clients/"+clientID+"/delete", url.Values{"csrf_token": {otok}, "confirm": {"yes"}}); op.status != http.StatusNotFound || clients() != 1 {
			t.Errorf("another user's delete: %d", op.status)
		}

		// Delete: needs the box, then the client is gone.
		del := "/account/developer/clients/" + clientID + "/delete"
		if q := postFrom(t, b, "/account/developer/clients/"+clientID, del, url.Values{}); q.status != http.StatusBadRequest || clients() != 1 {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := postFrom(t, b, "/account/developer/clients/"+clientID, del, url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/account/developer" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusNotFound)
		if l := b.get("/account/developer"); !strings.Contains(l.body, "The client was deleted.") || strings.Contains(l.body, clientID) {
			t.Errorf("list after delete: %s", l.body)
		}

		// A super admin is offered the first-party box; a first-party client is locked.
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		ab := signedInBrowser(t, e, admin)
		if !strings.Contains(ab.get("/account/developer/clients/new").body, `name="is_first_party"`) {
			t.Fatal("no first-party box for a super admin")
		}
		fp := postFrom(t, ab, "/account/developer/clients/new", "/account/developer/clients", clientForm("Our App", "is_first_party", "yes", "client_type", "public"))
		if fp.status != http.StatusCreated || developerSecret(fp.body) != "" || !strings.Contains(fp.body, "first-party client: it cannot be changed") ||
			strings.Contains(fp.body, "/delete") || strings.Contains(fp.body, "/secret") {
			t.Errorf("first-party public client: %d %s", fp.status, fp.body)
		}
	})
}

func TestConsoleDeveloperKeys(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		keys := func() int { return count(t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, dev.ID) }
		form := b.get("/account/developer/keys/new")
		// The chooser offers the caller's own permissions only.
		if form.status != http.StatusOK || !strings.Contains(form.body, `value="api_keys:read"`) || !strings.Contains(form.body, `value="two_factor:read"`) ||
			strings.Contains(form.body, `value="users:read"`) || strings.Contains(form.body, `value="*:*"`) {
			t.Fatalf("key form: %d %s", form.status, form.body)
		}
		today := e.Clock.Now().UTC()
		for _, c := range []struct {
			form   url.Values
			status int
			want   string
		}{
			{url.Values{"name": {"k"}, "scopes": {"users:read"}}, http.StatusForbidden, `id="scopes-error"`},
			{url.Values{"name": {"k"}, "scopes": {"nope:nope"}}, http.StatusBadRequest, `id="scopes-error"`},
			{url.Values{"name": {"k"}, "expires": {today.AddDate(0, 0, -1).Format("2006-01-02")}}, http.StatusBadRequest, `id="expires-error"`},
			{url.Values{"name": {"k"}, "expires": {"next week"}}, http.StatusBadRequest, `id="expires-error"`},
			{url.Values{"name": {""}}, http.StatusBadRequest, `id="name-error"`},
		} {
			p := postFrom(t, b, "/account/developer/keys/new", "/account/developer/keys", c.form)
			if p.status != c.status || !strings.Contains(p.body, c.want) || developerSecret(p.body) != "" {
				t.Errorf("%v: %d %s", c.form, p.status, p.body)
			}
		}
		if n := keys(); n != 0 {
			t.Fatalf("refused forms created %d keys", n)
		}

		// Create: the key is shown once and works as a bearer on the API.
		p := postFrom(t, b, "/account/developer/keys/new", "/account/developer/keys", url.Values{
			"name": {"ci"}, "description": {"for CI"}, "scopes": {"api_keys:read", "two_factor:read"}, "expires": {today.Format("2006-01-02")}})
		key := developerSecret(p.body)
		if p.status != http.StatusCreated || !strings.HasPrefix(key, "hm_") {
			t.Fatalf("create key: %d %s", p.status, p.body)
		}
		kl := e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK).JSON()["data"].([]any)
		if len(kl) != 1 {
			t.Fatalf("the key lists %d keys", len(kl))
		}
		k := kl[0].(map[string]any)
		keyID := k["id"].(string)
		if k["name"] != "ci" || len(k["scopes"].([]any)) != 2 || !strings.HasPrefix(k["expires_at"].(string), today.Format("2006-01-02")+"T23:59:59") {
			t.Fatalf("created key: %v", k)
		}
		e.Call(t, "GET", "/v1/roles", key, nil, http.StatusForbidden) // only its scopes
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'api_key_created' AND resource_id = $1 AND source_service = 'id'`, keyID); n != 1 {
			t.Errorf("api_key_created events from the pages: %d", n)
		}
		page := b.get("/account/developer/keys/" + keyID)
		if page.status != http.StatusOK || strings.Contains(page.body, key) || !strings.Contains(page.body, "two_factor:read") {
			t.Fatalf("key page: %d %s", page.status, page.body)
		}
		if l := b.get("/account/developer"); !strings.Contains(l.body, "ci") || strings.Contains(l.body, key) {
			t.Errorf("list: %s", l.body)
		}

		// Key roles: only roles the caller holds are offered and accepted.
		if !strings.Contains(page.body, `<option value="role_developer">`) || strings.Contains(page.body, `<option value="role_admin">`) {
			t.Errorf("role choice: %s", page.body)
		}
		roles := "/account/developer/keys/" + keyID + "/roles"
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, roles, url.Values{"role_id": {"role_admin"}}); q.status != http.StatusForbidden || !strings.Contains(q.body, `id="role_id-error"`) {
			t.Errorf("a role the caller lacks: %d %s", q.status, q.body)
		}
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, roles, url.Values{"role_id": {"role_developer"}}); q.status != http.StatusSeeOther {
			t.Fatalf("add role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+keyID+"/roles", dev.Token, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 1 {
			t.Fatalf("key roles after adding: %v", rl)
		}
		remove := roles + "/role_developer/remove"
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, remove, url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("remove role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+keyID+"/roles", dev.Token, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 0 {
			t.Fatalf("key roles after removing: %v", rl)
		}

		// Regenerate: shown once, the old value dead at once.
		regen := "/account/developer/keys/" + keyID + "/regenerate"
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, regen, url.Values{}); q.status != http.StatusBadRequest {
			t.Errorf("regenerate without the box: %d", q.status)
		}
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK)
		q := postFrom(t, b, "/account/developer/keys/"+keyID, regen, url.Values{"confirm": {"yes"}})
		newKey := developerSecret(q.body)
		if q.status != http.StatusOK || newKey == "" || newKey == key {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusOK)

		// A user without the API key permissions: no key section, and the actions are refused pages.
		plain := e.NewUser(t, apptest.UserSpec{Password: "another good password"})
		pb := signedInBrowser(t, e, plain)
		pl := pb.get("/account/developer")
		if pl.status != http.StatusOK || strings.Contains(pl.body, "Your API keys") {
			t.Errorf("plain user's page: %d %s", pl.status, pl.body)
		}
		// The console's CSRF token, from a form the user may use.
		tok := formToken(t, pb.get("/account/developer/clients/new").body, "/account/developer/clients")
		for _, a := range []struct{ method, path string }{
			{"GET", "/account/developer/keys/new"},
			{"GET", "/account/developer/keys/" + keyID},
			{"POST", "/account/developer/keys"},
			{"POST", regen},
			{"POST", "/account/developer/keys/" + keyID + "/delete"},
			{"POST", roles},
		} {
			var form url.Values
			if a.method == "POST" {
				form = url.Values{"csrf_token": {tok}, "name": {"sneaky"}, "confirm": {"yes"}, "role_id": {"role_user"}}
			}
			r := pb.do(a.method, a.path, form)
			if r.status != http.StatusForbidden || !strings.Contains(r.body, "<html") || !strings.Contains(r.body, "missing permission api_keys:") {
				t.Errorf("%s %s by a user without the permission: %d %s", a.method, a.path, r.status, r.body)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, plain.ID); n != 0 {
			t.Errorf("the refused user has %d keys", n)
		}
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusOK)

		// Delete: needs the box, then the key is refused.
		del := "/account/developer/keys/" + keyID + "/delete"
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, del, url.Values{}); q.status != http.StatusBadRequest || keys() != 1 {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := postFrom(t, b, "/account/developer/keys/"+keyID, del, url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/account/developer" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusUnauthorized)
		if l := b.get("/account/developer"); !strings.Contains(l.body, "The API key was deleted.") {
			t.Errorf("list after delete: %s", l.body)
		}

		// In the user's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, dev.ID)
		if l := b.get("/account/developer"); !strings.Contains(l.body, `lang="de"`) || !strings.Contains(l.body, "Ihre API-Schlüssel") || !strings.Contains(l.body, "Ihre OAuth-Clients") {
			t.Errorf("German page: %s", l.body)
		}
		if f := b.get("/account/developer/keys/new"); !strings.Contains(f.body, "API-Schlüssel erstellen") || !strings.Contains(f.body, "Läuft ab") {
			t.Errorf("German key form: %s", f.body)
		}
	})
}

// activityRowRE finds the event rows of the activity page, in order.
var activityRowRE = regexp.MustCompile(`<tr id="event-([^"]+)">`)

// activityIDs returns the event ids the activity page lists, in order.
func activityIDs(body string) []string {
	out := []string{}
	for _, m := range activityRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// activityLink returns the href of the pager link with rel, "" when none.
func activityLink(body, rel string) string {
	m := regexp.MustCompile(`<a href="([^"]+)" rel="` + rel + `">`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestConsoleActivity(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		for i := range 12 {
			record(t, e, audit.Event{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "203.0.113.9",
				UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"})
			if i%3 == 0 {
				record(t, e, audit.Event{UserID: u.ID, EventType: audit.LoginFailed, ResourceType: "session", Failed: true, ErrorMessage: "wrong password"})
			}
		}
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", ResourceID: "k1"})
		otherEv := record(t, e, audit.Event{UserID: other.ID, EventType: audit.Login})
		b := signedInBrowser(t, e, u)

		// The page lists exactly the rows of GET /v1/users/me/audit, for each
		// filter and page.
		for _, q := range []string{"", "?event_type=login", "?status=failure", "?resource_type=api_key",
			"?limit=10&page=2", "?event_type=login&status=success&limit=5&page=3", "?page=99"} {
			p := b.get("/account/activity" + q)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %d %s", q, p.status, p.body)
			}
			want := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusOK)), "id")
			if got := activityIDs(p.body); !slices.Equal(got, want) {
				t.Errorf("%s: page %v, REST %v", q, got, want)
			}
			if slices.Contains(activityIDs(p.body), otherEv) {
				t.Errorf("%s: another user's event is listed", q)
			}
		}
		// Paging links keep the filter; following them walks the REST pages.
		p := b.get("/account/activity?event_type=login&limit=5")
		if !strings.Contains(p.body, "Events 1–5 of 13") || !strings.Contains(p.body, "Page 1 of 3") {
			t.Fatalf("first page: %s", p.body)
		}
		for n := 2; n <= 3; n++ {
			next := activityLink(p.body, "next")
			u2, err := url.Parse(next)
			if err != nil || u2.Query().Get("event_type") != "login" || u2.Query().Get("limit") != "5" {
				t.Fatalf("next link %q", next)
			}
			p = b.get(next)
			want := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=login&limit=5&page="+u2.Query().Get("page"), u.Token, nil, http.StatusOK)), "id")
			if got := activityIDs(p.body); len(got) == 0 || !slices.Equal(got, want) {
				t.Fatalf("page %d: %v, REST %v", n, got, want)
			}
		}
		if activityLink(p.body, "next") != "" || activityLink(p.body, "prev") == "" {
			t.Error("the last page links onward or not back")
		}
		// The events are readable: words, browser and system, result.
		p = b.get("/account/activity?resource_type=session&status=failure&limit=1")
		if !strings.Contains(p.body, "Sign-in attempt failed") || !strings.Contains(p.body, "wrong password") ||
			!strings.Contains(p.body, "Failed") || strings.Contains(p.body, ">login_failed<") {
			t.Errorf("failed sign-in row: %s", p.body)
		}
		if p := b.get("/account/activity?event_type=login&limit=2"); !strings.Contains(p.body, "Chrome") || !strings.Contains(p.body, "Linux") ||
			!strings.Contains(p.body, "203.0.113.9") {
			t.Errorf("sign-in row: %s", p.body)
		}

		// Bad filter values are a field error with the API's status, not a 500.
		for q, errID := range map[string]string{"?event_type=nope": "f-event-err", "?status=ok": "f-status-err"} {
			p := b.get("/account/activity" + q)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="`+errID+`"`) || !strings.Contains(p.body, `aria-invalid="true"`) ||
				len(activityIDs(p.body)) != 0 {
				t.Errorf("%s: %d %s", q, p.status, p.body)
			}
			e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusBadRequest)
		}

		// "This wasn't me".
		list := b.get("/account/activity?event_type=api_key_created")
		ids := activityIDs(list.body)
		if len(ids) != 1 {
			t.Fatalf("api key events %v", ids)
		}
		ev := ids[0]
		action := "/account/activity/" + ev + "/report"
		tok := formToken(t, list.body, action)
		if !strings.Contains(list.body, `<input type="hidden" name="event_type" value="api_key_created">`) {
			t.Error("the report form does not keep the filter")
		}
		reports := func() int { return count(t, e, `SELECT COUNT(*) FROM audit_reports WHERE user_id = $1`, u.ID) }
		if q := b.do("POST", action, url.Values{"reason": {"not_me"}}); q.status != http.StatusForbidden || reports() != 0 {
			t.Fatalf("report without CSRF: %d", q.status)
		}
		q := b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"bored"}, "description": {"keep me"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="reason-`+ev+`-err"`) || !strings.Contains(q.body, "keep me") ||
			!strings.Contains(q.body, "<details class=\"report\" open>") || reports() != 0 {
			t.Fatalf("bad reason: %d %s", q.status, q.body)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"not_me"}, "description": {strings.Repeat("x", audit.MaxReportText+1)}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="desc-`+ev+`-err"`) || reports() != 0 {
			t.Fatalf("long description: %d", q.status)
		}
		q = b.do("POST", "/account/activity/"+otherEv+"/report", url.Values{"csrf_token": {tok}, "reason": {"not_me"}})
		if q.status != http.StatusNotFound || reports() != 0 || count(t, e, `SELECT COUNT(*) FROM audit_reports`) != 0 {
			t.Fatalf("another user's event: %d", q.status)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"not_me"}, "description": {"I made no key"}, "event_type": {"api_key_created"}})
		if q.status != http.StatusSeeOther || q.location != "/account/activity?event_type=api_key_created" {
			t.Fatalf("report: %d %q %s", q.status, q.location, q.body)
		}
		after := b.get(q.location)
		if !strings.Contains(after.body, "The event is reported") || !strings.Contains(after.body, "Report: Waiting for review") ||
			strings.Contains(after.body, `action="`+action+`"`) || !strings.Contains(after.body, "Your reports") ||
			!strings.Contains(after.body, "I made no key") {
			t.Fatalf("after reporting: %s", after.body)
		}
		// REST shows the same report, with its status.
		mine := e.Call(t, "GET", "/v1/users/me/audit/reports", u.Token, nil, http.StatusOK).Array()
		if len(mine) != 1 {
			t.Fatalf("reports %v", mine)
		}
		rep := mine[0].(map[string]any)
		if rep["audit_event_id"] != ev || rep["reason"] != "not_me" || rep["status"] != "pending" || rep["description"] != "I made no key" {
			t.Fatalf("report %v", rep)
		}
		if evs := auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=api_key_created", u.Token, nil, http.StatusOK)); evs[0]["is_reported"] != true {
			t.Fatalf("event not reported: %v", evs[0])
		}
		// A second report is refused on the page as by REST.
		if q := b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"other"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "already reported") || reports() != 1 {
			t.Fatalf("second report: %d %s", q.status, q.body)
		}
		// A review shows on the page.
		e.Call(t, "PATCH", "/v1/admin/audit/reports/"+rep["id"].(string), admin.Token,
			map[string]any{"status": "resolved", "resolution_notes": "A key your script made."}, http.StatusOK)
		if p := b.get("/account/activity"); !strings.Contains(p.body, "Report: Resolved") || !strings.Contains(p.body, "A key your script made.") {
			t.Fatalf("after review: %s", p.body)
		}

		// In the user's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		de := b.get("/account/activity?event_type=api_key_created")
		if !strings.Contains(de.body, "Kontoaktivität") || !strings.Contains(de.body, "API-Schlüssel erstellt") ||
			!strings.Contains(de.body, e.Clock.Now().UTC().Format("02.01.2006")) || !strings.Contains(de.body, "Meldung: Erledigt") {
			t.Fatalf("German page: %s", de.body)
		}
	})
}

func TestConsoleIntegrations(t *testing.T) {
	t.Parallel()
	fake := newFakeStreamPlatform(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		other := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		b := signedInBrowser(t, e, u)
		rest := func() []integrations.Integration {
			var all []integrations.Integration
			e.Call(t, "GET", "/v1/integrations", u.Token, nil, http.StatusOK).Decode(t, &all)
			return all
		}

		p := b.get("/account/integrations")
		if p.status != http.StatusOK || !strings.Contains(p.body, "No streaming account is connected yet") ||
			!strings.Contains(p.body, `action="/account/integrations/connect"`) {
			t.Fatalf("empty page: %d %s", p.status, p.body)
		}
		tok := formToken(t, p.body, "/account/integrations/connect")

		// An unknown scope is refused and starts nothing.
		if q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}, "scope": {"everything"}}); q.status != http.StatusBadRequest || q.location != "" {
			t.Fatalf("bad scope: %d %q", q.status, q.location)
		}
		// Connect: the page starts the flow REST starts and sends the
		// browser to the platform, whose callback returns to the page.
		q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}, "scope": {"chat:read"}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("connect: %d %s", q.status, q.body)
		}
		au, _ := url.Parse(q.location)
		if !strings.HasPrefix(q.location, fake.URL+"/oauth2/authorize?") || au.Query().Get("scope") != "moderator:read:followers chat:read" ||
			au.Query().Get("redirect_uri") != e.URL+"/v1/integrations/callback/streamplatform" {
			t.Fatalf("authorization URL %s", q.location)
		}
		cb := b.get("/v1/integrations/callback/streamplatform?" + url.Values{"code": {"good-code"}, "state": {au.Query().Get("state")}}.Encode())
		back, _ := url.Parse(cb.location)
		if cb.status != http.StatusFound || !strings.HasPrefix(cb.location, e.URL+"/account/integrations?") || back.Query().Get("integration_id") == "" {
			t.Fatalf("callback: %d %q %s", cb.status, cb.location, cb.body)
		}
		id := back.Query().Get("integration_id")
		p = b.get(cb.location)
		if p.status != http.StatusOK || !strings.Contains(p.body, "Your streaming account TwitchDev (twitchdev) is connected") ||
			!strings.Contains(p.body, "Read your chat (chat bot)") {
			t.Fatalf("after connecting: %s", p.body)
		}
		if all := rest(); len(all) != 1 || all[0].ID != id || all[0].BotStatus != "active" {
			t.Fatalf("REST after connecting: %+v", all)
		}

		// Statistics are read from the platform and shown in the answer.
		q = b.do("POST", "/account/integrations/"+id+"/stats", url.Values{"csrf_token": {tok}})
		if q.status != http.StatusOK || !strings.Contains(q.body, "<dd>8</dd>") || !strings.Contains(q.body, "<dd>3</dd>") ||
			!strings.Contains(q.body, "<dd>42<") || !strings.Contains(q.body, "Building hmid") {
			t.Fatalf("stats: %d %s", q.status, q.body)
		}

		// Refresh.
		e.Clock.Advance(time.Hour)
		q = b.do("POST", "/account/integrations/"+id+"/refresh", url.Values{"csrf_token": {tok}})
		if q.status != http.StatusSeeOther || q.location != "/account/integrations" {
			t.Fatalf("refresh: %d %s", q.status, q.body)
		}
		if all := rest(); all[0].LastRefreshedAt == nil || !all[0].LastRefreshedAt.Equal(e.Clock.Now()) {
			t.Fatalf("REST after refresh: %+v", all[0])
		}
		if p := b.get("/account/integrations"); !strings.Contains(p.body, "The access token was renewed") || !strings.Contains(p.body, "Token last renewed") {
			t.Fatalf("after refresh: %s", p.body)
		}

		// Bot status.
		if q := b.do("POST", "/account/integrations/"+id+"/bot-status", url.Values{"csrf_token": {tok}, "bot_status": {"paused"}}); q.status != http.StatusSeeOther {
			t.Fatalf("bot status: %d %s", q.status, q.body)
		}
		if all := rest(); all[0].BotStatus != "paused" {
			t.Fatalf("REST bot status %s", all[0].BotStatus)
		}
		for _, bad := range []url.Values{{"bot_status": {"asleep"}}, {}} {
			bad.Set("csrf_token", tok)
			if q := b.do("POST", "/account/integrations/"+id+"/bot-status", bad); q.status != http.StatusBadRequest || !strings.Contains(q.body, "bot_status") {
				t.Fatalf("bad bot status %v: %d %s", bad, q.status, q.body)
			}
		}
		if all := rest(); all[0].BotStatus != "paused" {
			t.Fatalf("REST bot status after refused changes %s", all[0].BotStatus)
		}

		// Someone else's integration is not found from their page either.
		ob := signedInBrowser(t, e, other)
		otok := formToken(t, ob.get("/account/integrations").body, "/account/integrations/connect")
		for _, action := range []string{"refresh", "stats", "disconnect"} {
			if q := ob.do("POST", "/account/integrations/"+id+"/"+action, url.Values{"csrf_token": {otok}, "confirm": {"yes"}}); q.status != http.StatusNotFound {
				t.Errorf("other user %s: %d", action, q.status)
			}
		}

		// Disconnect needs its confirmation.
		if q := b.do("POST", "/account/integrations/"+id+"/disconnect", url.Values{"csrf_token": {tok}}); q.status != http.StatusBadRequest || len(rest()) != 1 {
			t.Fatalf("unconfirmed disconnect: %d", q.status)
		}
		if q := b.do("POST", "/account/integrations/"+id+"/disconnect", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); q.status != http.StatusSeeOther {
			t.Fatalf("disconnect: %d %s", q.status, q.body)
		}
		if all := rest(); len(all) != 0 {
			t.Fatalf("REST after disconnect: %+v", all)
		}
		e.Call(t, "GET", "/v1/integrations/"+id, u.Token, nil, http.StatusNotFound)

		// Declining on the platform comes back as an explained error.
		q = b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}})
		au, _ = url.Parse(q.location)
		cb = b.get("/v1/integrations/callback/streamplatform?" + url.Values{"error": {"access_denied"}, "state": {au.Query().Get("state")}}.Encode())
		if p := b.get(cb.location); !strings.Contains(p.body, "Connecting was cancelled") {
			t.Fatalf("declined: %q %s", cb.location, p.body)
		}

		// Without the platform's client configured the page says so.
		saved := e.Server.Integrations.Provider
		e.Server.Integrations.Provider.ClientSecret = ""
		p = b.get("/account/integrations")
		if !strings.Contains(p.body, "the streaming platform is not configured") || !strings.Contains(p.body, "HMID_STREAMPLATFORM_CLIENT_ID") ||
			strings.Contains(p.body, `action="/account/integrations/connect"`) {
			t.Fatalf("unconfigured page: %s", p.body)
		}
		if q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}}); q.status != http.StatusServiceUnavailable {
			t.Fatalf("connect unconfigured: %d", q.status)
		}
		e.Server.Integrations.Provider = saved
	}, func(c *config.Config) {
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: fake.URL + "/oauth2/authorize",
			TokenURL: fake.URL + "/oauth2/token", APIURL: fake.URL + "/helix"}
	})
}

// TestConsoleActionsAreTheWebsites: actions taken on the pages are recorded
// as the website's (source_service id) or the admin console's (backend),
// not as the API's, also where the area is called without a source: the
// consent page, disconnecting an app, downloading one's data.
func TestConsoleActionsAreTheWebsites(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c, _ := consentedApp(t, e, u, "Harbour Planner")
		b := signedInBrowser(t, e, u)
		p := b.get("/account/apps")
		action := "/account/apps/" + c.ID + "/revoke"
		if q := b.post(t, p.body, action, url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("revoke: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'consent_revoked' AND resource_id = $1 AND source_service = 'id'`, c.ID); n != 1 {
			t.Fatalf("consent_revoked from the website = %d, want 1", n)
		}
		if d := b.get("/account/data/export"); d.status != http.StatusOK {
			t.Fatalf("export: %d", d.status)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'data_exported' AND user_id = $1 AND source_service = 'id'`, u.ID); n != 1 {
			t.Fatalf("data_exported from the website = %d, want 1", n)
		}
		// The API's own calls stay the API's.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'consent_granted' AND resource_id = $1 AND source_service = 'api'`, c.ID); n != 1 {
			t.Fatalf("consent_granted through the API = %d, want 1", n)
		}
	})
}

// TestDeveloperInNavigation: every user may register OAuth clients, so the
// Developer page is in every user's navigation, not only a developer's.
func TestDeveloperInNavigation(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		plain := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		b := signedInBrowser(t, e, plain)
		p := b.get("/account")
		if !strings.Contains(p.body, `href="/account/developer"`) {
			t.Fatalf("a plain user's navigation lacks the Developer page")
		}
		if d := b.get("/account/developer"); d.status != http.StatusOK {
			t.Fatalf("developer page: %d", d.status)
		}
	})
}
