package accounts_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"hmid/internal/accounts"
	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/authn"
	"hmid/internal/mail"
	"hmid/internal/password"
)

type failingSender struct{}

func (failingSender) Send(context.Context, mail.Message) error { return errors.New("smtp down") }

// A request whose mail cannot be sent is withdrawn and answered as unavailable
// (for the link, by a user whose email account was removed).
func TestRequestWithdrawnWhenMailFails(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := e.Server
		svc := &accounts.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Mail: failingSender{}, Limiter: s.Limiter,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), PublicURL: e.URL, HashPassword: password.Hash}
		u := e.NewUser(t, apptest.UserSpec{})
		ctx := authn.WithPrincipal(context.Background(), authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, UserID: u.ID}, nil))
		if _, err := svc.RequestEmailChange(ctx, u.ID, "new@example.test"); !apperr.Is(err, apperr.ServiceUnavailable) {
			t.Fatalf("email change: %v", err)
		}
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM email_change_requests`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("pending change requests = %d, %v", n, err)
		}
		p := e.NewUser(t, apptest.UserSpec{})
		if _, err := s.DB.ExecContext(ctx, `DELETE FROM platform_accounts WHERE user_id = $1`, p.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.RequestEmailLink(ctx, p.ID, "link@example.test", "long enough"); !apperr.Is(err, apperr.ServiceUnavailable) {
			t.Fatalf("email link: %v", err)
		}
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM email_link_requests`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("pending link requests = %d, %v", n, err)
		}
	})
}
