package app_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/users"
)

var verifyLink = regexp.MustCompile(`/verify-email\?token=(hm_ev_[0-9A-Za-z]+)`)

// verifyTokenTo returns the token of the newest mail to addr, a verification mail.
func verifyTokenTo(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil || len(msgs) == 0 || msgs[0].Kind != mail.KindEmailVerify {
		t.Fatalf("no verification mail to %s: %v %d", addr, err, len(msgs))
	}
	m := verifyLink.FindStringSubmatch(msgs[0].Text)
	if m == nil || !strings.Contains(msgs[0].Text, e.URL+m[0]) {
		t.Fatalf("mail without link: %s", msgs[0].Text)
	}
	return m[1]
}

// The registration mail's token verifies the address through POST
// /v1/auth/verify-email (no session needed); POST /v1/auth/verify-email/resend
// sends a new one for the signed-in user. Every answer is checked against
// api/openapi.yaml by the harness.
func TestRegisteredEmailVerificationEndpoints(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const addr = "reg.verify@example.test"
		r := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": addr, "password": "correct horse battery"}, http.StatusCreated).JSON()
		sess := r["session_token"].(string)
		uid := r["user"].(map[string]any)["id"].(string)
		unverified := `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND platform_id = $2 AND NOT email_verified`
		if count(t, e, unverified, uid, users.PlatformID("email")) != 1 {
			t.Fatal("registered address is verified already")
		}
		first := verifyTokenTo(t, e, addr)

		// Resend: session only, rate-limited per user, replaces the token.
		e.Call(t, "POST", "/v1/auth/verify-email/resend", "", nil, http.StatusUnauthorized)
		key, _ := e.NewAPIKey(t, uid)
		e.Call(t, "POST", "/v1/auth/verify-email/resend", key, nil, http.StatusForbidden)
		r = e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusOK).JSON()
		if r["expires_at"] != apptest.Start.Add(24*time.Hour).Format(time.RFC3339) || r["message"] == "" {
			t.Fatalf("resend = %v", r)
		}
		tok := verifyTokenTo(t, e, addr)
		for range 4 {
			e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusOK)
		}
		limited := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/verify-email/resend", Token: sess})
		if limited.Status != http.StatusTooManyRequests || limited.Header.Get("Retry-After") == "" || limited.Header.Get("RateLimit-Limit") != "5" {
			t.Fatalf("sixth resend: %d %v", limited.Status, limited.Header)
		}
		latest := verifyTokenTo(t, e, addr)

		// Bad tokens: 400, nothing changes.
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": first}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": "garbage"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": ""}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": 7}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", "{", http.StatusBadRequest)
		if count(t, e, unverified, uid, users.PlatformID("email")) != 1 {
			t.Fatal("a refused token verified the address")
		}

		// The newest token works once, without a session.
		r = e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": latest}, http.StatusOK).JSON()
		if r["success"] != true || r["message"] == "" {
			t.Fatalf("verify = %v", r)
		}
		if count(t, e, unverified, uid, users.PlatformID("email")) != 0 {
			t.Fatal("address not verified")
		}
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": latest}, http.StatusBadRequest)
		// Verified: no new mail (400, before the exhausted rate limit).
		e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusBadRequest)

		// 409 when another user has verified the address in the meantime.
		const contested = "contested.api@example.test"
		r = e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": contested, "password": "correct horse battery"}, http.StatusCreated).JSON()
		other := r["user"].(map[string]any)["id"].(string)
		ctok := verifyTokenTo(t, e, contested)
		err := e.Server.DB.Tx(context.Background(), func(tx *db.Tx) error {
			_, _, err := users.Create(context.Background(), tx, db.TS(e.Clock.Now()), users.NewAccount{
				PlatformSlug: "google", PlatformUserID: uuid.NewString(), Name: "Owner", Email: contested, EmailVerified: true,
			})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": ctok}, http.StatusConflict)
		e.Call(t, "POST", "/v1/auth/verify-email/resend", r["session_token"].(string), nil, http.StatusConflict)
		if count(t, e, unverified, other, users.PlatformID("email")) != 1 {
			t.Fatal("a contested address was verified")
		}
	})
}
