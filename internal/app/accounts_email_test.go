package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/mail"
	"hmid/internal/password"
	"hmid/internal/users"
)

func TestEmailChangeFullCycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		base := "/v1/users/" + u.ID + "/email"

		r := e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false || r["new_email"] != nil || r["expires_at"] != nil {
			t.Fatalf("pending before request = %v", r)
		}
		r = e.Call(t, "POST", base+"/request-change", u.Token, map[string]any{"email": "New.Address@Example.test"}, http.StatusOK).JSON()
		if r["expires_at"] != apptest.Start.Add(24*time.Hour).Format(time.RFC3339) || r["message"] == "" {
			t.Fatalf("request = %v", r)
		}
		tok, m := tokenFrom(t, e, "new.address@example.test", mail.KindEmailChangeVerify)
		if m.Locale != "de" || !strings.Contains(m.Text, e.URL+"/account/email/verify?token="+tok) {
			t.Fatalf("mail locale %s, text %s", m.Locale, m.Text)
		}
		r = e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != true || r["new_email"] != "new.address@example.test" {
			t.Fatalf("pending = %v", r)
		}

		// Another user cannot use the token, and it stays valid for the owner.
		other := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/users/email/verify", other.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email/verify", "", map[string]any{"token": tok}, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": ""}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": "nope"}, http.StatusBadRequest)
		r = e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("verify = %v", r)
		}
		// Single use.
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)

		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND email = 'new.address@example.test'`, u.ID); n != 1 {
			t.Fatal("users.email not changed")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND platform_id = $2 AND platform_user_id = 'new.address@example.test' AND email = 'new.address@example.test'`,
			u.ID, users.PlatformID("email")); n != 1 {
			t.Fatal("email platform account not changed")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated'`, u.ID); n != 1 {
			t.Fatalf("audit events = %d", n)
		}
		r = e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false {
			t.Fatalf("pending after verify = %v", r)
		}
		e.Call(t, "DELETE", base+"/pending", u.Token, nil, http.StatusNotFound)
	})
}

func TestEmailChangeErrors(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		req := "/v1/users/" + u.ID + "/email/request-change"

		e.Call(t, "POST", req, "", map[string]any{"email": "a@b.test"}, http.StatusUnauthorized)
		e.Call(t, "POST", req, other.Token, map[string]any{"email": "a@b.test"}, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/email/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/users/nobody/email/request-change", admin.Token, map[string]any{"email": "a@b.test"}, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/nobody/email/pending", admin.Token, nil, http.StatusNotFound)
		for _, bad := range []any{"", "not-an-email", "Name <a@b.test>", "a@b", strings.Repeat("a", 250) + "@b.test", 42} {
			e.Call(t, "POST", req, u.Token, map[string]any{"email": bad}, http.StatusBadRequest)
		}
		e.Call(t, "POST", req, u.Token, `{"email":`, http.StatusBadRequest)
		e.Call(t, "POST", req, u.Token, map[string]any{"email": strings.ToUpper(u.Email)}, http.StatusBadRequest)
		e.Call(t, "POST", req, u.Token, map[string]any{"email": other.Email}, http.StatusConflict)

		// Only accounts created with email can change their address.
		d, _ := providerUser(t, e, "discord")
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email/request-change", d.Token, map[string]any{"email": "d@example.test"}, http.StatusBadRequest)

		// An admin may request for the user; the address taken before verification gives 409.
		e.Call(t, "POST", req, admin.Token, map[string]any{"email": "taken.later@example.test"}, http.StatusOK)
		tok, _ := tokenFrom(t, e, "taken.later@example.test", mail.KindEmailChangeVerify)
		e.NewUser(t, apptest.UserSpec{Email: "taken.later@example.test"})
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusConflict)

		// A new request replaces the old one; the token expires after 24 hours.
		e.Call(t, "POST", req, u.Token, map[string]any{"email": "later@example.test"}, http.StatusOK)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		tok, _ = tokenFrom(t, e, "later@example.test", mail.KindEmailChangeVerify)
		e.Clock.Advance(24*time.Hour + time.Second)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		r := e.Call(t, "GET", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false {
			t.Fatalf("expired request still pending: %v", r)
		}
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusNotFound)

		// Cancel.
		e.Call(t, "POST", req, u.Token, map[string]any{"email": "cancel@example.test"}, http.StatusOK)
		tok, _ = tokenFrom(t, e, "cancel@example.test", mail.KindEmailChangeVerify)
		r = e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("cancel = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusNotFound)
	})
}

