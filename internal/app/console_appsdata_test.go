package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/deletion"
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
		b := cookieBrowser(t, e, d)
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

// cookieBrowser is a browser holding u's existing session as its
// cookie (for users who sign in with a provider, not the login form).
func cookieBrowser(t *testing.T, e *apptest.Env, u apptest.User) *browser {
	t.Helper()
	b := newBrowser(t, e)
	base, _ := url.Parse(e.URL)
	b.c.Jar.SetCookies(base, []*http.Cookie{{Name: "hmid_session", Value: u.Token, Path: "/"}})
	return b
}
