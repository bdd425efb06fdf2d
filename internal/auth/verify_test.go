package auth_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/token"
	"hmid/internal/users"
)

var verifyTokenRE = regexp.MustCompile(`hm_ev_[0-9A-Za-z]+`)

// service is an auth.Service on the test server's database, limiter and
// outbox, called directly (the service level under the JSON endpoints).
func service(e *apptest.Env) *auth.Service {
	return &auth.Service{
		DB: e.Server.DB, Clock: e.Clock, Audit: e.Server.Audit, Limiter: e.Server.Limiter, Epoch: e.Server.Epoch,
		Resolver: e.Server.Guard.Resolver, Mailer: e.Server.Mail, Log: e.Server.Log, PublicURL: e.URL,
	}
}

var meta = auth.Meta{IP: "192.0.2.1", UserAgent: "test", Source: "api"}

// register signs up addr through the service and returns the new user's id.
func register(t *testing.T, s *auth.Service, addr string) string {
	t.Helper()
	res, err := s.Register(context.Background(), auth.RegisterInput{Email: addr, Password: pw}, meta)
	if err != nil {
		t.Fatalf("register %s: %v", addr, err)
	}
	return res.User.ID
}

// lastVerifyToken is the token of the newest verification mail to addr,
// checked to be a verification mail with the link to the page.
func lastVerifyToken(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("outbox of %s: %v, %d mails", addr, err, len(msgs))
	}
	m := msgs[0]
	tok := verifyTokenRE.FindString(m.Text)
	if m.Kind != mail.KindEmailVerify || tok == "" || !strings.Contains(m.Text, e.URL+auth.VerifyPage+"?token="+tok) || !strings.Contains(m.Text, addr) {
		t.Fatalf("not a verification mail with a link: %s %s", m.Kind, m.Text)
	}
	return tok
}

func verifyMails(t *testing.T, e *apptest.Env, addr string) int {
	t.Helper()
	n := 0
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == mail.KindEmailVerify {
			n++
		}
	}
	return n
}

// verified reports whether the user's email-platform account is verified.
func verified(t *testing.T, e *apptest.Env, userID string) bool {
	t.Helper()
	var v bool
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT email_verified FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`,
		userID, users.PlatformID(auth.Platform)).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func wantKind(t *testing.T, err error, k apperr.Kind) {
	t.Helper()
	if err == nil || apperr.KindOf(err) != k {
		t.Fatalf("error %v, want kind %v", err, k)
	}
}

// providerOwner creates another user who signed in with Google and whose
// verified Google account carries addr: the owner of addr.
func providerOwner(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	ctx := context.Background()
	var uid string
	err := e.Server.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		uid, _, err = users.Create(ctx, tx, db.TS(e.Clock.Now()), users.NewAccount{
			PlatformSlug: "google", PlatformUserID: uuid.NewString(), Name: "Owner", Email: addr, EmailVerified: true,
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

func TestRegistrationMailVerifiesAddress(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		uid := register(t, s, "Fresh.Person@Example.test")
		const addr = "fresh.person@example.test"
		if verified(t, e, uid) {
			t.Fatal("registered address is verified before the link was followed")
		}
		msgs, _ := mailtest.Outbox(ctx, e.Server.DB, addr)
		if len(msgs) != 1 || msgs[0].Locale != "en" || msgs[0].Subject != "Confirm your email address" || !strings.Contains(msgs[0].HTML, "<strong>"+addr+"</strong>") {
			t.Fatalf("mails %+v", msgs)
		}
		tok := lastVerifyToken(t, e, addr)
		var stored string
		var expires int64
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT token_hash, expires_at FROM email_verification_tokens WHERE user_id = $1`, uid).Scan(&stored, &expires); err != nil {
			t.Fatal(err)
		}
		if stored != token.Hash(tok) || strings.Contains(stored, "hm_ev_") {
			t.Fatalf("token stored as %q", stored)
		}
		if db.FromTS(expires) != apptest.Start.Add(24*time.Hour) {
			t.Fatalf("expires %v", db.FromTS(expires))
		}

		if got, err := s.VerificationAddress(ctx, tok); err != nil || got != addr {
			t.Fatalf("VerificationAddress %q %v", got, err)
		}
		if verified(t, e, uid) {
			t.Fatal("looking at the token verified the address")
		}
		got, err := s.VerifyEmail(ctx, " "+tok+" ", meta)
		if err != nil || got != addr {
			t.Fatalf("VerifyEmail %q %v", got, err)
		}
		if !verified(t, e, uid) {
			t.Fatal("address not verified")
		}
		var md string
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT metadata FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated'`, uid).Scan(&md); err != nil ||
			!strings.Contains(md, "email_verified") || !strings.Contains(md, "verification_link") {
			t.Fatalf("audit %q %v", md, err)
		}

		// Single use; verified accounts get no further mail.
		_, err = s.VerifyEmail(ctx, tok, auth.Meta{})
		wantKind(t, err, apperr.BadRequest)
		_, err = s.VerificationAddress(ctx, tok)
		wantKind(t, err, apperr.BadRequest)
		_, err = s.ResendVerification(ctx, uid, auth.Meta{})
		wantKind(t, err, apperr.Validation)
		if auditCount(t, e, uid, "user_updated", "success") != 1 || verifyMails(t, e, addr) != 1 {
			t.Fatal("a used token or a refused resend changed something")
		}
	})
}

