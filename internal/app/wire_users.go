package app

import (
	"context"

	"hmid/internal/sessions"
	"hmid/internal/users"
)

// usersArea holds the handlers of the users and sessions area (built by buildUsers).
type usersArea struct {
	users    *users.Handler
	sessions *sessions.Handler
}

// buildUsers constructs the users and sessions handlers with explicit dependencies.
func (s *Server) buildUsers(ctx context.Context) error {
	s.users = &users.Handler{S: &users.Service{DB: s.DB, Clock: s.Clock, Epoch: s.Epoch, Audit: s.Audit, Mail: s.Mail, Log: s.Log}}
	s.sessions = &sessions.Handler{S: &sessions.Service{DB: s.DB, Clock: s.Clock, Epoch: s.Epoch, Audit: s.Audit, Policy: s.Policy}}
	return nil
}
