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

// twoFactorService returns the two-factor service, constructing it on first
// use, so an area built before buildTwoFactor (GraphQL, in buildRealtime) can
// take it as a dependency too. Its dependencies all exist before any area is
// built.
func (s *Server) twoFactorService() *twofactor.Service {
	if s.twoFactorSvc == nil {
		s.twoFactorSvc = &twofactor.Service{DB: s.DB, Clock: s.Clock, Box: s.Box, Audit: s.Audit, Cache: s.Cache, Mail: s.Mail, Log: s.Log}
	}
	return s.twoFactorSvc
}

// buildTwoFactor constructs the area with explicit dependencies.
func (s *Server) buildTwoFactor(ctx context.Context) error {
	svc := s.twoFactorService()
	s.twoFactorHandler = &twofactor.Handler{S: svc}
	s.SecondFactor = svc
	return nil
}
