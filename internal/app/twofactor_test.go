package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/mail"
	"hmid/internal/users"
)

const tfBase = "/v1/users/me/2fa"

// tfCode is what an authenticator app shows for secret at t (RFC 6238,
// SHA1, 30 s, 6 digits).
func tfCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tfWrongCode returns a 6-digit code valid for none of the steps around now.
func tfWrongCode(t testing.TB, secret string, now time.Time) string {
	t.Helper()
	valid := map[string]bool{}
	for _, off := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		valid[tfCode(t, secret, now.Add(off))] = true
	}
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		if !valid[c] {
			return c
		}
	}
	t.Fatal("no wrong code found")
	return ""
}

// tfSetup starts a setup for tok's user (or body's user_id) and returns the secret.
func tfSetup(t testing.TB, e *apptest.Env, tok string, body any) string {
	t.Helper()
	r := e.Call(t, "POST", tfBase+"/setup", tok, body, http.StatusOK)
	return r.JSON()["secret"].(string)
}

// tfEnable sets up and verifies two-factor authentication for u and
// returns the secret and the backup codes.
func tfEnable(t testing.TB, e *apptest.Env, u apptest.User) (string, []string) {
	t.Helper()
	secret := tfSetup(t, e, u.Token, nil)
	r := e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
	var out struct {
		BackupCodes []string `json:"backup_codes"`
	}
	r.Decode(t, &out)
	return secret, out.BackupCodes
}

func tfStatus(t testing.TB, e *apptest.Env, tok string) map[string]any {
	t.Helper()
	return e.Call(t, "GET", tfBase+"/status", tok, nil, http.StatusOK).JSON()
}

var backupCodeShape = regexp.MustCompile(`^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$`)

