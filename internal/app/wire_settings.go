package app

import "context"

// settingsArea holds the handlers of this area (built by buildSettings).
type settingsArea struct{}

// buildSettings constructs the area with explicit dependencies.
func (s *Server) buildSettings(ctx context.Context) error { return nil }
