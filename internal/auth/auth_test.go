package auth_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
)

const pw = "correct horse battery"

// fakeSecondFactor stands in for the two-factor area.
type fakeSecondFactor struct {
	enabled map[string]bool
	setup   map[string]bool
	code    string
}

func (f *fakeSecondFactor) Enabled(_ context.Context, userID string) (bool, error) {
	return f.enabled[userID], nil
}

func (f *fakeSecondFactor) AcceptsCode(_ context.Context, userID string) (bool, error) {
	return f.enabled[userID], nil
}

func (f *fakeSecondFactor) VerifyLogin(_ context.Context, _, code, _, _ string) error {
	if code != f.code {
		return apperr.Invalid("invalid two-factor code")
	}
	return nil
}

func (f *fakeSecondFactor) SetupRequired(_ context.Context, userID, _ string) (bool, error) {
	return f.setup[userID], nil
}

func login(t *testing.T, e *apptest.Env, email, password string, want int) *apptest.Resp {
	t.Helper()
	return must(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]any{"email": email, "password": password}}), want)
}

func must(t *testing.T, r *apptest.Resp, want int) *apptest.Resp {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r
}

func cookies(r *apptest.Resp) map[string]*http.Cookie {
	out := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		out[c.Name] = c
	}
	return out
}

