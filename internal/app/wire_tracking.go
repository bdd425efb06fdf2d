package app

import (
	"context"

	"hmid/internal/tracking"
)

// trackingArea holds the handlers of this area (built by buildTracking).
type trackingArea struct {
	tracking *tracking.Handler
}

// buildTracking constructs the area with explicit dependencies.
func (s *Server) buildTracking(ctx context.Context) error {
	svc := &tracking.Service{DB: s.DB, Cache: s.Cache, Limiter: s.Limiter, Clock: s.Clock, Events: s.Events}
	s.tracking = &tracking.Handler{S: svc}
	// Stop the GPS writer (after its queued points) before the database closes.
	s.onClose(svc.Close)
	return nil
}