func TestTwoFactorLifecycle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		st := tfStatus(t, e, u.Token)
		if st["enabled"] != false || st["enabled_at"] != nil || st["platform_slug"] != nil || st["backup_codes_remaining"] != float64(0) {
			t.Fatalf("initial status = %v", st)
		}

		// Setup: secret, otpauth URI and a PNG QR code.
		r := e.Call(t, "POST", tfBase+"/setup", u.Token, nil, http.StatusOK)
		setup := r.JSON()
		secret := setup["secret"].(string)
		if setup["platform_slug"] != "email" || len(secret) != 32 {
			t.Fatalf("setup = %v", setup)
		}
		if exp, _ := time.Parse(time.RFC3339, setup["expires_at"].(string)); !exp.Equal(e.Clock.Now().Add(10 * time.Minute)) {
			t.Fatalf("expires_at = %v", setup["expires_at"])
		}
		uri, err := url.Parse(setup["qr_code_url"].(string))
		if err != nil || uri.Scheme != "otpauth" || uri.Host != "totp" || uri.Path != "/hmid:"+u.Username ||
			uri.Query().Get("issuer") != "hmid" || uri.Query().Get("secret") != secret || uri.Query().Get("digits") != "6" {
			t.Fatalf("qr_code_url = %v", setup["qr_code_url"])
		}
		img := setup["qr_code_image"].(string)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(img, "data:image/png;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		if pic, err := png.Decode(bytes.NewReader(raw)); err != nil || pic.Bounds().Dx() != 256 {
			t.Fatalf("qr_code_image is not a 256px PNG: %v", err)
		}
		// The secret is stored sealed, never in plain text.
		var sealed string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT secret_sealed FROM two_factor WHERE user_id = $1`, u.ID).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sealed, secret) || !strings.HasPrefix(sealed, "v1.") {
			t.Fatalf("secret stored as %q", sealed)
		}
		if st := tfStatus(t, e, u.Token); st["enabled"] != false {
			t.Fatalf("pending setup reported enabled: %v", st)
		}

		// Verify: a wrong code, then the right one, with the code an app shows 30 s late.
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfWrongCode(t, secret, e.Clock.Now())}, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": "12345"}, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{}, http.StatusBadRequest)
		late := tfCode(t, secret, e.Clock.Now().Add(-30*time.Second))
		r = e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": late}, http.StatusOK)
		ver := r.JSON()
		if ver["success"] != true || ver["platform_slug"] != "email" || ver["message"] == "" {
			t.Fatalf("verify = %v", ver)
		}
		codes := ver["backup_codes"].([]any)
		if len(codes) != 10 {
			t.Fatalf("backup codes = %v", codes)
		}
		seen := map[string]bool{}
		for _, c := range codes {
			if !backupCodeShape.MatchString(c.(string)) || seen[c.(string)] {
				t.Fatalf("backup code %q", c)
			}
			seen[c.(string)] = true
		}
		// Backup codes are stored as Argon2id hashes only.
		if n := count(t, e, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1 AND code_hash LIKE '$argon2id$%'`, u.ID); n != 10 {
			t.Fatalf("stored hashes = %d", n)
		}
		st = tfStatus(t, e, u.Token)
		if st["enabled"] != true || st["setup_platform"] != "email" || st["platform_slug"] != "email" || st["backup_codes_remaining"] != float64(10) {
			t.Fatalf("status = %v", st)
		}
		if at, _ := time.Parse(time.RFC3339, st["enabled_at"].(string)); !at.Equal(e.Clock.Now()) {
			t.Fatalf("enabled_at = %v", st["enabled_at"])
		}
		// Already enabled: setup and verify answer 400.
		e.Call(t, "POST", tfBase+"/setup", u.Token, nil, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusBadRequest)

		// Replay: the step accepted at verify is spent; the same code fails.
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": late}, http.StatusBadRequest)
		// Five minutes later the failure window is fresh.
		e.Advance(t, 5*time.Minute)

		// Regenerate: a backup code is refused; a TOTP code gives 10 new codes.
		r = e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": codes[0]}, http.StatusBadRequest)
		if !strings.Contains(r.JSON()["message"].(string), "backup codes are not accepted") {
			t.Fatalf("regenerate with backup code: %s", r.Body)
		}
		now := tfCode(t, secret, e.Clock.Now())
		r = e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": now}, http.StatusOK)
		regen := r.JSON()
		newCodes := regen["backup_codes"].([]any)
		if regen["success"] != true || len(newCodes) != 10 || regen["platform_slug"] != "email" {
			t.Fatalf("regenerate = %v", regen)
		}
		for _, c := range newCodes {
			if seen[c.(string)] {
				t.Fatalf("regenerated code %q repeats an old one", c)
			}
		}
		// The same code again is a replay.
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": now}, http.StatusBadRequest)
		// Old backup codes stopped working.
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": codes[1]}, http.StatusBadRequest)
		if st := tfStatus(t, e, u.Token); st["enabled"] != true || st["backup_codes_remaining"] != float64(10) {
			t.Fatalf("status after regenerate = %v", st)
		}

		// A backup code is single use (spent here through the login step),
		// and accepted in upper case without hyphens to disable.
		ctx := context.Background()
		if err := e.Server.SecondFactor.VerifyLogin(ctx, u.ID, newCodes[0].(string), "127.0.0.1", "test"); err != nil {
			t.Fatalf("login with backup code: %v", err)
		}
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": newCodes[0]}, http.StatusBadRequest)
		if st := tfStatus(t, e, u.Token); st["backup_codes_remaining"] != float64(9) {
			t.Fatalf("status after using a backup code = %v", st)
		}
		e.Advance(t, 5*time.Minute)
		loose := strings.ToUpper(strings.ReplaceAll(newCodes[1].(string), "-", ""))
		r = e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": loose}, http.StatusOK)
		if m := r.JSON(); m["success"] != true || m["message"] == "" {
			t.Fatalf("disable = %v", m)
		}
		if st := tfStatus(t, e, u.Token); st["enabled"] != false || st["backup_codes_remaining"] != float64(0) {
			t.Fatalf("status after disable = %v", st)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM two_factor WHERE user_id = $1`, u.ID) +
			count(t, e, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1`, u.ID); n != 0 {
			t.Fatalf("%d rows left after disable", n)
		}
		// Already disabled: disable and regenerate answer 400.
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": newCodes[2]}, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": "123456"}, http.StatusBadRequest)

		// Enable again and disable by TOTP; then by a lower-case hyphenated backup code.
		e.Clock.Advance(time.Minute)
		secret2, codes2 := tfEnable(t, e, u)
		if secret2 == secret {
			t.Fatal("a new setup reused the old secret")
		}
		e.Clock.Advance(30 * time.Second)
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": tfCode(t, secret2, e.Clock.Now())}, http.StatusOK)
		e.Clock.Advance(time.Minute)
		_, codes3 := tfEnable(t, e, u)
		if codes3[0] == codes2[0] {
			t.Fatal("backup codes repeat")
		}
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": codes3[3]}, http.StatusOK)

		// Audit trail and mails.
		for typ, want := range map[string]int{"2fa_enabled": 3, "2fa_disabled": 3, "2fa_backup_codes_regenerated": 1} {
			if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = $2 AND status = 'success'`, u.ID, typ); n != want {
				t.Errorf("%s events = %d, want %d", typ, n, want)
			}
		}
		// A rejected code is its method's event with status failure: a
		// TOTP's 2fa_verified, a backup code's 2fa_backup_code_used.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type IN ('2fa_verified', '2fa_backup_code_used') AND status = 'failure'`, u.ID); n < 5 {
			t.Errorf("failed 2fa_verified and 2fa_backup_code_used events = %d", n)
		}
		kinds := map[string]int{}
		for _, m := range outbox(t, e, u.Email) {
			kinds[m.Kind]++
			if m.Locale != "en" {
				t.Errorf("mail %s in %s", m.Kind, m.Locale)
			}
		}
		if kinds[mail.KindTwoFactorEnabled] != 3 || kinds[mail.KindTwoFactorDisabled] != 3 || kinds[mail.KindBackupCodesRegenerated] != 1 {
			t.Fatalf("mails = %v", kinds)
		}
	})
}

