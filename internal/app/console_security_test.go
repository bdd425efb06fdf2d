package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/mail"
	"hmid/internal/users"
)

const secPasswordPath = "/v1/users/me/password"

// secPasswordHash is the stored hash of the user's email sign-in.
func secPasswordHash(t *testing.T, e *apptest.Env, userID string) string {
	t.Helper()
	var h string
	if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT password_hash FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`,
		userID, users.PlatformID("email")).Scan(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// secMailKinds lists the kinds of the mails sent to addr, newest first.
func secMailKinds(t *testing.T, e *apptest.Env, addr string) []string {
	t.Helper()
	var out []string
	for _, m := range outbox(t, e, addr) {
		out = append(out, m.Kind)
	}
	return out
}

func TestChangePasswordREST(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const old, next = "correct horse battery", "staple battery horse"
		u := e.NewUser(t, apptest.UserSpec{Password: old})
		other, _ := e.NewSession(t, u.ID)
		before := secPasswordHash(t, e, u.ID)

		// An API key is not a session, even the user's own.
		key, _ := e.NewAPIKey(t, u.ID, "users:write")
		e.Call(t, "POST", secPasswordPath, key, map[string]any{"current_password": old, "new_password": next}, http.StatusForbidden)
		e.Call(t, "POST", secPasswordPath, "", map[string]any{"current_password": old, "new_password": next}, http.StatusUnauthorized)

		// Refusals change nothing.
		for _, c := range []struct {
			name string
			body map[string]any
			want string
		}{
			{"wrong current password", map[string]any{"current_password": "not my password", "new_password": next}, "current_password is wrong"},
			{"no current password", map[string]any{"new_password": next}, "current_password is required"},
			{"too short", map[string]any{"current_password": old, "new_password": "short"}, "new_password must be at least 8 characters"},
			{"too long", map[string]any{"current_password": old, "new_password": strings.Repeat("x", auth.MaxPassword+1)}, "new_password must be at most 1024 bytes"},
			{"same as before", map[string]any{"current_password": old, "new_password": old}, "must differ"},
		} {
			r := e.Call(t, "POST", secPasswordPath, u.Token, c.body, http.StatusBadRequest)
			if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, c.want) {
				t.Errorf("%s: message %q, want %q", c.name, msg, c.want)
			}
		}
		e.Call(t, "POST", secPasswordPath, u.Token, `{"current_password": 1}`, http.StatusBadRequest)
		if secPasswordHash(t, e, u.ID) != before {
			t.Fatal("a refused change changed the password")
		}
		e.Call(t, "GET", "/v1/users/me", other, nil, http.StatusOK)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'password_changed' AND status = 'failure'`, u.ID); n != 1 {
			t.Fatalf("failed password_changed events = %d, want 1 (the wrong current password)", n)
		}
		if kinds := secMailKinds(t, e, u.Email); len(kinds) != 0 {
			t.Fatalf("mails after refusals: %v", kinds)
		}

		r := e.Call(t, "POST", secPasswordPath, u.Token, map[string]any{"current_password": old, "new_password": next}, http.StatusOK).JSON()
		if r["revoked_sessions"] != float64(1) || r["message"] != auth.PasswordChangedMessage {
			t.Fatalf("answer %v", r)
		}
		// The other session is signed out, the calling one stays.
		e.Call(t, "GET", "/v1/users/me", other, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		if st := loginStatus(t, e, u.Email, next); st != http.StatusOK {
			t.Fatalf("login with the new password: %d", st)
		}
		if st := loginStatus(t, e, u.Email, old); st != http.StatusUnauthorized {
			t.Fatalf("login with the old password: %d", st)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'password_changed' AND status = 'success'`, u.ID); n != 1 {
			t.Fatalf("password_changed events = %d", n)
		}
		msgs := outbox(t, e, u.Email)
		if len(msgs) != 1 || msgs[0].Kind != mail.KindPasswordChanged || !strings.Contains(msgs[0].Text, "/forgot-password") {
			t.Fatalf("mails: %+v", msgs)
		}
	})
}

func TestChangePasswordResetLinkDies(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, http.StatusOK)
		tok, _ := tokenFrom(t, e, strings.ToLower(u.Email), "password_reset")
		e.Call(t, "POST", secPasswordPath, u.Token, map[string]any{"current_password": "correct horse battery", "new_password": "a brand new one"}, http.StatusOK)
		// A reset link mailed before the change cannot undo it.
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": tok, "password": "attacker's choice"}, http.StatusBadRequest)
		if st := loginStatus(t, e, u.Email, "a brand new one"); st != http.StatusOK {
			t.Fatalf("login after the dead reset link: %d", st)
		}
	})
}

func TestChangePasswordThrottledLikeLogin(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pw = "correct horse battery"
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		// Wrong passwords share the account's allowance with failed logins:
		// guessing through this endpoint is no faster than through login.
		for i := 0; i < auth.FailPerAccount-1; i++ {
			e.Call(t, "POST", secPasswordPath, u.Token, map[string]any{"current_password": "guess", "new_password": "whatever long"}, http.StatusBadRequest)
		}
		if st := loginStatus(t, e, u.Email, "guess"); st != http.StatusUnauthorized {
			t.Fatalf("last failed login: %d", st)
		}
		r := e.Do(t, apptest.Req{Method: "POST", Path: secPasswordPath, Token: u.Token, Body: map[string]any{"current_password": pw, "new_password": "whatever long"}})
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("over the limit, even with the right password: %d %s", r.Status, r.Body)
		}
		if st := loginStatus(t, e, u.Email, pw); st != http.StatusTooManyRequests {
			t.Fatalf("login over the limit: %d", st)
		}
		e.Advance(t, auth.FailWindow)
		e.Call(t, "POST", secPasswordPath, u.Token, map[string]any{"current_password": pw, "new_password": "whatever long"}, http.StatusOK)
	})
}

func TestChangePasswordWithoutPassword(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u, _ := providerUser(t, e, "discord")
		r := e.Call(t, "POST", secPasswordPath, u.Token, map[string]any{"current_password": "anything", "new_password": "something long"}, http.StatusBadRequest)
		if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, "email-link") {
			t.Fatalf("message %q does not point to the email link", msg)
		}
	})
}

var (
	secSecretRE  = regexp.MustCompile(`<span id="totp-secret-raw" hidden>([A-Z2-7]+)</span>`)
	secCodeRE    = regexp.MustCompile(`<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})</code></li>`)
	secQRImageRE = regexp.MustCompile(`<img class="qr" src="data:image/png;base64,[A-Za-z0-9+/=&#;]+"`)
)

func TestConsoleSecurityPassword(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const old, next = "correct horse battery", "staple battery horse"
		u := e.NewUser(t, apptest.UserSpec{Password: old})
		anon := newBrowser(t, e)
		if p := anon.get("/account/security"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Faccount%2Fsecurity" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		b := signedInBrowser(t, e, u)
		p := b.get("/account/security")
		if p.status != http.StatusOK || !strings.Contains(p.body, `action="/account/security/password"`) || !strings.Contains(p.body, `autocomplete="current-password"`) {
			t.Fatalf("security page: %d %s", p.status, p.body)
		}
		before := secPasswordHash(t, e, u.ID)
		post := func(form url.Values) page {
			t.Helper()
			form.Set("csrf_token", formToken(t, p.body, "/account/security/password"))
			return b.do("POST", "/account/security/password", form)
		}
		// Without the CSRF token: refused.
		if q := b.do("POST", "/account/security/password", url.Values{"current_password": {old}, "new_password": {next}}); q.status != http.StatusForbidden {
			t.Errorf("without CSRF: %d", q.status)
		}
		q := post(url.Values{"current_password": {"wrong one"}, "new_password": {next}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="current-password-error"`) || !strings.Contains(q.body, "This is not your current password.") {
			t.Fatalf("wrong current password: %d %s", q.status, q.body)
		}
		q = post(url.Values{"current_password": {old}, "new_password": {"short"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="new-password-error"`) || !strings.Contains(q.body, "at least 8 characters") {
			t.Fatalf("too short: %d %s", q.status, q.body)
		}
		if secPasswordHash(t, e, u.ID) != before {
			t.Fatal("a refused change changed the password")
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)

		q = post(url.Values{"current_password": {old}, "new_password": {next}})
		if q.status != http.StatusSeeOther || q.location != "/account/security" {
			t.Fatalf("change: %d %q %s", q.status, q.location, q.body)
		}
		// The fixture's session is another session: signed out. The browser's stays.
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if after := b.get("/account/security"); after.status != http.StatusOK || !strings.Contains(after.body, "Your password was changed.") {
			t.Fatalf("after the change: %d %s", after.status, after.body)
		}
		if st := loginStatus(t, e, u.Email, next); st != http.StatusOK {
			t.Fatalf("login with the new password: %d", st)
		}
		if kinds := secMailKinds(t, e, u.Email); len(kinds) != 1 || kinds[0] != mail.KindPasswordChanged {
			t.Fatalf("mails: %v", kinds)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'password_changed' AND status = 'success' AND source_service = 'id'`, u.ID); n != 1 {
			t.Fatalf("password_changed events from the pages = %d", n)
		}
	})
}

