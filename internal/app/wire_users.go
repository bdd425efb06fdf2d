package app

import "context"

// usersArea holds the handlers of this area (built by buildUsers).
type usersArea struct{}

// buildUsers constructs the area with explicit dependencies.
func (s *Server) buildUsers(ctx context.Context) error { return nil }
