package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/cache"
	"hmid/internal/chat"
	"hmid/internal/integrations"
	"hmid/internal/realtime"
)

// realtimeArea holds the handlers of this area (built by buildRealtime).
type realtimeArea struct {
	// Hub is the real-time channel (exported so tests and tools can tune and observe it).
	Hub *realtime.Hub
	// Chat is the chat-platform service (tests shorten its sync timeouts).
	Chat        *chat.Service
	chatHandler *chat.Handler
	// Integrations is the streaming-platform service.
	Integrations        *integrations.Service
	integrationsHandler *integrations.Handler
}

// buildRealtime constructs the area with explicit dependencies.
func (s *Server) buildRealtime(ctx context.Context) error {
	cfg := realtime.Config{
		Resolver: s.Guard.Resolver,
		Cache:    s.Cache,
		Box:      s.Box,
		Clock:    s.Clock,
		Log:      s.Log,
	}
	if rc, ok := s.Cache.(*cache.Redis); ok {
		ns, err := s.realtimeNamespace(ctx)
		if err != nil {
			return err
		}
		cfg.Redis, cfg.Namespace = rc.Client, ns
	}
	hub, err := realtime.New(cfg)
	if err != nil {
		return fmt.Errorf("real-time channel: %w", err)
	}
	s.Hub = hub
	s.onClose(hub.Close)
	s.Events = hub
	s.Audit.Notify = hub
	s.health.Realtime = hub

	// ---- Chat-platform bot management ----
	cdn := strings.TrimRight(s.Config.ChatPlatformCDN, "/")
	if cdn == "" {
		cdn = chat.DefaultCDN
	}
	s.Chat = &chat.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Bot: hub, CDN: cdn}
	s.chatHandler = &chat.Handler{S: s.Chat}

	// ---- Streaming-platform integrations ----
	s.Integrations = &integrations.Service{DB: s.DB, Clock: s.Clock, Box: s.Box, Cache: s.Cache,
		Provider: s.Config.StreamPlatform, PublicURL: s.Config.PublicURL,
		Sessions:      s.Guard.Resolver,
		SecureCookies: strings.HasPrefix(strings.ToLower(s.Config.PublicURL), "https://")}
	s.integrationsHandler = &integrations.Handler{S: s.Integrations}
	return nil
}

// realtimeNamespace returns the Redis pub/sub namespace of this deployment: a
// name stored once in the database, so every instance on the database meets
// on the same channels and other deployments sharing the Redis server do not.
func (s *Server) realtimeNamespace(ctx context.Context) (string, error) {
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO realtime_state (name, value) VALUES ('namespace', $1) ON CONFLICT DO NOTHING`,
		"hmid:rt:"+uuid.NewString()); err != nil {
		return "", fmt.Errorf("real-time namespace: %w", err)
	}
	var ns string
	if err := s.DB.QueryRowContext(ctx, `SELECT value FROM realtime_state WHERE name = 'namespace'`).Scan(&ns); err != nil {
		return "", fmt.Errorf("real-time namespace: %w", err)
	}
	return ns, nil
}
