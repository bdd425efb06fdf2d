package app

import (
	"context"

	"hmid/internal/twofactor"
)

// twofactorArea holds the handlers of this area (built by buildTwoFactor).
type twofactorArea struct {
	twoFactorSvc     *twofactor.Service // also the login's authflow.SecondFactor and the GraphQL resolvers' back end
	twoFactorHandler *twofactor.Handler
}

// buildTwoFactor constructs the area with explicit dependencies.
func (s *Server) buildTwoFactor(ctx context.Context) error {
	svc := &twofactor.Service{DB: s.DB, Clock: s.Clock, Box: s.Box, Audit: s.Audit, Limiter: s.Limiter, Mail: s.Mail, Log: s.Log}
	s.twoFactorSvc = svc
	s.twoFactorHandler = &twofactor.Handler{S: svc}
	s.SecondFactor = svc
	return nil
}
