package app

import (
	"context"

	"hmid/internal/passkey"
)

// passkeyArea holds the passkey service and its REST handler (built by
// buildPasskeys).
type passkeyArea struct {
	Passkeys       *passkey.Service // the passkey service (exported for the tests of the ceremonies)
	passkeyHandler *passkey.Handler
}

// buildPasskeys constructs passkeys after two-factor authentication: a
// passkey is a second factor beside TOTP (the login's SecondFactor), counts
// for the two-factor requirement, and an administrator's reset removes it.
func (s *Server) buildPasskeys(ctx context.Context) error {
	svc, err := passkey.New(passkey.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Cache: s.Cache, Mail: s.Mail, Log: s.Log}, s.Config.PublicURL)
	if err != nil {
		return err
	}
	s.Passkeys = svc
	s.passkeyHandler = &passkey.Handler{S: svc}
	s.twoFactorSvc.Others = svc.Counts
	s.twoFactorSvc.ResetOthers = passkey.RemoveAll
	s.SecondFactor = passkey.SecondFactor{TOTP: s.twoFactorSvc, S: svc}
	return nil
}
