package app

import (
	"context"

	"hmid/internal/access"
	"hmid/internal/health"
)

// areaHandlers holds the HTTP handlers of every area, built by buildAreas.
type areaHandlers struct {
	health        *health.Handler
	accessHandler access.Handler
}

// buildAreas constructs each area's services and handlers with explicit
// dependencies. Each area has its own block.
func (s *Server) buildAreas(ctx context.Context) error {
	// ---- Health and info ----
	s.health = &health.Handler{DB: s.DB, Cache: s.Cache, Redis: s.Config.RedisURL != "", Version: Version, Started: s.Started, Clock: s.Clock}

	// ---- Access: roles, permissions, API keys ----
	s.accessHandler = access.Handler{S: s.Access}

	// ---- Users and sessions ----

	// ---- OAuth and the built-in pages ----

	// ---- Accounts ----

	// ---- Audit and export ----

	// ---- Tracking ----

	// ---- Settings, config, statistics, water levels ----

	// ---- Chat platform ----

	// ---- Integrations ----

	// ---- Real-time channel and GraphQL ----

	return nil
}
