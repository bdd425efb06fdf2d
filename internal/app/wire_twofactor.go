package app

import "context"

// twofactorArea holds the handlers of this area (built by buildTwoFactor).
type twofactorArea struct{}

// buildTwoFactor constructs the area with explicit dependencies.
func (s *Server) buildTwoFactor(ctx context.Context) error { return nil }