func TestVerifyEmailRefusesBadTokens(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		uid := register(t, s, "late@example.test")
		first := lastVerifyToken(t, e, "late@example.test")

		for _, tok := range []string{"garbage", "hm_pr_" + first[6:], token.New(auth.PrefixEmailVerify), first + "x", "hm_ev_" + strings.Repeat("!", 43)} {
			_, err := s.VerifyEmail(ctx, tok, meta)
			wantKind(t, err, apperr.BadRequest)
		}
		_, err := s.VerifyEmail(ctx, "  ", meta)
		wantKind(t, err, apperr.Validation)

		// Expired after 24 hours: refused, and the account stays unverified.
		e.Advance(t, auth.VerifyTTL+time.Second)
		_, err = s.VerifyEmail(ctx, first, meta)
		wantKind(t, err, apperr.BadRequest)
		_, err = s.VerificationAddress(ctx, first)
		wantKind(t, err, apperr.BadRequest)

		// A new mail, in the user's language, replaces the earlier token.
		exec(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, uid)
		if _, err := s.ResendVerification(ctx, uid, meta); err != nil {
			t.Fatal(err)
		}
		second := lastVerifyToken(t, e, "late@example.test")
		if msgs, _ := mailtest.Outbox(ctx, e.Server.DB, "late@example.test"); msgs[0].Locale != "de" || msgs[0].Subject != "Bestätigen Sie Ihre E-Mail-Adresse" {
			t.Fatalf("resent mail %s %q", msgs[0].Locale, msgs[0].Subject)
		}
		if _, err := s.ResendVerification(ctx, uid, meta); err != nil {
			t.Fatal(err)
		}
		third := lastVerifyToken(t, e, "late@example.test")
		if second == third {
			t.Fatal("no new token")
		}
		_, err = s.VerifyEmail(ctx, second, meta)
		wantKind(t, err, apperr.BadRequest)
		if verified(t, e, uid) || auditCount(t, e, uid, "user_updated", "success") != 0 {
			t.Fatal("a refused token changed the account")
		}
		var n int
		_ = e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM email_verification_tokens WHERE user_id = $1`, uid).Scan(&n)
		if n != 1 {
			t.Fatalf("%d tokens stored, want the newest only", n)
		}

		// A token whose address is no longer the account's login verifies nothing.
		exec(t, e, `UPDATE platform_accounts SET platform_user_id = 'moved@example.test', email = 'moved@example.test' WHERE user_id = $1`, uid)
		_, err = s.VerifyEmail(ctx, third, meta)
		wantKind(t, err, apperr.BadRequest)
		if verified(t, e, uid) {
			t.Fatal("verified an address the account no longer has")
		}
		exec(t, e, `UPDATE platform_accounts SET platform_user_id = 'late@example.test', email = 'late@example.test' WHERE user_id = $1`, uid)

		// A deleted user's token is refused.
		exec(t, e, `UPDATE users SET deleted_at = $1 WHERE id = $2`, db.TS(e.Clock.Now()), uid)
		_, err = s.VerifyEmail(ctx, third, meta)
		wantKind(t, err, apperr.BadRequest)
		exec(t, e, `UPDATE users SET deleted_at = NULL WHERE id = $1`, uid)
		if _, err := s.VerifyEmail(ctx, third, meta); err != nil || !verified(t, e, uid) {
			t.Fatalf("the newest token after the refusals: %v", err)
		}
	})
}

// An address belongs to at most one user: when another user owns it
// verified by the time the link is followed, nothing changes (409), and a
// password reset leaves it unverified too.
func TestVerifyEmailOwnedByAnotherUser(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		const addr = "contested@example.test"
		uid := register(t, s, addr)
		tok := lastVerifyToken(t, e, addr)
		owner := providerOwner(t, e, addr)

		_, err := s.VerifyEmail(ctx, tok, meta)
		wantKind(t, err, apperr.Conflict)
		_, err = s.ResendVerification(ctx, uid, meta)
		wantKind(t, err, apperr.Conflict)
		if verified(t, e, uid) || auditCount(t, e, uid, "user_updated", "success") != 0 || verifyMails(t, e, addr) != 1 {
			t.Fatal("a refused verification changed something")
		}
		if got, err := s.VerificationAddress(ctx, tok); err != nil || got != addr {
			t.Fatalf("the token was used up by the refusal: %q %v", got, err)
		}

		// No reset is mailed: the mail would reach the address's owner and
		// lead them into an account someone else registered under it. The
		// answer is the same as for any address (no enumeration).
		if err := s.RequestReset(ctx, addr, meta); err != nil {
			t.Fatal(err)
		}
		if msgs, _ := mailtest.Outbox(ctx, e.Server.DB, addr); len(msgs) != 1 || msgs[0].Kind != mail.KindEmailVerify {
			t.Fatalf("mails to the owned address after a reset request: %d", len(msgs))
		}
		if verified(t, e, uid) {
			t.Fatal("a reset request verified an address another user owns")
		}

		// An owner scheduled for deletion keeps the address through the
		// grace period (they may still cancel); once purged, the same token works.
		exec(t, e, `UPDATE users SET deleted_at = $1 WHERE id = $2`, db.TS(e.Clock.Now()), owner)
		if _, err := s.VerifyEmail(ctx, tok, meta); apperr.KindOf(err) != apperr.Conflict {
			t.Fatalf("verification while the owner is scheduled for deletion: %v, want a conflict", err)
		}
		exec(t, e, `DELETE FROM users WHERE id = $1`, owner)
		if _, err := s.VerifyEmail(ctx, tok, meta); err != nil || !verified(t, e, uid) {
			t.Fatalf("verification after the owner left: %v", err)
		}
	})
}

func TestResendVerificationRateLimit(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		uid := register(t, s, "again@example.test")
		for i := range auth.VerifyMailLimit {
			exp, err := s.ResendVerification(ctx, uid, meta)
			if err != nil || !exp.Equal(e.Clock.Now().Add(auth.VerifyTTL)) {
				t.Fatalf("resend %d: %v %v", i, exp, err)
			}
		}
		_, err := s.ResendVerification(ctx, uid, meta)
		wantKind(t, err, apperr.TooManyRequests)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.RetryAfter <= 0 {
			t.Fatalf("no Retry-After: %v", err)
		}
		if n := verifyMails(t, e, "again@example.test"); n != 1+auth.VerifyMailLimit {
			t.Fatalf("%d mails", n)
		}
		// Another user is not held back; the allowance comes back over time.
		other := register(t, s, "other.again@example.test")
		if _, err := s.ResendVerification(ctx, other, meta); err != nil {
			t.Fatal(err)
		}
		e.Advance(t, auth.VerifyMailWindow/auth.VerifyMailLimit)
		if _, err := s.ResendVerification(ctx, uid, meta); err != nil {
			t.Fatal(err)
		}

		// Without an email account there is nothing to verify.
		exec(t, e, `UPDATE platform_accounts SET platform_id = $1 WHERE user_id = $2`, users.PlatformID("google"), other)
		_, err = s.ResendVerification(ctx, other, meta)
		wantKind(t, err, apperr.Validation)
	})
}

func TestPasswordResetVerifiesAddress(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		const addr = "forgetful@example.test"
		uid := register(t, s, addr)
		exec(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, uid)
		if err := s.RequestReset(ctx, addr, meta); err != nil {
			t.Fatal(err)
		}
		msgs, _ := mailtest.Outbox(ctx, e.Server.DB, addr)
		if verified(t, e, uid) {
			t.Fatal("asking for a reset verified the address")
		}
		if err := s.ConfirmReset(ctx, tokenRE.FindString(msgs[0].Text), "brand new password", meta); err != nil {
			t.Fatal(err)
		}
		if !verified(t, e, uid) {
			t.Fatal("a completed reset did not verify the address")
		}
		var md string
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT metadata FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated'`, uid).Scan(&md); err != nil || !strings.Contains(md, "password_reset") {
			t.Fatalf("audit %q %v", md, err)
		}
		// The verification mail's link still answers success, and changes nothing more.
		if _, err := s.VerifyEmail(ctx, lastVerifyTokenOf(t, e, addr), auth.Meta{}); err != nil {
			t.Fatal(err)
		}
		if auditCount(t, e, uid, "user_updated", "success") != 1 {
			t.Fatal("verified twice")
		}
		// Verified by the reset, the account gets no further verification mail.
		_, err := s.ResendVerification(ctx, uid, auth.Meta{})
		wantKind(t, err, apperr.Validation)
	})
}

