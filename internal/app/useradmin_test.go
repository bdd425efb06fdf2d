package app_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/mail/mailtest"
)

var resetTokenRE = regexp.MustCompile(`hm_pr_[0-9A-Za-z]+`)

// login signs in with the email platform and returns the status.
func loginStatus(t *testing.T, e *apptest.Env, email, pw string) int {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]string{"email": email, "password": pw}}).Status
}

// lastMailKind is the kind of the newest mail to addr, "" for none.
func lastMailKind(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs := outbox(t, e, addr)
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].Kind
}

// TestAdminCreateUser covers POST /v1/admin/users: with a password, with
// an invitation, and refusals that create nothing.
func TestAdminCreateUser(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := roleUser(t, e, "users:write", "users:read")
		reader := roleUser(t, e, "users:read")
		e.NewUser(t, apptest.UserSpec{Username: "holder", Email: "held@example.test"})
		users := func() int { return count(t, e, `SELECT COUNT(*) FROM users`) }
		before := users()
		for _, c := range []struct {
			name string
			body map[string]any
			want int
		}{
			{"address in use", map[string]any{"email": "HELD@example.test", "password": "long-enough-1"}, http.StatusConflict},
			{"username taken", map[string]any{"email": "x1@example.test", "password": "long-enough-1", "username": "HOLDER"}, http.StatusConflict},
			{"bad address", map[string]any{"email": "not an address", "password": "long-enough-1"}, http.StatusBadRequest},
			{"short password", map[string]any{"email": "x2@example.test", "password": "short"}, http.StatusBadRequest},
			{"neither", map[string]any{"email": "x3@example.test"}, http.StatusBadRequest},
			{"both", map[string]any{"email": "x4@example.test", "password": "long-enough-1", "invite": true}, http.StatusBadRequest},
			{"bad username", map[string]any{"email": "x5@example.test", "password": "long-enough-1", "username": "a b"}, http.StatusBadRequest},
			{"bad locale", map[string]any{"email": "x6@example.test", "password": "long-enough-1", "locale": "xx"}, http.StatusBadRequest},
			{"wrong type", map[string]any{"email": 5}, http.StatusBadRequest},
		} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/admin/users", Token: op.Token, Body: c.body})
			if r.Status != c.want || r.JSON()["error"] == nil || r.JSON()["message"] == "" {
				t.Fatalf("%s: %d %s", c.name, r.Status, r.Body)
			}
		}
		e.Call(t, "POST", "/v1/admin/users", reader.Token, map[string]any{"email": "y@example.test", "password": "long-enough-1"}, http.StatusForbidden)
		if users() != before {
			t.Fatal("a refused creation created a user")
		}

		// With a password: signs in at once, mailed a verification link, audited as the backend's.
		u := data(t, e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "New.Person@Example.test", "password": "long-enough-1",
			"username": "new_person", "locale": "de"}, http.StatusCreated))
		if u["username"] != "new_person" || u["email"] != "new.person@example.test" || u["preferred_locale"] != "de" {
			t.Fatalf("created %v", u)
		}
		if got := loginStatus(t, e, "new.person@example.test", "long-enough-1"); got != http.StatusOK {
			t.Fatalf("login of the new user: %d", got)
		}
		if k := lastMailKind(t, e, "new.person@example.test"); k != "email_verify" {
			t.Fatalf("mail to the new user: %q", k)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_created' AND user_id = $1 AND actor_id = $2 AND source_service = 'backend'`, u["id"], op.ID); n != 1 {
			t.Fatalf("audit events: %d", n)
		}

		// Invited: the mailed link sets the password and verifies the address.
		inv := data(t, e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "invited@example.test", "invite": true}, http.StatusCreated))
		if k := lastMailKind(t, e, "invited@example.test"); k != "invitation" {
			t.Fatalf("mail to the invited user: %q", k)
		}
		msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, "invited@example.test")
		tok := resetTokenRE.FindString(msgs[0].Text)
		if got := loginStatus(t, e, "invited@example.test", "chosen-by-me-1"); got != http.StatusUnauthorized {
			t.Fatalf("login before choosing: %d", got)
		}
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]string{"token": tok, "password": "chosen-by-me-1"}, http.StatusOK)
		if got := loginStatus(t, e, "invited@example.test", "chosen-by-me-1"); got != http.StatusOK {
			t.Fatalf("login after choosing: %d", got)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND email_verified`, inv["id"]); n != 1 {
			t.Fatal("the invitation did not verify the address")
		}
	})
}

// TestAdminManageUser covers the changes to an existing user: profile,
// password, reset mail, verification, signing out; and their refusals.
func TestAdminManageUser(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := roleUser(t, e, "users:write", "users:read")
		u := e.NewUser(t, apptest.UserSpec{Username: "managed", Password: "old-password-1"})
		other := e.NewUser(t, apptest.UserSpec{Username: "other_one"})
		boss := e.Admin(t)
		path := "/v1/admin/users/" + u.ID

		// Profile: refusals change nothing.
		for _, c := range []struct {
			body map[string]any
			want int
		}{
			{map[string]any{"email": other.Email}, http.StatusConflict},
			{map[string]any{"username": "Other_One", "locale": "de"}, http.StatusConflict},
			{map[string]any{"username": "x"}, http.StatusBadRequest},
			{map[string]any{"locale": "fr"}, http.StatusBadRequest},
			{map[string]any{}, http.StatusBadRequest},
		} {
			e.Call(t, "PATCH", path, op.Token, c.body, c.want)
		}
		if got := data(t, e.Call(t, "GET", "/v1/users/"+u.ID, op.Token, nil, http.StatusOK)); got["username"] != "managed" || got["preferred_locale"] != nil {
			t.Fatalf("a refused change changed %v", got)
		}
		e.Call(t, "PATCH", "/v1/admin/users/"+boss.ID, op.Token, map[string]any{"locale": "de"}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/admin/users/nobody", op.Token, map[string]any{"locale": "de"}, http.StatusNotFound)
		got := data(t, e.Call(t, "PATCH", path, op.Token, map[string]any{"username": "renamed", "email": "Moved@Example.test", "locale": "de"}, http.StatusOK))
		if got["username"] != "renamed" || got["email"] != "moved@example.test" || got["preferred_locale"] != "de" {
			t.Fatalf("profile %v", got)
		}
		if loginStatus(t, e, "moved@example.test", "old-password-1") != http.StatusOK || loginStatus(t, e, u.Email, "old-password-1") != http.StatusUnauthorized {
			t.Fatal("the sign-in address did not move")
		}

		// The new address is unverified: a verification mail, then marked verified.
		e.Call(t, "POST", path+"/email/verification", op.Token, nil, http.StatusOK)
		if k := lastMailKind(t, e, "moved@example.test"); k != "email_verify" {
			t.Fatalf("verification mail: %q", k)
		}
		e.Call(t, "POST", path+"/email/verified", op.Token, nil, http.StatusOK)
		e.Call(t, "POST", path+"/email/verified", op.Token, nil, http.StatusBadRequest)
		e.Call(t, "POST", path+"/email/verification", op.Token, nil, http.StatusBadRequest)

		// A reset mail; then a password set, which signs the user out.
		e.Call(t, "POST", path+"/password-reset", op.Token, nil, http.StatusOK)
		if k := lastMailKind(t, e, "moved@example.test"); k != "password_reset" {
			t.Fatalf("reset mail: %q", k)
		}
		e.Call(t, "POST", path+"/password", op.Token, map[string]any{"password": "short"}, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		e.Call(t, "POST", path+"/password", op.Token, map[string]any{"password": "new-password-2"}, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if loginStatus(t, e, "moved@example.test", "new-password-2") != http.StatusOK {
			t.Fatal("the new password does not sign in")
		}

		// Signing out everywhere.
		e.NewSession(t, u.ID)
		e.NewSession(t, u.ID)
		r := e.Call(t, "DELETE", path+"/sessions", op.Token, nil, http.StatusOK).JSON()
		if r["revoked_count"].(float64) < 2 {
			t.Fatalf("signed out %v", r)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, u.ID); n != 0 {
			t.Fatalf("%d sessions left", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND source_service = 'backend'`, u.ID, op.ID); n != 5 {
			t.Fatalf("audit events of the operator: %d", n)
		}
	})
}