func TestConsoleSecurityNoPassword(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u, _ := providerUser(t, e, "discord")
		b := newBrowser(t, e)
		u2, _ := url.Parse(e.URL)
		b.c.Jar.SetCookies(u2, []*http.Cookie{{Name: "hmid_session", Value: u.Token, Path: "/"}})
		p := b.get("/account/security")
		if p.status != http.StatusOK || strings.Contains(p.body, `action="/account/security/password"`) || !strings.Contains(p.body, "has no password") {
			t.Fatalf("page without a password: %d %s", p.status, p.body)
		}
		// Posting anyway gets the service's refusal, as a page.
		q := b.do("POST", "/account/security/password", url.Values{"csrf_token": {formToken(t, p.body, "/account/security/2fa/setup")},
			"current_password": {"x"}, "new_password": {"long enough"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "Link an email address and a password on your profile first") {
			t.Fatalf("post without a password: %d %s", q.status, q.body)
		}
	})
}

func TestConsoleSecurityTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		b := signedInBrowser(t, e, u)
		p := b.get("/account/security")
		if !strings.Contains(p.body, `action="/account/security/2fa/setup"`) || strings.Contains(p.body, "is required for your account") {
			t.Fatalf("page before setup: %s", p.body)
		}
		// Setup: the answer itself shows the QR code and the secret.
		s := b.do("POST", "/account/security/2fa/setup", url.Values{"csrf_token": {formToken(t, p.body, "/account/security/2fa/setup")}})
		m := secSecretRE.FindStringSubmatch(s.body)
		if s.status != http.StatusOK || m == nil || !secQRImageRE.MatchString(s.body) || !strings.Contains(s.body, `href="otpauth://totp/`) {
			t.Fatalf("setup: %d %s", s.status, s.body)
		}
		secret := m[1]
		grouped := strings.Join(regexp.MustCompile(`<span class="group">([A-Z2-7]{1,4})</span>`).FindAllString(s.body, -1), "")
		if !strings.Contains(grouped, `<span class="group">`+secret[:4]+`</span>`) {
			t.Errorf("the secret is not shown in blocks of four: %s", grouped)
		}
		// The secret is not shown again on the next GET.
		if g := b.get("/account/security"); strings.Contains(g.body, secret) {
			t.Fatal("the secret shows again")
		}
		// A wrong code: 400, the code form again, still off.
		v := b.do("POST", "/account/security/2fa/verify", url.Values{"csrf_token": {formToken(t, s.body, "/account/security/2fa/verify")}, "code": {tfWrongCode(t, secret, e.Clock.Now())}})
		if v.status != http.StatusBadRequest || !strings.Contains(v.body, `id="verify-error"`) || strings.Contains(v.body, secret) {
			t.Fatalf("wrong code: %d %s", v.status, v.body)
		}
		if tfStatus(t, e, u.Token)["enabled"] != false {
			t.Fatal("a wrong code turned it on")
		}
		// The right code: on, and the backup codes in the answer (no redirect).
		v = b.do("POST", "/account/security/2fa/verify", url.Values{"csrf_token": {formToken(t, v.body, "/account/security/2fa/verify")}, "code": {tfCode(t, secret, e.Clock.Now())}})
		codes := secCodeRE.FindAllStringSubmatch(v.body, -1)
		if v.status != http.StatusOK || v.location != "" || len(codes) != 10 || !strings.Contains(v.body, "Two-factor authentication is on.") {
			t.Fatalf("verify: %d %q %s", v.status, v.location, v.body)
		}
		if !strings.Contains(v.body, `data-copy="#backup-codes"`) || !strings.Contains(v.body, `download="hmid-backup-codes.txt"`) ||
			!strings.Contains(v.body, `href="data:text/plain;charset=utf-8,`) || !strings.Contains(v.body, codes[0][1]) {
			t.Fatalf("codes without copy and download: %s", v.body)
		}
		st := tfStatus(t, e, u.Token)
		if st["enabled"] != true || st["backup_codes_remaining"] != float64(10) {
			t.Fatalf("status after verify: %v", st)
		}
		// Shown once: the next GET has none of them.
		g := b.get("/account/security")
		if strings.Contains(g.body, codes[0][1]) || !strings.Contains(g.body, `action="/account/security/2fa/disable"`) {
			t.Fatalf("codes shown again or no disable form: %s", g.body)
		}

		// Regenerate: a backup code is refused (TOTP only), a TOTP code of a new step works.
		regen := func(code string) page {
			return b.do("POST", "/account/security/2fa/backup-codes", url.Values{"csrf_token": {formToken(t, g.body, "/account/security/2fa/backup-codes")}, "code": {code}})
		}
		if q := regen(codes[1][1]); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="regen-error"`) {
			t.Fatalf("regenerate with a backup code: %d %s", q.status, q.body)
		}
		e.Clock.Advance(30 * time.Second)
		q := regen(tfCode(t, secret, e.Clock.Now()))
		fresh := secCodeRE.FindAllStringSubmatch(q.body, -1)
		if q.status != http.StatusOK || len(fresh) != 10 || fresh[0][1] == codes[0][1] || !strings.Contains(q.body, "Your new backup codes") {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}

		// Disable: without the confirmation box nothing happens.
		disable := func(form url.Values) page {
			form.Set("csrf_token", formToken(t, g.body, "/account/security/2fa/disable"))
			return b.do("POST", "/account/security/2fa/disable", form)
		}
		if q := disable(url.Values{"code": {fresh[0][1]}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, "Tick the box") {
			t.Fatalf("disable without confirmation: %d %s", q.status, q.body)
		}
		// An old backup code no longer works.
		if q := disable(url.Values{"code": {codes[2][1]}, "confirm": {"yes"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="disable-error"`) {
			t.Fatalf("disable with an old code: %d %s", q.status, q.body)
		}
		if tfStatus(t, e, u.Token)["enabled"] != true {
			t.Fatal("refused disables turned it off")
		}
		if q := disable(url.Values{"code": {fresh[0][1]}, "confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/account/security" {
			t.Fatalf("disable: %d %q %s", q.status, q.location, q.body)
		}
		if tfStatus(t, e, u.Token)["enabled"] != false {
			t.Fatal("still on after disabling")
		}
		if after := b.get("/account/security"); !strings.Contains(after.body, "Two-factor authentication is off.") {
			t.Fatalf("after disabling: %s", after.body)
		}
		for _, ev := range []string{"2fa_enabled", "2fa_backup_codes_regenerated", "2fa_disabled"} {
			if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = $2 AND status = 'success' AND source_service = 'id'`, u.ID, ev); n != 1 {
				t.Errorf("%s events from the pages = %d", ev, n)
			}
		}
	})
}

func TestConsoleSecurityRequirement(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		execSQL(t, e, `UPDATE roles SET requires_two_factor = TRUE WHERE id = 'role_moderator'`)
		execSQL(t, e, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, 'role_moderator', 0)`, u.ID)
		b := signedInBrowser(t, e, u)
		p := b.get("/account/security")
		callout := p.body[:strings.Index(p.body, `id="tf-title"`)]
		if !strings.Contains(callout, "Two-factor authentication is required for your account") || !strings.Contains(callout, "Your role Moderator requires it.") ||
			!strings.Contains(callout, `action="/account/security/2fa/setup"`) {
			t.Fatalf("requirement by role: %s", p.body)
		}
		// The platform the user signs in with requires it too.
		execSQL(t, e, `UPDATE platforms SET two_factor_required = TRUE WHERE slug = 'email'`)
		p = b.get("/account/security")
		if !strings.Contains(p.body, "Signing in with Email requires it.") {
			t.Fatalf("requirement by platform: %s", p.body)
		}
		// In German, for a user who prefers it.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		if p = b.get("/account/security"); !strings.Contains(p.body, "Ihre Rolle Moderator verlangt sie.") || !strings.Contains(p.body, `<html lang="de">`) {
			t.Fatalf("German page: %s", p.body)
		}
		// Once on, the call to act is gone.
		execSQL(t, e, `UPDATE users SET preferred_locale = NULL WHERE id = $1`, u.ID)
		tfEnable(t, e, u)
		if p = b.get("/account/security"); strings.Contains(p.body, "is required for your account") || !strings.Contains(p.body, "keep it on") {
			t.Fatalf("requirement met: %s", p.body)
		}
	})
}
