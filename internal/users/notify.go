package users

import (
	"context"
	"log/slog"

	"hmid/internal/mail"
)

// Mailer sends a mail (mail.Sender).
type Mailer interface {
	Send(ctx context.Context, m mail.Message) error
}

// NotifyReleased tells each user of out.Released, by mail to the address,
// that a provider sign-in verified it for another account and that their own
// login was kept (docs/decisions.md, "One linking rule for every way in").
// Call it after the sign-in's transaction committed: a sign-in that rolled
// back (a ban, a collision that is retried) released nothing. A mail that
// cannot be sent is logged and does not fail the sign-in, which has happened.
func (s *Service) NotifyReleased(ctx context.Context, out Outcome) {
	for _, r := range out.Released {
		msg, err := mail.Render(mail.KindAddressVerifiedElsewhere, r.Locale, mail.Data{
			Name: r.Username, Email: r.Email, PlatformName: r.Provider, Time: s.Clock.Now(),
		})
		if err == nil && s.Mail != nil {
			msg.To = r.Email
			err = s.Mail.Send(ctx, msg)
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "released-address mail not sent", "user_id", r.UserID, "error", err)
		}
	}
}

// logger is Log, or the default logger for a Service built without one.
func (s *Service) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