// TestAdminMailOutbox: /admin/mail shows super admins the kept mails; an
// operator holding every permission but not a super admin gets 403; with
// SMTP the page does not exist.
func TestAdminMailOutbox(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		boss := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "boss-password-1"})
		op := roleUserWith(t, e, apptest.UserSpec{Password: "op-password-1"}, "users:read", "users:write", "audit:read", "settings:read")
		e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "kept@example.test", "invite": true}, http.StatusCreated)
		b := signedInBrowser(t, e, boss)
		if p := b.get("/admin/mail"); p.status != http.StatusOK || !strings.Contains(p.body, "kept@example.test") || !strings.Contains(p.body, "reset-password?token=hm_pr_") {
			t.Fatalf("outbox for a super admin: %d %s", p.status, p.body)
		}
		if p := b.get("/admin"); !strings.Contains(p.body, `href="/admin/mail"`) {
			t.Fatal("the overview does not link the outbox")
		}
		if p := signedInBrowser(t, e, op).get("/admin/mail"); p.status != http.StatusForbidden {
			t.Fatalf("outbox for an operator: %d", p.status)
		}
	})
	withSMTP := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, func(c *config.Config) { c.SMTPURL = "smtp://127.0.0.1:1" })
	boss := withSMTP.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "boss-password-1"})
	b := signedInBrowser(t, withSMTP, boss)
	if p := b.get("/admin/mail"); p.status != http.StatusNotFound {
		t.Fatalf("outbox with SMTP: %d", p.status)
	}
	if p := b.get("/admin"); strings.Contains(p.body, `href="/admin/mail"`) {
		t.Fatal("the overview links the outbox with SMTP")
	}
}
