package app

import "context"

// accountsArea holds the handlers of this area (built by buildAccounts).
type accountsArea struct{}

// buildAccounts constructs the area with explicit dependencies.
func (s *Server) buildAccounts(ctx context.Context) error { return nil }
