package app

import "context"

// oauthArea holds the handlers of this area (built by buildOAuth).
type oauthArea struct{}

// buildOAuth constructs the area with explicit dependencies.
func (s *Server) buildOAuth(ctx context.Context) error { return nil }
