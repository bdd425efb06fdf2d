package app

import "context"

// realtimeArea holds the handlers of this area (built by buildRealtime).
type realtimeArea struct{}

// buildRealtime constructs the area with explicit dependencies.
func (s *Server) buildRealtime(ctx context.Context) error { return nil }