func auditCount(t *testing.T, e *apptest.Env, userID, typ, status string) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = $2 AND status = $3`, userID, typ, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func exec(t *testing.T, e *apptest.Env, q string, args ...any) {
	t.Helper()
	if _, err := e.Server.DB.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}

func TestLoginSuccess(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]any{"email": strings.ToUpper(u.Email), "password": pw}})
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var got struct {
			SessionToken string    `json:"session_token"`
			SessionID    string    `json:"session_id"`
			ExpiresAt    time.Time `json:"expires_at"`
			User         struct {
				ID, Username, Email string
			} `json:"user"`
			Setup *bool `json:"two_factor_setup_required"`
		}
		r.Decode(t, &got)
		if !strings.HasPrefix(got.SessionToken, "hm_st_") || got.User.ID != u.ID || got.User.Username != u.Username || got.User.Email != u.Email {
			t.Fatalf("answer %s", r.Body)
		}
		if !got.ExpiresAt.Equal(apptest.Start.Add(30*24*time.Hour)) || got.Setup != nil {
			t.Fatalf("expires_at %v, setup %v", got.ExpiresAt, got.Setup)
		}
		c := cookies(r)[auth.CookieName]
		if c == nil || c.Value != got.SessionToken || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != 30*24*3600 {
			t.Fatalf("cookie %+v", c)
		}
		var provider string
		var last int64
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT last_login_provider, last_login_at FROM users WHERE id = $1`, u.ID).Scan(&provider, &last); err != nil {
			t.Fatal(err)
		}
		if provider != "email" || last != db.TS(apptest.Start) {
			t.Fatalf("last login %s %d", provider, last)
		}
		var sessProvider string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT provider FROM sessions WHERE id = $1 AND user_id = $2`, got.SessionID, u.ID).Scan(&sessProvider); err != nil || sessProvider != "email" {
			t.Fatalf("session row: %v %q", err, sessProvider)
		}
		if auditCount(t, e, u.ID, "login", "success") != 1 || auditCount(t, e, u.ID, "session_created", "success") != 1 {
			t.Fatal("login and session_created not audited")
		}
		// The new token authenticates.
		e.Call(t, "POST", "/v1/auth/logout", got.SessionToken, nil, 204)
	})
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		r := login(t, e, u.Email, "wrong password", 401)
		unknown := login(t, e, "nobody@example.test", pw, 401)
		if r.JSON()["message"] != unknown.JSON()["message"] {
			t.Fatalf("unknown email and wrong password answer differently: %s / %s", r.Body, unknown.Body)
		}
		if auditCount(t, e, u.ID, "login_failed", "failure") != 1 {
			t.Fatal("login_failed not audited")
		}
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "", "password": ""}, 400)
		e.Call(t, "POST", "/v1/auth/login", "", "{", 400)
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": 5}, 400)

		// A deleted user cannot log in.
		d := e.NewUser(t, apptest.UserSpec{Password: pw})
		exec(t, e, `UPDATE users SET deleted_at = $1 WHERE id = $2`, db.TS(apptest.Start), d.ID)
		login(t, e, d.Email, pw, 401)
	})
}

func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		for i := range auth.FailPerAccount {
			r := login(t, e, u.Email, "wrong password", 401)
			if r.Header.Get("RateLimit-Limit") != "5" || r.Header.Get("RateLimit-Remaining") != strconv.Itoa(auth.FailPerAccount-1-i) || r.Header.Get("RateLimit-Reset") == "" {
				t.Fatalf("attempt %d: RateLimit headers %v", i, r.Header)
			}
		}
		// Even the right password is refused while the account is throttled.
		r := login(t, e, u.Email, pw, 429)
		if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Fatalf("Retry-After %q", ra)
		}
		// Another account from the same address is not blocked yet.
		other := e.NewUser(t, apptest.UserSpec{Password: pw})
		login(t, e, other.Email, pw, 200)
		// The allowance comes back one attempt every FailWindow/FailPerAccount.
		e.Advance(t, auth.FailWindow/auth.FailPerAccount)
		r = login(t, e, u.Email, pw, 200)
		if r.Header.Get("RateLimit-Remaining") != "1" {
			t.Fatalf("after one interval: RateLimit headers %v", r.Header)
		}
		e.Advance(t, auth.FailWindow)

		// Per address: failures spread over several accounts (one unknown).
		login(t, e, "probe@example.test", "wrong password", 401)
		for i := 1; i < auth.FailPerIP; i++ {
			if i%auth.FailPerAccount == 1 {
				u = e.NewUser(t, apptest.UserSpec{Password: pw})
			}
			login(t, e, u.Email, "wrong password", 401)
		}
		login(t, e, other.Email, pw, 429)
	})
}

func TestLoginBannedAndDisabled(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		exec(t, e, `INSERT INTO bans (id, user_id, reason, banned_at, expires_at, is_permanent) VALUES ($1, $2, 'spam', $3, NULL, TRUE)`,
			uuid.NewString(), u.ID, db.TS(apptest.Start))
		r := login(t, e, u.Email, pw, 403)
		if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, "banned") || !strings.Contains(msg, "spam") {
			t.Fatalf("ban message %q", msg)
		}
		// A wrong password of a banned user stays 401: the ban is not told to strangers.
		login(t, e, u.Email, "wrong password", 401)

		// An expired ban does not block.
		v := e.NewUser(t, apptest.UserSpec{Password: pw})
		exec(t, e, `INSERT INTO bans (id, user_id, reason, banned_at, expires_at, is_permanent) VALUES ($1, $2, 'short', $3, $4, FALSE)`,
			uuid.NewString(), v.ID, db.TS(apptest.Start.Add(-2*time.Hour)), db.TS(apptest.Start.Add(-time.Hour)))
		login(t, e, v.Email, pw, 200)

		exec(t, e, `UPDATE platforms SET enabled = FALSE WHERE slug = 'email'`)
		r = login(t, e, v.Email, pw, 403)
		if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, "disabled") {
			t.Fatalf("disabled message %q", msg)
		}
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "new@example.test", "password": pw}, 403)
	})
}

func TestLoginTwoFactor(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		s := e.NewUser(t, apptest.UserSpec{Password: pw})
		e.Server.SecondFactor = &fakeSecondFactor{enabled: map[string]bool{u.ID: true}, setup: map[string]bool{s.ID: true}, code: "123456"}

		r := login(t, e, u.Email, pw, 200)
		if r.JSON()["two_factor_required"] != true || r.JSON()["message"] == "" || r.JSON()["session_token"] != nil {
			t.Fatalf("first step %s", r.Body)
		}
		if cookies(r)[auth.CookieName] != nil {
			t.Fatal("first step set a cookie")
		}
		var n int
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, u.ID).Scan(&n)
		if n != 1 { // only the fixture's session
			t.Fatalf("sessions after first step: %d", n)
		}
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw, "code": "000000"}, 400)
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": "wrong password", "code": "123456"}, 401)
		r = e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw, "code": "123456"}, 200)
		if tok, _ := r.JSON()["session_token"].(string); !strings.HasPrefix(tok, "hm_st_") {
			t.Fatalf("second step %s", r.Body)
		}

		r = login(t, e, s.Email, pw, 200)
		if r.JSON()["two_factor_setup_required"] != true || r.JSON()["session_token"] == nil {
			t.Fatalf("setup required %s", r.Body)
		}
	})
}

func TestRegister(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		r := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "New.Person@Example.test", "password": pw, "username": "new_person"}, 201)
		var got struct {
			SessionToken string `json:"session_token"`
			User         struct{ ID, Username, Email string }
		}
		r.Decode(t, &got)
		if got.User.Username != "new_person" || got.User.Email != "new.person@example.test" || !strings.HasPrefix(got.SessionToken, "hm_st_") {
			t.Fatalf("register %s", r.Body)
		}
		if cookies(r)[auth.CookieName] == nil {
			t.Fatal("no session cookie")
		}
		if auditCount(t, e, got.User.ID, "user_created", "success") != 1 || auditCount(t, e, got.User.ID, "login", "success") != 1 {
			t.Fatal("registration not audited")
		}
		var role string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT role_id FROM user_roles WHERE user_id = $1`, got.User.ID).Scan(&role); err != nil || role != "role_user" {
			t.Fatalf("role %q %v", role, err)
		}
		// The new account logs in.
		login(t, e, "new.person@example.test", pw, 200)

		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "NEW.PERSON@example.test", "password": pw}, 409)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "other@example.test", "password": pw, "username": "NEW_PERSON"}, 409)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "other@example.test", "password": "short"}, 400)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "not-an-email", "password": pw}, 400)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "other@example.test", "password": pw, "username": "a!"}, 400)

		// Without a username one is derived from the address.
		r = e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "derive.me@example.test", "password": pw}, 201)
		if r.JSON()["user"].(map[string]any)["username"] != "derive_me" {
			t.Fatalf("derived username %s", r.Body)
		}

		exec(t, e, `UPDATE platforms SET registration_enabled = FALSE WHERE slug = 'email'`)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "late@example.test", "password": pw}, 403)
	})
}