func TestTwoFactorMailsInUserLocale(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		secret, _ := tfEnable(t, e, u)
		e.Clock.Advance(30 * time.Second)
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		e.Clock.Advance(30 * time.Second)
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		msgs := outbox(t, e, u.Email)
		if len(msgs) != 3 {
			t.Fatalf("mails = %d", len(msgs))
		}
		// Newest first.
		want := []string{mail.KindTwoFactorDisabled, mail.KindBackupCodesRegenerated, mail.KindTwoFactorEnabled}
		for i, m := range msgs {
			if m.Kind != want[i] || m.Locale != "de" {
				t.Fatalf("mail %d = %s/%s, want %s/de", i, m.Kind, m.Locale, want[i])
			}
		}
		if !strings.Contains(msgs[2].Text, "Email") || !strings.Contains(msgs[2].Text, "22. November 2026 12:00 UTC") {
			t.Fatalf("enabled mail lacks platform or time:\n%s", msgs[2].Text)
		}
	})
}

func TestTwoFactorSetupExpiry(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": "123456"}, http.StatusBadRequest) // no setup
		secret := tfSetup(t, e, u.Token, map[string]any{})
		e.Clock.Advance(11 * time.Minute)
		r := e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusBadRequest)
		if !strings.Contains(r.JSON()["message"].(string), "expired") {
			t.Fatalf("expired verify: %s", r.Body)
		}
		// A new setup replaces the expired one; the old secret no longer works.
		secret2 := tfSetup(t, e, u.Token, nil)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfWrongCode(t, secret2, e.Clock.Now())}, http.StatusBadRequest)
		e.Clock.Advance(9 * time.Minute)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfCode(t, secret2, e.Clock.Now())}, http.StatusOK)
	})
}

func TestTwoFactorPlatforms(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"platform_id": "nope"}, http.StatusNotFound)
		e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"platform_id": "discord"}, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"platform_id": users.PlatformID("github")}, http.StatusBadRequest)
		r := e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"platform_id": users.PlatformID("email")}, http.StatusOK)
		if r.JSON()["platform_slug"] != "email" {
			t.Fatalf("setup = %s", r.Body)
		}
		// A platform that supports it once enabled by an operator.
		execSQL(t, e, `UPDATE platforms SET two_factor_supported = TRUE WHERE slug = 'discord'`)
		r = e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"platform_id": "discord"}, http.StatusOK)
		secret := r.JSON()["secret"].(string)
		e.Call(t, "POST", tfBase+"/verify", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		if st := tfStatus(t, e, u.Token); st["platform_slug"] != "discord" || st["setup_platform"] != "discord" {
			t.Fatalf("status = %v", st)
		}
		// Malformed bodies are 400, never 500.
		e.Call(t, "POST", tfBase+"/setup", u.Token, `{"platform_id": 5}`, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/setup", u.Token, `{`, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/verify", u.Token, `[]`, http.StatusBadRequest)
		e.Call(t, "DELETE", tfBase, u.Token, nil, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, `{"code": 123456}`, http.StatusBadRequest)
	})
}