// lastVerifyTokenOf finds the newest verification mail among other mails to addr.
func lastVerifyTokenOf(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == mail.KindEmailVerify {
			return verifyTokenRE.FindString(m.Text)
		}
	}
	t.Fatalf("no verification mail to %s", addr)
	return ""
}

// failingMailer refuses every mail.
type failingMailer struct{}

func (failingMailer) Send(context.Context, mail.Message) error { return errors.New("mail server down") }

// A mail that cannot be sent does not undo a registration (the user is
// signed in and may ask again); asking again answers 503 and keeps no token.
func TestVerificationMailFailure(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		s := service(e)
		s.Mailer = failingMailer{}
		res, err := s.Register(ctx, auth.RegisterInput{Email: "unlucky@example.test", Password: pw}, meta)
		if err != nil || !strings.HasPrefix(res.Session.Token, "hm_st_") {
			t.Fatalf("register without mail: %v", err)
		}
		_, err = s.ResendVerification(ctx, res.User.ID, meta)
		wantKind(t, err, apperr.ServiceUnavailable)
		var n int
		_ = e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM email_verification_tokens WHERE user_id = $1`, res.User.ID).Scan(&n)
		if n != 0 {
			t.Fatalf("%d tokens kept for mails never sent", n)
		}
		s.Mailer = e.Server.Mail
		if _, err := s.ResendVerification(ctx, res.User.ID, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := s.VerifyEmail(ctx, lastVerifyToken(t, e, "unlucky@example.test"), meta); err != nil || !verified(t, e, res.User.ID) {
			t.Fatalf("verify after the mail server came back: %v", err)
		}
	})
}