func TestLogout(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		r := e.Call(t, "POST", "/v1/auth/logout", u.Token, nil, 204)
		if c := cookies(r)[auth.CookieName]; c == nil || c.MaxAge >= 0 {
			t.Fatalf("cookie not cleared: %+v", c)
		}
		e.Call(t, "POST", "/v1/auth/logout", u.Token, nil, 401)
		var meta string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata FROM audit_events WHERE user_id = $1 AND event_type = 'logout'`, u.ID).Scan(&meta); err != nil || !strings.Contains(meta, "user_initiated") {
			t.Fatalf("logout audit %q %v", meta, err)
		}
		var revoked *int64
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT revoked_at FROM sessions WHERE id = $1`, u.SessionID).Scan(&revoked)
		if revoked == nil {
			t.Fatal("session not revoked")
		}

		// With the cookie instead of a bearer.
		tok, _ := e.NewSession(t, u.ID)
		must(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/logout", Header: map[string]string{"Cookie": auth.CookieName + "=" + tok}}), 204)
		must(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/logout", Header: map[string]string{"Cookie": auth.CookieName + "=" + tok}}), 401)

		e.Call(t, "POST", "/v1/auth/logout", "", nil, 401)
		key, _ := e.NewAPIKey(t, u.ID)
		e.Call(t, "POST", "/v1/auth/logout", key, nil, 403)
	})
}

