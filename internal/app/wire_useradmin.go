package app

import (
	"hmid/internal/useradmin"
)

// userAdminArea holds the operators' user management (issue 22), built by
// buildUserAdmin.
type userAdminArea struct {
	userAdmin *useradmin.Handler
}

// buildUserAdmin constructs the operators' user management on the users,
// sessions and login services; it runs after buildWeb, which builds the
// login service.
func (s *Server) buildUserAdmin() {
	s.userAdmin = &useradmin.Handler{S: &useradmin.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Epoch: s.Epoch,
		Users: s.users.S, Auth: s.authAPI.S, Sessions: s.sessions.S, Mailer: s.Mail, PublicURL: s.Config.PublicURL}}
}
