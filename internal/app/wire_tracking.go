package app

import "context"

// trackingArea holds the handlers of this area (built by buildTracking).
type trackingArea struct{}

// buildTracking constructs the area with explicit dependencies.
func (s *Server) buildTracking(ctx context.Context) error { return nil }
