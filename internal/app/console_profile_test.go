package app_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/mail"
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

// submitConsole sends a console form: the page's CSRF token for action, plus form.
func submitConsole(b *browser, page page, action string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", formToken(b.t, page.body, action))
	return b.do("POST", action, form)
}

// wantRedirect checks a POST-redirect-GET answer leading to to.
func wantRedirect(t *testing.T, p page, to string) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.location != to {
		t.Fatalf("want 303 to %s, got %d %q: %s", to, p.status, p.location, p.body)
	}
}

func TestConsoleProfile(t *testing.T) {
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
		q := submitConsole(b, p, "/account/profile", url.Values{"username": {"taken_one"}, "avatars_enabled": {"on"}})
		if q.status != http.StatusConflict || !strings.Contains(q.body, "This username is taken") ||
			!strings.Contains(q.body, `value="taken_one"`) || !strings.Contains(q.body, `aria-invalid="true"`) {
			t.Fatalf("taken username: %d %s", q.status, q.body)
		}
		// A name breaking the rule is a field error, 400.
		q = submitConsole(b, p, "/account/profile", url.Values{"username": {"no spaces please"}, "privacy_mode": {"on"}, "avatars_enabled": {"on"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "Use 3 to 30 characters") || !strings.Contains(q.body, `id="privacy_mode" name="privacy_mode" aria-describedby="privacy-help" checked`) {
			t.Fatalf("invalid username: %d %s", q.status, q.body)
		}
		if d := userAsAPI(t, e, u.Token); d["username"] != "profile_me" || d["privacy_mode"] != false {
			t.Fatalf("refused saves changed the user: %v", d)
		}

		// Rename and turn privacy mode on: the same change PATCH /v1/users/{id} makes.
		wantRedirect(t, submitConsole(b, p, "/account/profile", url.Values{"username": {"Renamed_1"}, "privacy_mode": {"on"}, "avatars_enabled": {"on"}}), "/account")
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
		wantRedirect(t, submitConsole(b, p, "/account/profile", url.Values{"username": {"Renamed_1"}, "privacy_mode": {"on"}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["avatars_enabled"] != false {
			t.Fatalf("avatars still on: %v", d)
		}

		// The language: German switches the pages; an unknown one is refused.
		p = b.get("/account")
		if q := submitConsole(b, p, "/account/language", url.Values{"locale": {"xx"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, "locale must be one of en, de") {
			t.Errorf("unknown locale: %d %s", q.status, q.body)
		}
		wantRedirect(t, submitConsole(b, p, "/account/language", url.Values{"locale": {"de"}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["preferred_locale"] != "de" {
			t.Fatalf("locale = %v", d["preferred_locale"])
		}
		p = b.get("/account")
		for _, want := range []string{`<html lang="de">`, "Ihr Profil", "Ihre Sprache wurde gespeichert.", "Benutzername"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("German page lacks %q", want)
			}
		}
		wantRedirect(t, submitConsole(b, p, "/account/language", url.Values{"locale": {""}}), "/account")
		if d := userAsAPI(t, e, u.Token); d["preferred_locale"] != nil {
			t.Fatalf("locale not cleared: %v", d["preferred_locale"])
		}
		if p = b.get("/account"); !strings.Contains(p.body, `<html lang="en">`) {
			t.Error("the page did not go back to English")
		}
	})
}

func TestConsoleEmailChange(t *testing.T) {
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
		if q := submitConsole(b, p, "/account/email", url.Values{"email": {"Taken@Example.test"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "already used by another account") || !strings.Contains(q.body, `value="Taken@Example.test"`) {
			t.Errorf("taken address: %d %s", q.status, q.body)
		}
		if q := submitConsole(b, p, "/account/email", url.Values{"email": {"not an address"}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="new-email-error"`) {
			t.Errorf("malformed address: %d %s", q.status, q.body)
		}
		if r := e.Call(t, "GET", pending, u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending after refusals: %v", r)
		}

		// Request: the change waits for the mailed link, and the page says so.
		wantRedirect(t, submitConsole(b, p, "/account/email", url.Values{"email": {"Next@Example.test"}}), "/account")
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
		wantRedirect(t, submitConsole(b, p, "/account/email/cancel", nil), "/account")
		if r := e.Call(t, "GET", pending, u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending after cancel = %v", r)
		}
		if q := b.get("/account"); !strings.Contains(q.body, "The email change was cancelled.") || strings.Contains(q.body, "Waiting for confirmation") {
			t.Errorf("after cancel: %s", q.body)
		}
		if q := submitConsole(b, p, "/account/email/cancel", nil); q.status != http.StatusNotFound || !strings.Contains(q.body, "Nothing is waiting for confirmation") {
			t.Errorf("second cancel: %d %s", q.status, q.body)
		}

		// The whole way: request again, open the mailed link, confirm; the profile shows the new address.
		wantRedirect(t, submitConsole(b, p, "/account/email", url.Values{"email": {"final@example.test"}}), "/account")
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u, _ := providerUser(t, e, "discord")
		b := browserWithToken(t, e, u.Token)
		p := b.get("/account")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Sign in with email and password") || strings.Contains(p.body, `action="/account/email"`) {
			t.Fatalf("provider user's profile: %d %s", p.status, p.body)
		}
		q := submitConsole(b, p, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"short"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, "The password is too short. Use at least 8 characters.") || !strings.Contains(q.body, `value="linked@example.test"`) {
			t.Fatalf("short password: %d %s", q.status, q.body)
		}
		wantRedirect(t, submitConsole(b, p, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"long enough password"}}), "/account")
		p = b.get("/account")
		if !strings.Contains(p.body, "Waiting for confirmation: linked@example.test") {
			t.Fatalf("pending link not shown: %s", p.body)
		}
		// Cancel, then link for real through the mailed link.
		wantRedirect(t, submitConsole(b, p, "/account/email-link/cancel", nil), "/account")
		if r := e.Call(t, "GET", "/v1/users/"+u.ID+"/email-link/pending", u.Token, nil, http.StatusOK).JSON(); r["pending"] != false {
			t.Fatalf("pending link after cancel = %v", r)
		}
		p = b.get("/account")
		wantRedirect(t, submitConsole(b, p, "/account/email-link", url.Values{"email": {"linked@example.test"}, "password": {"long enough password"}}), "/account")
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
		if q := submitConsole(b, p, unlink, nil); q.status != http.StatusBadRequest || !strings.Contains(q.body, "Tick “Yes, unlink” to confirm") {
			t.Errorf("unconfirmed unlink: %d %s", q.status, q.body)
		}
		// Make Discord primary: the REST API sees it, and the page explains why it cannot be unlinked now.
		wantRedirect(t, submitConsole(b, p, "/account/linked/"+discord+"/primary", nil), "/account/linked")
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
		wantRedirect(t, submitConsole(b, p, "/account/linked/"+email+"/primary", nil), "/account/linked")
		p = b.get("/account/linked")
		wantRedirect(t, submitConsole(b, p, unlink, url.Values{"confirm": {"yes"}}), "/account/linked")
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