func TestTwoFactorPermissions(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		manager := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ('role_tfm', 'TF Manager', '', FALSE, FALSE, 0, 0)`)
		execSQL(t, e, `INSERT INTO role_permissions (role_id, permission_id, created_at) SELECT 'role_tfm', id, 0 FROM permissions WHERE resource = 'two_factor' AND action = 'manage'`)
		execSQL(t, e, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, 'role_tfm', 0)`, manager.ID)
		noScope, _ := e.NewAPIKey(t, u.ID)
		readKey, _ := e.NewAPIKey(t, u.ID, "two_factor:read")
		writeKey, _ := e.NewAPIKey(t, u.ID, "two_factor:read", "two_factor:write")
		manageKey, _ := e.NewAPIKey(t, manager.ID, "two_factor:manage")
		q := "?user_id=" + other.ID

		// No or bad token.
		e.Call(t, "GET", tfBase+"/status", "", nil, http.StatusUnauthorized)
		e.Call(t, "POST", tfBase+"/setup", "hm_st_bogus", nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", tfBase, "", map[string]any{"code": "123456"}, http.StatusUnauthorized)

		// Self with a session: no permission needed, even without any role.
		bare := e.NewUser(t, apptest.UserSpec{Roles: []string{}})
		e.Call(t, "GET", tfBase+"/status", bare.Token, nil, http.StatusOK)
		e.Call(t, "GET", tfBase+"/requirement", bare.Token, nil, http.StatusOK)
		e.Call(t, "GET", tfBase+"/status?user_id="+bare.ID, bare.Token, nil, http.StatusOK)

		// API keys on their owner: two_factor:read / two_factor:write.
		e.Call(t, "GET", tfBase+"/status", noScope, nil, http.StatusForbidden)
		e.Call(t, "GET", tfBase+"/requirement", noScope, nil, http.StatusForbidden)
		e.Call(t, "GET", tfBase+"/status", readKey, nil, http.StatusOK)
		e.Call(t, "GET", tfBase+"/requirement", readKey, nil, http.StatusOK)
		e.Call(t, "POST", tfBase+"/setup", readKey, nil, http.StatusForbidden)
		e.Call(t, "POST", tfBase+"/verify", readKey, map[string]any{"code": "123456"}, http.StatusForbidden)
		e.Call(t, "DELETE", tfBase, readKey, map[string]any{"code": "123456"}, http.StatusForbidden)
		e.Call(t, "POST", tfBase+"/backup-codes/regenerate", readKey, map[string]any{"code": "123456"}, http.StatusForbidden)
		secret := tfSetup(t, e, writeKey, nil)
		e.Call(t, "POST", tfBase+"/verify", writeKey, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		if st := tfStatus(t, e, u.Token); st["enabled"] != true {
			t.Fatalf("API key setup did not enable: %v", st)
		}

		// Another user: two_factor:manage or super admin.
		e.Call(t, "GET", tfBase+"/status"+q, u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", tfBase+"/requirement"+q, writeKey, nil, http.StatusForbidden)
		e.Call(t, "POST", tfBase+"/setup", u.Token, map[string]any{"user_id": other.ID}, http.StatusForbidden)
		e.Call(t, "DELETE", tfBase, writeKey, map[string]any{"code": "123456", "user_id": other.ID}, http.StatusForbidden)
		// Without the permission an unknown id is 403 too, so ids cannot be probed.
		e.Call(t, "GET", tfBase+"/status?user_id=nobody", u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", tfBase+"/status"+q, manager.Token, nil, http.StatusOK)
		e.Call(t, "GET", tfBase+"/status"+q, manageKey, nil, http.StatusOK)
		e.Call(t, "GET", tfBase+"/status?user_id=nobody", manager.Token, nil, http.StatusNotFound)
		secret = tfSetup(t, e, admin.Token, map[string]any{"user_id": other.ID})
		r := e.Call(t, "POST", tfBase+"/verify", manager.Token, map[string]any{"user_id": other.ID, "code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		if len(r.JSON()["backup_codes"].([]any)) != 10 {
			t.Fatalf("verify for another user = %s", r.Body)
		}
		if st := tfStatus(t, e, other.Token); st["enabled"] != true {
			t.Fatalf("other user's status = %v", st)
		}
		// The audit names who acted.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = '2fa_enabled' AND actor_id = $2`, other.ID, manager.ID); n != 1 {
			t.Fatalf("2fa_enabled with actor = %d", n)
		}

		// System key: user_id is required.
		e.Call(t, "GET", tfBase+"/status", e.SystemKey, nil, http.StatusBadRequest)
		e.Call(t, "GET", tfBase+"/requirement", e.SystemKey, nil, http.StatusBadRequest)
		e.Call(t, "POST", tfBase+"/setup", e.SystemKey, nil, http.StatusBadRequest)
		e.Call(t, "GET", tfBase+"/status?user_id=nobody", e.SystemKey, nil, http.StatusNotFound)
		if st := e.Call(t, "GET", tfBase+"/status"+q, e.SystemKey, nil, http.StatusOK).JSON(); st["enabled"] != true {
			t.Fatalf("system key status = %v", st)
		}
		e.Clock.Advance(30 * time.Second)
		e.Call(t, "DELETE", tfBase, e.SystemKey, map[string]any{"user_id": other.ID, "code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		e.Call(t, "GET", tfBase+"/requirement"+q, e.SystemKey, nil, http.StatusOK)
		// A deleted user is not found.
		execSQL(t, e, `UPDATE users SET deleted_at = 1 WHERE id = $1`, other.ID)
		e.Call(t, "GET", tfBase+"/status"+q, e.SystemKey, nil, http.StatusNotFound)
	})
}

func TestTwoFactorThrottleParallel(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		secret, _ := tfEnable(t, e, u)
		e.Clock.Advance(30 * time.Second)
		wrong := tfWrongCode(t, secret, e.Clock.Now())
		const n = 20
		answers := apptest.AtOnce(n, func(int) *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "DELETE", Path: tfBase, Token: u.Token, Body: map[string]any{"code": wrong}})
		})
		perStatus := map[int]int{}
		for _, r := range answers {
			perStatus[r.Status]++
			if r.Status == http.StatusTooManyRequests {
				// Five attempts at once use the allowance up; one comes
				// back every FailureWindow/MaxFailures = 60 s.
				if retry := r.Header.Get("Retry-After"); retry != "60" {
					t.Errorf("429 with Retry-After %q, want 60", retry)
				}
			}
		}
		if perStatus[http.StatusBadRequest] != 5 || perStatus[http.StatusTooManyRequests] != 15 {
			t.Fatalf("statuses = %v, want 5×400 and 15×429", perStatus)
		}
		if got := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = '2fa_verified' AND status = 'failure'`, u.ID); got != n {
			t.Fatalf("failed attempts audited = %d, want %d", got, n)
		}
		// While blocked, even the right code (here at the login step) is refused.
		err := e.Server.SecondFactor.VerifyLogin(context.Background(), u.ID, tfCode(t, secret, e.Clock.Now()), "127.0.0.1", "test")
		if err == nil || !strings.Contains(err.Error(), "TooManyRequests") {
			t.Fatalf("login while blocked: %v", err)
		}
		// The allowance comes back; the right code works again.
		e.Advance(t, 5*time.Minute)
		e.Call(t, "DELETE", tfBase, u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
	})
}

func TestTwoFactorRequirementAndLogin(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		sf := e.Server.SecondFactor
		u := e.NewUser(t, apptest.UserSpec{})
		req := e.Call(t, "GET", tfBase+"/requirement", u.Token, nil, http.StatusOK).JSON()
		if req["required"] != false || len(req["required_by_roles"].([]any)) != 0 || req["enabled"] != false || req["can_enable"] != true || req["reason"] != nil {
			t.Fatalf("requirement = %v", req)
		}
		if need, err := sf.SetupRequired(ctx, u.ID, "email"); err != nil || need {
			t.Fatalf("SetupRequired = %v, %v", need, err)
		}

		// A role that requires it.
		execSQL(t, e, `UPDATE roles SET requires_two_factor = TRUE WHERE id = 'role_moderator'`)
		execSQL(t, e, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, 'role_moderator', 0)`, u.ID)
		req = e.Call(t, "GET", tfBase+"/requirement", u.Token, nil, http.StatusOK).JSON()
		if roles := req["required_by_roles"].([]any); req["required"] != true || len(roles) != 1 || roles[0] != "Moderator" || !strings.Contains(req["reason"].(string), "Moderator") {
			t.Fatalf("requirement with role = %v", req)
		}
		if need, err := sf.SetupRequired(ctx, u.ID, "email"); err != nil || !need {
			t.Fatalf("SetupRequired with role = %v, %v", need, err)
		}

		// A login platform that requires it (the user's last login platform).
		v := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE platforms SET two_factor_required = TRUE WHERE slug = 'github'`)
		if need, _ := sf.SetupRequired(ctx, v.ID, "github"); !need {
			t.Fatal("SetupRequired on a platform that requires it = false")
		}
		if need, _ := sf.SetupRequired(ctx, v.ID, ""); need {
			t.Fatal("SetupRequired on the user's email login = true")
		}
		execSQL(t, e, `UPDATE users SET last_login_provider = 'github' WHERE id = $1`, v.ID)
		req = e.Call(t, "GET", tfBase+"/requirement", v.Token, nil, http.StatusOK).JSON()
		if req["required"] != true || len(req["required_by_roles"].([]any)) != 0 || !strings.Contains(req["reason"].(string), "GitHub") {
			t.Fatalf("requirement by platform = %v", req)
		}

		// Enabled: no setup needed any more; the login step checks codes.
		if on, err := sf.Enabled(ctx, u.ID); err != nil || on {
			t.Fatalf("Enabled before = %v, %v", on, err)
		}
		if err := sf.VerifyLogin(ctx, u.ID, "123456", "127.0.0.1", "test"); err == nil {
			t.Fatal("VerifyLogin without two-factor succeeded")
		}
		secret, codes := tfEnable(t, e, u)
		if on, err := sf.Enabled(ctx, u.ID); err != nil || !on {
			t.Fatalf("Enabled after = %v, %v", on, err)
		}
		if need, _ := sf.SetupRequired(ctx, u.ID, "email"); need {
			t.Fatal("SetupRequired after enabling = true")
		}
		req = e.Call(t, "GET", tfBase+"/requirement", u.Token, nil, http.StatusOK).JSON()
		if req["enabled"] != true || req["can_enable"] != false || req["required"] != true {
			t.Fatalf("requirement when enabled = %v", req)
		}
		// The code used to verify is spent; the next step's code works once.
		if err := sf.VerifyLogin(ctx, u.ID, tfCode(t, secret, e.Clock.Now()), "127.0.0.1", "test"); err == nil {
			t.Fatal("replayed code accepted at login")
		}
		e.Clock.Advance(30 * time.Second)
		c := tfCode(t, secret, e.Clock.Now())
		if err := sf.VerifyLogin(ctx, u.ID, c, "127.0.0.1", "test"); err != nil {
			t.Fatalf("VerifyLogin TOTP: %v", err)
		}
		if err := sf.VerifyLogin(ctx, u.ID, c, "127.0.0.1", "test"); err == nil {
			t.Fatal("same code accepted twice at login")
		}
		if err := sf.VerifyLogin(ctx, u.ID, strings.ToUpper(codes[4]), "127.0.0.1", "test"); err != nil {
			t.Fatalf("VerifyLogin backup code: %v", err)
		}
		if err := sf.VerifyLogin(ctx, u.ID, codes[4], "127.0.0.1", "test"); err == nil {
			t.Fatal("backup code accepted twice at login")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'login_failed' AND status = 'failure'`, u.ID); n != 3 {
			t.Fatalf("login_failed events = %d, want 3", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = '2fa_verified' AND status = 'success'`, u.ID); n != 2 {
			t.Fatalf("2fa_verified events = %d, want 2 (verify and the TOTP login)", n)
		}
		// The backup code is an event of its own.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = '2fa_backup_code_used' AND status = 'success'
			AND metadata LIKE '%"method":"backup_code"%'`, u.ID); n != 1 {
			t.Fatalf("2fa_backup_code_used events = %d, want 1 (the backup-code login)", n)
		}
	})
}

