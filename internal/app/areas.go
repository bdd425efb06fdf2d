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
	usersArea
	oauthArea
	webhooksArea
	webArea
	accountsArea
	twofactorArea
	passkeyArea
	auditArea
	trackingArea
	settingsArea
	realtimeArea
	graphqlArea
	consoleArea
	userAdminArea
}

// buildAreas constructs each area's services and handlers with explicit
// dependencies. Each area has its own block.
func (s *Server) buildAreas(ctx context.Context) error {
	// ---- Health and info ----
	s.health = &health.Handler{DB: s.DB, Cache: s.Cache, Redis: s.Config.RedisURL != "", Version: Version, Started: s.Started, Clock: s.Clock, Timeout: s.Config.DependencyTimeout}

	// ---- Access: roles, permissions, API keys ----
	s.accessHandler = access.Handler{S: s.Access}

	// ---- Real-time channel, chat platform, integrations, GraphQL ----
	// Built first: other areas publish through s.Events.
	if err := s.buildRealtime(ctx); err != nil {
		return err
	}

	// ---- Users and sessions ----
	if err := s.buildUsers(ctx); err != nil {
		return err
	}

	// ---- Accounts (before the pages: the login uses two-factor) ----
	if err := s.buildAccounts(ctx); err != nil {
		return err
	}
	if err := s.buildTwoFactor(ctx); err != nil {
		return err
	}
	if err := s.buildPasskeys(ctx); err != nil {
		return err
	}

	// ---- OAuth and the built-in pages ----
	if err := s.buildOAuth(ctx); err != nil {
		return err
	}
	// ---- Webhooks (after OAuth: they send through its outbound client) ----
	if err := s.buildWebhooks(ctx); err != nil {
		return err
	}
	if err := s.buildWeb(ctx); err != nil {
		return err
	}
	s.buildUserAdmin()

	// ---- Audit and export ----
	if err := s.buildAuditExport(ctx); err != nil {
		return err
	}

	// ---- Tracking ----
	if err := s.buildTracking(ctx); err != nil {
		return err
	}

	// ---- Settings, config, statistics, water levels ----
	if err := s.buildSettings(ctx); err != nil {
		return err
	}

	if err := s.buildGraphQL(ctx); err != nil {
		return err
	}
	s.connectAreas()
	s.buildConsole()
	return nil
}