var tokenRE = regexp.MustCompile(`hm_pr_[0-9A-Za-z]+`)

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		exec(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)

		unknown := e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": "nobody@example.test"}, 200)
		known := e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, 200)
		if string(unknown.Body) != string(known.Body) {
			t.Fatalf("answers differ: %s / %s", unknown.Body, known.Body)
		}
		if msgs, _ := mailtest.Outbox(ctx, e.Server.DB, "nobody@example.test"); len(msgs) != 0 {
			t.Fatal("mail sent to an unknown address")
		}
		msgs, err := mailtest.Outbox(ctx, e.Server.DB, u.Email)
		if err != nil || len(msgs) != 1 || msgs[0].Kind != mail.KindPasswordReset || msgs[0].Locale != "de" {
			t.Fatalf("outbox %v %+v", err, msgs)
		}
		tok := tokenRE.FindString(msgs[0].Text)
		if tok == "" || !strings.Contains(msgs[0].Text, e.URL+"/reset-password?token="+tok) {
			t.Fatalf("mail text without token link: %s", msgs[0].Text)
		}
		if auditCount(t, e, u.ID, "password_reset_requested", "success") != 1 {
			t.Fatal("request not audited")
		}
		var stored string
		_ = e.Server.DB.QueryRowContext(ctx, `SELECT token_hash FROM password_reset_tokens WHERE user_id = $1`, u.ID).Scan(&stored)
		if stored == "" || stored == tok || strings.Contains(stored, "hm_pr_") {
			t.Fatalf("token stored as %q", stored)
		}

		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": tok, "password": "short"}, 400)
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": "hm_pr_unknown", "password": "brand new password"}, 400)
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": tok, "password": "brand new password"}, 200)
		// Single use; every session revoked; the new password works, the old one not.
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": tok, "password": "another new password"}, 400)
		e.Call(t, "POST", "/v1/auth/logout", u.Token, nil, 401)
		login(t, e, u.Email, pw, 401)
		login(t, e, u.Email, "brand new password", 200)
		if auditCount(t, e, u.ID, "password_changed", "success") != 1 {
			t.Fatal("password_changed not audited")
		}

		// Expired after one hour; a newer link replaces an older one.
		e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, 200)
		msgs, _ = mailtest.Outbox(ctx, e.Server.DB, u.Email)
		old := tokenRE.FindString(msgs[0].Text)
		e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, 200)
		msgs, _ = mailtest.Outbox(ctx, e.Server.DB, u.Email)
		newer := tokenRE.FindString(msgs[0].Text)
		if old == newer || old == "" {
			t.Fatal("no new token")
		}
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": old, "password": "brand new password 2"}, 400)
		e.Advance(t, auth.ResetTTL+time.Second)
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": newer, "password": "brand new password 2"}, 400)

		// Per-account throttle: silent (same answer, no more mail); per-address: 429.
		e.Advance(t, auth.ResetWindow)
		for range auth.ResetPerAccount + 2 {
			e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, 200)
		}
		msgs, _ = mailtest.Outbox(ctx, e.Server.DB, u.Email)
		if len(msgs) != 3+auth.ResetPerAccount {
			t.Fatalf("mails after throttling: %d", len(msgs))
		}
		for range auth.ResetPerIP - auth.ResetPerAccount - 2 {
			e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": "x@example.test"}, 200)
		}
		r := e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": "x@example.test"}, 429)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
		e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": "bad"}, 400)
	})
}

func TestSecureCookieOnHTTPS(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		c := cookies(login(t, e, u.Email, pw, 200))[auth.CookieName]
		if c == nil || !c.Secure || !c.HttpOnly {
			t.Fatalf("cookie on https %+v", c)
		}
	}, func(c *config.Config) { c.PublicURL = "https://id.example.test" })
}