func TestTwoFactorSingleUseUnderRace(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		secret := tfSetup(t, e, u.Token, nil)
		code := tfCode(t, secret, e.Clock.Now())
		// Parallel verifies of one setup: exactly one enables it.
		const n = 4
		statuses := apptest.AtOnce(n, func(int) int {
			return e.Do(t, apptest.Req{Method: "POST", Path: tfBase + "/verify", Token: u.Token, Body: map[string]any{"code": code}}).Status
		})
		ok := 0
		for _, s := range statuses {
			if s == http.StatusOK {
				ok++
			} else if s != http.StatusBadRequest {
				t.Fatalf("parallel verify answered %d", s)
			}
		}
		if ok != 1 || count(t, e, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1`, u.ID) != 10 {
			t.Fatalf("parallel verify: %d successes, statuses %v", ok, statuses)
		}

		// Parallel logins with one TOTP code, then with one backup code:
		// exactly one of each succeeds.
		e.Advance(t, 5*time.Minute)
		for _, c := range []func() string{
			func() string { return tfCode(t, secret, e.Clock.Now()) },
			func() string { return tfRegenerate(t, e, u, secret)[0] },
		} {
			c := c()
			errs := apptest.AtOnce(n, func(int) error {
				return e.Server.SecondFactor.VerifyLogin(context.Background(), u.ID, c, "127.0.0.1", "test")
			})
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
				}
			}
			if won != 1 {
				t.Fatalf("code %s: %d parallel logins succeeded: %v", c, won, errs)
			}
			e.Advance(t, 5*time.Minute)
		}
	})
}

// tfRegenerate regenerates u's backup codes with the current TOTP code.
func tfRegenerate(t testing.TB, e *apptest.Env, u apptest.User, secret string) []string {
	t.Helper()
	var out struct {
		BackupCodes []string `json:"backup_codes"`
	}
	e.Call(t, "POST", tfBase+"/backup-codes/regenerate", u.Token, map[string]any{"code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK).Decode(t, &out)
	return out.BackupCodes
}

func TestTwoFactorAuditDetails(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		secret := tfSetup(t, e, u.Token, nil)
		hdr := map[string]string{"X-Source-Service": "id", "User-Agent": "tf-test/1.0"}
		e.Do(t, apptest.Req{Method: "POST", Path: tfBase + "/verify", Token: u.Token, Header: hdr,
			Body: map[string]any{"code": tfWrongCode(t, secret, e.Clock.Now())}})
		r := e.Do(t, apptest.Req{Method: "POST", Path: tfBase + "/verify", Token: u.Token, Header: hdr,
			Body: map[string]any{"code": tfCode(t, secret, e.Clock.Now())}})
		if r.Status != http.StatusOK {
			t.Fatalf("verify: %d %s", r.Status, r.Body)
		}
		var ip, ua, source, meta, status string
		err := e.Server.DB.QueryRowContext(context.Background(), `SELECT ip_address, user_agent, source_service, metadata, status FROM audit_events
			WHERE user_id = $1 AND event_type = '2fa_enabled'`, u.ID).Scan(&ip, &ua, &source, &meta, &status)
		if err != nil {
			t.Fatal(err)
		}
		if ip != "127.0.0.1" || ua != "tf-test/1.0" || source != "id" || status != "success" || !strings.Contains(meta, `"platform":"email"`) {
			t.Fatalf("2fa_enabled event: %s %s %s %s %s", ip, ua, source, meta, status)
		}
		var errMsg string
		err = e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata, error_message FROM audit_events
			WHERE user_id = $1 AND event_type = '2fa_verified' AND status = 'failure'`, u.ID).Scan(&meta, &errMsg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(meta, `"operation":"verify"`) || !strings.Contains(meta, `"method":"totp"`) || errMsg == "" {
			t.Fatalf("failed attempt event: %s %s", meta, errMsg)
		}
	})
}

// TestLoginDeviceCookieTwoFactor: with two-factor authentication the device
// cookie comes with the session, after the code, not after the password
// alone.
func TestLoginDeviceCookieTwoFactor(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pw = "correct horse battery"
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		secret, _ := tfEnable(t, e, u)
		device := func(r *apptest.Resp) *http.Cookie {
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				if c.Name == auth.DeviceCookieName {
					return c
				}
			}
			return nil
		}
		r := e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw}, http.StatusOK)
		if r.JSON()["two_factor_required"] != true || device(r) != nil {
			t.Fatalf("password step: %s %v", r.Body, r.Header)
		}
		e.Clock.Advance(31 * time.Second) // a fresh TOTP step
		r = e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw, "code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		if c := device(r); c == nil || c.Value == "" || !c.HttpOnly {
			t.Fatalf("no device cookie after the code: %v", r.Header)
		}
	})
}
