package app_test

import (
	"net/http"
	"net/http/cookiejar"
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

// browserWithToken is a browser holding the session cookie of tok, for users
// without a password (signed up through a provider).
func browserWithToken(t *testing.T, e *apptest.Env, tok string) *browser {
	t.Helper()
	b := newBrowser(t, e)
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: auth.CookieName, Value: tok, Path: "/"}})
	b.c.Jar = jar
	return b
}

// userAsAPI is the caller's user as the REST API answers it.
func userAsAPI(t *testing.T, e *apptest.Env, tok string) map[string]any {
	t.Helper()
	return data(t, e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusOK))
}

// wantRedirect checks a POST-redirect-GET answer leading to to.
func wantRedirect(t *testing.T, p page, to string) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.location != to {
		t.Fatalf("want 303 to %s, got %d %q: %s", to, p.status, p.location, p.body)
	}
}

func TestConsoleProfile(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "profile_me", Password: "correct horse battery"})
		e.NewUser(t, apptest.UserSpec{Username: "Taken_One", Email: "taken@example.test"})

		anon := newBrowser(t, e)
		if p := anon.get("/account"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Faccount" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		if p := anon.get("/"); p.status != http.StatusOK || !strings.Contains(p.body, "You are not signed in.") {
			t.Errorf("signed-out /: %d %s", p.status, p.body)
		}

		b := signedInBrowser(t, e, u)
		wantRedirect(t, b.get("/"), "/account")
		p := b.get("/account")
		if p.status != http.StatusOK || !strings.Contains(p.body, `value="profile_me"`) || !strings.Contains(p.body, "<h1") {
			t.Fatalf("profile page: %d %s", p.status, p.body)
		}

		// Without the CSRF token nothing changes.
		if q := b.do("POST", "/account/profile", url.Values{"username": {"sneaky"}}); q.status != http.StatusForbidden {
			t.Errorf("save without CSRF: %d", q.status)
		}
		// A taken name (compared case-insensitively) is a field error, 409.
		q := b.post(t, p.body, "/account/profile", url.Values{"username": {"taken_one"}, "avatars_enabled": {"on"}})
		if q.status != http.StatusConflict || !strings.Contains(q.body, "This username is taken") ||
			!strings.Contains(q.body, `value="taken_one"`) || !strings.Contains(q.body, `aria-invalid="true"`) {
			t.Fatalf("taken username: %d %s", q.status, q.body)
		}
		// A name breaking the rule is a field error, 400.
		q = b.post(t, p.body, "/account/profile", url.Values{"username": {"no spaces please"}, "privacy_mode": {"on"}, "avatars_enabled": {"on"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "Use 3 to 30 characters") || !strings.Contains(q.body, `id="privacy_mode" name="privacy_mode" aria-describedby="privacy-help" checked`) {
			t.Fatalf("invalid username: %d %s", q.status, q.body)
		}
		if d := userAsAPI(t, e, u.Token); d["username"] != "profile_me" || d["privacy_mode"] != false {
			t.Fatalf("refused saves changed the user: %v", d)
		}

		// Rename and turn privacy mode on: the same change PATCH /v1/users/{id} makes.
		wantRedirect(t, b.post(t, p.body, "/account/profile", url.Values{"username": {"Renamed_1"}, "privacy_mode": {"on"}, "avatars_enabled": {"on"}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["username"] != "Renamed_1" || d["privacy_mode"] != true || d["avatars_enabled"] != true {
			t.Fatalf("after save: %v", d)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND source_service = 'id'
			AND metadata LIKE '%username%' AND metadata LIKE '%privacy_mode%' AND metadata NOT LIKE '%avatars_enabled%'`, u.ID); n != 1 {
			t.Errorf("user_updated events naming exactly the changed fields = %d", n)
		}
		p = b.get("/account")
		if !strings.Contains(p.body, "Your profile was saved.") || !strings.Contains(p.body, `value="Renamed_1"`) {
			t.Errorf("after saving: %s", p.body)
		}
		// Unticking avatars turns them off (an unticked box is not sent).
		wantRedirect(t, b.post(t, p.body, "/account/profile", url.Values{"username": {"Renamed_1"}, "privacy_mode": {"on"}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["avatars_enabled"] != false {
			t.Fatalf("avatars still on: %v", d)
		}

		// The language: German switches the pages; an unknown one is refused.
		p = b.get("/account")
		if q := b.post(t, p.body, "/account/language", url.Values{"locale": {"xx"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, "locale must be one of en, de") {
			t.Errorf("unknown locale: %d %s", q.status, q.body)
		}
		wantRedirect(t, b.post(t, p.body, "/account/language", url.Values{"locale": {"de"}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["preferred_locale"] != "de" {
			t.Fatalf("locale = %v", d["preferred_locale"])
		}
		p = b.get("/account")
		for _, want := range []string{`<html lang="de">`, "Ihr Profil", "Ihre Sprache wurde gespeichert.", "Benutzername"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("German page lacks %q", want)
			}
		}
		wantRedirect(t, b.post(t, p.body, "/account/language", url.Values{"locale": {""}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["preferred_locale"] != nil {
			t.Fatalf("locale not cleared: %v", d["preferred_locale"])
		}
		if p = b.get("/account"); !strings.Contains(p.body, `<html lang="en">`) {
			t.Error("the page did not go back to English")
		}
	})
}

func TestConsoleEmailChange(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		e.NewUser(t, apptest.UserSpec{Email: "taken@example.test"})
		b := signedInBrowser(t, e, u)
		p := b.get("/account")
		if !strings.Contains(p.body, "You sign in with <strong>"+u.Email+"</strong>") || strings.Contains(p.body, `action="/account/email-link"`) {
			t.Fatalf("email section: %s", p.body)
		}
		pending := "/v1/users/" + u.ID + "/email/pending"

		// An address in use and a malformed one are field errors; nothing is pending.
		if q := b.post(t, p.body, "/account/email", url.Values{"email": {"Taken@Example.test"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "already used by another account") || !strings.Contains(q.body, `value="Taken@Example.test"`) {
			t.Errorf("taken address: %d %s", q.status, q.body)
		}
		if q := b.post(t, p.body, "/account/email", url.Values{"email": {"not an address"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="new-email-error"`) {
			t.Errorf("malformed address: %d %s", q.status, q.body)
		}
		if r := e.Call(t, "GET", pending, u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending after refusals: %v", r)
		}

		// Request: the change waits for the mailed link, and the page says so.
		wantRedirect(t, b.post(t, p.body, "/account/email", url.Values{"email": {"Next@Example.test"}}), "/account")
		if r := e.Call(t, "GET", pending, u.Token, nil, http.StatusOK).JSON(); r["pending"] != true || r["new_email"] != "next@example.test" {
			t.Fatalf("pending = %v", r)
		}
		tokenFrom(t, e, "next@example.test", mail.KindEmailChangeVerify)
		p = b.get("/account")
		for _, want := range []string{"We sent a link to the new address.", "Waiting for confirmation: next@example.test", `action="/account/email/cancel"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("pending change: page lacks %q", want)
			}
		}
		// Cancel: DELETE …/email/pending; a second cancel (a stale page) is explained.
		wantRedirect(t, b.post(t, p.body, "/account/email/cancel", nil), "/account")
		if r := e.Call(t, "GET", pending, u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending after cancel = %v", r)
		}
		if q := b.get("/account"); !strings.Contains(q.body, "The email change was cancelled.") || strings.Contains(q.body, "Waiting for confirmation") {
			t.Errorf("after cancel: %s", q.body)
		}
		if q := b.post(t, p.body, "/account/email/cancel", nil); q.status != http.StatusNotFound || !strings.Contains(q.body, "Nothing is waiting for confirmation") {
			t.Errorf("second cancel: %d %s", q.status, q.body)
		}

		// The whole way: request again, open the mailed link, confirm; the profile shows the new address.
		wantRedirect(t, b.post(t, p.body, "/account/email", url.Values{"email": {"final@example.test"}}), "/account")
		tok, _ := tokenFrom(t, e, "final@example.test", mail.KindEmailChangeVerify)
		form := b.get("/account/email/verify?token=" + tok)
		done := b.do("POST", "/account/email/verify", url.Values{"csrf_token": {formField(t, csrfRE, form.body)}, "token": {tok}})
		if done.status != http.StatusOK || !strings.Contains(done.body, `href="/account"`) {
			t.Fatalf("verify: %d %s", done.status, done.body)
		}
		if q := b.get("/account"); !strings.Contains(q.body, "You sign in with <strong>final@example.test</strong>") {
			t.Errorf("profile after the change: %s", q.body)
		}
	})
}

func TestConsoleEmailLink(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u, _ := providerUser(t, e, "discord")
		b := browserWithToken(t, e, u.Token)
		p := b.get("/account")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Sign in with email and password") || strings.Contains(p.body, `action="/account/email"`) {
			t.Fatalf("provider user's profile: %d %s", p.status, p.body)
		}
		q := b.post(t, p.body, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"short"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "The password is too short. Use at least 8 characters.") || !strings.Contains(q.body, `value="linked@example.test"`) {
			t.Fatalf("short password: %d %s", q.status, q.body)
		}
		wantRedirect(t, b.post(t, p.body, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"long enough password"}}), "/account")
		p = b.get("/account")
		if !strings.Contains(p.body, "Waiting for confirmation: linked@example.test") {
			t.Fatalf("pending link not shown: %s", p.body)
		}
		// Cancel, then link for real through the mailed link.
		wantRedirect(t, b.post(t, p.body, "/account/email-link/cancel", nil), "/account")
		if r := e.Call(t, "GET", "/v1/users/"+u.ID+"/email-link/pending", u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending link after cancel = %v", r)
		}
		p = b.get("/account")
		wantRedirect(t, b.post(t, p.body, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"long enough password"}}), "/account")
		tok, _ := tokenFrom(t, e, "linked@example.test", mail.KindEmailLinkVerify)
		form := b.get("/account/email-link/verify?token=" + tok)
		if done := b.do("POST", "/account/email-link/verify", url.Values{"csrf_token": {formField(t, csrfRE, form.body)}, "token": {tok}}); done.status != http.StatusOK {
			t.Fatalf("verify link: %d %s", done.status, done.body)
		}
		if q := b.get("/account"); !strings.Contains(q.body, "You sign in with <strong>linked@example.test</strong>") {
			t.Errorf("profile after linking: %s", q.body)
		}
		// The new login works.
		signedInBrowser(t, e, apptest.User{Email: "linked@example.test", Password: "long enough password"})
	})
}

func TestConsoleLinkedAccounts(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		var email string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT id FROM platform_accounts WHERE user_id = $1`, u.ID).Scan(&email); err != nil {
			t.Fatal(err)
		}
		discord := addAccount(t, e, u.ID, "discord")
		b := signedInBrowser(t, e, u)
		p := b.get("/account/linked")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Your email login cannot be unlinked") ||
			!strings.Contains(p.body, `action="/account/linked/`+discord+`/unlink"`) || !strings.Contains(p.body, "No other sign-in providers are set up") {
			t.Fatalf("linked page: %d %s", p.status, p.body)
		}
		accounts := func() map[string]bool {
			out := map[string]bool{}
			for _, a := range e.Call(t, "GET", "/v1/users/"+u.ID+"/accounts", u.Token, nil, http.StatusOK).JSON()["data"].([]any) {
				m := a.(map[string]any)
				out[m["platform_slug"].(string)] = m["is_primary"].(bool)
			}
			return out
		}
		unlink := "/account/linked/" + discord + "/unlink"

		// Unlinking needs the confirmation box.
		if q := b.post(t, p.body, unlink, nil); q.status != http.StatusBadRequest || !strings.Contains(q.body, "Tick “Yes, unlink” to confirm") {
			t.Errorf("unconfirmed unlink: %d %s", q.status, q.body)
		}
		// Make Discord primary: the REST API sees it, and the page explains why it cannot be unlinked now.
		wantRedirect(t, b.post(t, p.body, "/account/linked/"+discord+"/primary", nil), "/account/linked")
		if a := accounts(); !a["discord"] || a["email"] {
			t.Fatalf("primary after the change: %v", a)
		}
		p = b.get("/account/linked")
		if !strings.Contains(p.body, "The primary account was changed.") || !strings.Contains(p.body, "Your primary account cannot be unlinked") {
			t.Errorf("after set primary: %s", p.body)
		}
		// A stale page's unlink of the primary account: the refusal in words, nothing removed.
		if q := b.do("POST", unlink, url.Values{"csrf_token": {formToken(t, p.body, "/account/linked/"+email+"/primary")}, "confirm": {"yes"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, "Your primary account cannot be unlinked. Make another account primary first.") {
			t.Errorf("unlink primary: %d %s", q.status, q.body)
		}
		if len(accounts()) != 2 {
			t.Fatal("a refused unlink removed an account")
		}
		// Back to email as primary, then unlink Discord.
		wantRedirect(t, b.post(t, p.body, "/account/linked/"+email+"/primary", nil), "/account/linked")
		p = b.get("/account/linked")
		wantRedirect(t, b.post(t, p.body, unlink, url.Values{"confirm": {"yes"}}), "/account/linked")
		if a := accounts(); len(a) != 1 || !a["email"] {
			t.Fatalf("after unlink: %v", a)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_unlinked' AND source_service = 'id'`, u.ID); n != 1 {
			t.Errorf("account_unlinked events from the console = %d", n)
		}
		if q := b.get("/account/linked"); !strings.Contains(q.body, "The account was unlinked.") || strings.Contains(q.body, discord) {
			t.Errorf("after unlink: %s", q.body)
		}
		// Another user's account is unknown here.
		other, otherAcct := providerUser(t, e, "twitch")
		if q := b.do("POST", "/account/linked/"+otherAcct+"/primary", url.Values{"csrf_token": {formToken(t, p.body, unlink)}}); q.status != http.StatusNotFound {
			t.Errorf("someone else's account: %d", q.status)
		}

		// The only account of a provider user: explained, and refused if posted anyway.
		ob := browserWithToken(t, e, other.Token)
		op := ob.get("/account/linked")
		if !strings.Contains(op.body, "This is your only way to sign in") || strings.Contains(op.body, `/unlink"`) {
			t.Fatalf("single account page: %s", op.body)
		}
		// (The page has no form of its own then; the console's token is on /account.)
		tok := formToken(t, ob.get("/account").body, "/account/profile")
		q := ob.do("POST", "/account/linked/"+otherAcct+"/unlink", url.Values{"csrf_token": {tok}, "confirm": {"yes"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "This is your only way to sign in, so it cannot be unlinked.") {
			t.Errorf("unlink the last account: %d %s", q.status, q.body)
		}
	})
}

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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
	t.Parallel()
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
	t.Parallel()
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

// signedInBrowser logs u in through the login page and returns the browser.
func signedInBrowser(t *testing.T, e *apptest.Env, u apptest.User) *browser {
	t.Helper()
	b := newBrowser(t, e)
	form := b.get("/login")
	p := b.do("POST", "/login", url.Values{"csrf_token": {formField(t, csrfRE, form.body)}, "email": {u.Email}, "password": {u.Password}})
	if p.status != http.StatusSeeOther || b.cookie("hmid_session", "/") == "" {
		t.Fatalf("login: %d %s", p.status, p.body)
	}
	return b
}

// formToken returns the CSRF token of the form posting to action.
func formToken(t *testing.T, body, action string) string {
	t.Helper()
	i := strings.Index(body, `action="`+action+`"`)
	if i < 0 {
		t.Fatalf("no form for %s in page:\n%s", action, body)
	}
	return formField(t, csrfRE, body[i:])
}

func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		// Without a session the page sends the browser to the login page, which returns here.
		anon := newBrowser(t, e)
		if p := anon.get("/account/sessions"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Faccount%2Fsessions" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		// A bearer token is not a browser session.
		req, _ := http.NewRequest("GET", e.URL+"/account/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+u.Token)
		if res, err := anon.c.Do(req); err != nil || res.StatusCode != http.StatusSeeOther {
			t.Errorf("bearer token on a page: %v %v", res, err)
		} else {
			res.Body.Close()
		}

		b := signedInBrowser(t, e, u)
		p := b.get("/account/sessions")
		if p.status != http.StatusOK || !strings.Contains(p.body, "This device") || !strings.Contains(p.body, u.SessionID) {
			t.Fatalf("sessions page: %d %s", p.status, p.body)
		}
		if !strings.Contains(p.body, `aria-current="page"`) {
			t.Error("the navigation does not mark the page")
		}
		// Revoking without the CSRF token is refused and changes nothing.
		if q := b.do("POST", "/account/sessions/"+u.SessionID+"/revoke", url.Values{}); q.status != http.StatusForbidden {
			t.Errorf("revoke without CSRF: %d", q.status)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		// Revoke the fixture's other session: its token stops working.
		q := b.do("POST", "/account/sessions/"+u.SessionID+"/revoke", url.Values{"csrf_token": {formToken(t, p.body, "/account/sessions/"+u.SessionID+"/revoke")}})
		if q.status != http.StatusSeeOther || q.location != "/account/sessions" {
			t.Fatalf("revoke: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if after := b.get("/account/sessions"); !strings.Contains(after.body, "The session was revoked") || strings.Contains(after.body, u.SessionID) {
			t.Errorf("after revoking: %s", after.body)
		}
		// The flash shows once.
		if again := b.get("/account/sessions"); strings.Contains(again.body, "The session was revoked") {
			t.Error("the flash message showed twice")
		}
	})
}
