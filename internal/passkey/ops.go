package passkey

import (
	"context"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/mail"
)

// Rename gives passkey id of userID a new name (1 to MaxName bytes).
// Errors: 400 bad name, 404 unknown or another user's passkey.
func (s *Service) Rename(ctx context.Context, userID, id, name string) (Passkey, error) {
	name, err := cleanName(name)
	if err != nil {
		return Passkey{}, err
	}
	res, err := s.DB.ExecContext(ctx, `UPDATE passkeys SET name = $1 WHERE id = $2 AND user_id = $3`, name, id, userID)
	if err != nil {
		return Passkey{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Passkey{}, apperr.NotFoundf("passkey not found")
	}
	r, err := get(ctx, s.DB, userID, id)
	return r.Passkey, err
}

// Remove deletes passkey id of userID, audits passkey_removed (with actorID
// when an operator removed it, "" when the user did) and mails the user.
// Errors: 404 unknown or another user's passkey.
func (s *Service) Remove(ctx context.Context, actorID, userID, id string, c Client) error {
	var name string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		r, err := get(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		name = r.Name
		if _, err := tx.ExecContext(ctx, `DELETE FROM passkeys WHERE id = $1`, id); err != nil {
			return err
		}
		desc := "Passkey removed: " + name
		if actorID != "" && actorID != userID {
			desc = "Passkey removed by an administrator: " + name
		} else {
			actorID = ""
		}
		_, err = s.Audit.Record(ctx, tx, audit.Event{
			UserID: userID, ActorID: actorID, EventType: EventRemoved, ResourceType: "passkey", ResourceID: id,
			IPAddress: c.IPAddress, UserAgent: c.UserAgent, SourceService: c.source(), Description: desc,
			Metadata: map[string]any{"passkey_id": id, "aaguid": r.AAGUID},
		})
		return err
	})
	if err != nil {
		return err
	}
	s.notify(ctx, userID, mail.KindPasskeyRemoved, name)
	return nil
}

// notify mails the user about a change of their passkeys; a failure is
// logged, never the caller's error (the change is done).
func (s *Service) notify(ctx context.Context, userID, kind, name string) {
	var email, username, locale string
	err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(email, ''), username, COALESCE(preferred_locale, '') FROM users WHERE id = $1`, userID).
		Scan(&email, &username, &locale)
	if err != nil || email == "" {
		if err != nil {
			s.Log.ErrorContext(ctx, "passkey mail: load user", "user_id", userID, "error", err)
		}
		return
	}
	msg, err := mail.Render(kind, locale, mail.Data{Name: username, PasskeyName: name, Time: s.now()})
	if err == nil {
		msg.To = email
		err = s.Mail.Send(ctx, msg)
	}
	if err != nil {
		s.Log.ErrorContext(ctx, "passkey mail not sent", "user_id", userID, "kind", kind, "error", err)
	}
}
