package app

import "context"

// webArea holds the handlers of this area (built by buildWeb).
type webArea struct{}

// buildWeb constructs the area with explicit dependencies.
func (s *Server) buildWeb(ctx context.Context) error { return nil }