func TestEmailMailsAreRateLimited(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		req := "/v1/users/" + u.ID + "/email/request-change"
		for i := range 5 {
			e.Call(t, "POST", req, u.Token, map[string]any{"email": "r" + string(rune('a'+i)) + "@example.test"}, http.StatusOK)
		}
		r := e.Call(t, "POST", req, u.Token, map[string]any{"email": "rz@example.test"}, http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	})
}

func TestEmailLinkFullCycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		d, _ := providerUser(t, e, "discord")
		base := "/v1/users/" + d.ID + "/email-link"
		r := e.Call(t, "GET", base+"/pending", d.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false || r["email"] != nil || r["expires_at"] != nil {
			t.Fatalf("pending = %v", r)
		}
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "link@example.test", "password": "short"}, http.StatusBadRequest)
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "bad", "password": "long enough"}, http.StatusBadRequest)
		taken := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": taken.Email, "password": "long enough"}, http.StatusConflict)
		r = e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "Link@Example.test", "password": "correct horse"}, http.StatusOK).JSON()
		if r["expires_at"] == nil {
			t.Fatalf("request = %v", r)
		}
		r = e.Call(t, "GET", base+"/pending", d.Token, nil, http.StatusOK).JSON()
		if r["pending"] != true || r["email"] != "link@example.test" {
			t.Fatalf("pending = %v", r)
		}
		tok, m := tokenFrom(t, e, "link@example.test", mail.KindEmailLinkVerify)
		if m.Locale != "en" || !strings.Contains(m.Text, "/account/email-link/verify?token="+tok) {
			t.Fatalf("mail %s %s", m.Locale, m.Text)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", taken.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		r = e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusOK).JSON()
		acct, _ := r["platform_account_id"].(string)
		if acct == "" {
			t.Fatalf("verify = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)

		// The email account holds the password for the login (platform_user_id = address).
		var hash string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT password_hash FROM platform_accounts WHERE id = $1 AND user_id = $2 AND platform_id = $3 AND platform_user_id = 'link@example.test'`,
			acct, d.ID, users.PlatformID("email")).Scan(&hash); err != nil {
			t.Fatal(err)
		}
		if ok, err := password.Verify("correct horse", hash); err != nil || !ok {
			t.Fatalf("password hash does not verify: %v", err)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND email = 'link@example.test'`, d.ID); n != 1 {
			t.Fatal("user email not set")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_linked' AND resource_id = $2`, d.ID, acct); n != 1 {
			t.Fatal("no account_linked event")
		}
		list := e.Call(t, "GET", "/v1/users/"+d.ID+"/accounts", d.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 2 {
			t.Fatalf("accounts = %v", list)
		}
		// Now the user has an email account: linking again and a pending GET are refused / empty.
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "second@example.test", "password": "correct horse"}, http.StatusBadRequest)
		e.Call(t, "DELETE", base+"/pending", d.Token, nil, http.StatusNotFound)
		// …and can change the address with the email-change flow.
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email/request-change", d.Token, map[string]any{"email": "changed@example.test"}, http.StatusOK)
	})
}

func TestEmailLinkErrors(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		d, _ := providerUser(t, e, "github")
		other := e.NewUser(t, apptest.UserSpec{})
		body := map[string]any{"email": "x@example.test", "password": "correct horse"}
		e.Call(t, "POST", "/v1/users/"+u.ID+"/email-link/request", u.Token, body, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", "", body, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", other.Token, body, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+d.ID+"/email-link/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+d.ID+"/email-link/pending", other.Token, nil, http.StatusForbidden)
		admin := e.Admin(t)
		e.Call(t, "POST", "/v1/users/nobody/email-link/request", admin.Token, body, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/nobody/email-link/pending", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/nobody/email-link/pending", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": "unknown"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email-link/verify", "", map[string]any{"token": "unknown"}, http.StatusUnauthorized)

		// Cancel, then verify fails; a request whose address is taken meanwhile gives 409.
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", d.Token, body, http.StatusOK)
		tok, _ := tokenFrom(t, e, "x@example.test", mail.KindEmailLinkVerify)
		r := e.Call(t, "DELETE", "/v1/users/"+d.ID+"/email-link/pending", d.Token, nil, http.StatusOK).JSON()
		if r["message"] == "" {
			t.Fatalf("cancel = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", admin.Token, body, http.StatusOK)
		tok, _ = tokenFrom(t, e, "x@example.test", mail.KindEmailLinkVerify)
		e.NewUser(t, apptest.UserSpec{Email: "x@example.test"})
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusConflict)
		e.Clock.Advance(24*time.Hour + time.Second)
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)
	})
}
