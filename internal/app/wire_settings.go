package app

import (
	"context"
	"net/http"
	"time"

	"hmid/internal/pegel"
	"hmid/internal/policy"
	"hmid/internal/settings"
	"hmid/internal/telemetry"
)

// settingsArea holds the settings, system config, statistics and water-level handlers.
type settingsArea struct {
	Settings       *settings.Service
	settingHandler settings.Handler
	pegelHandler   pegel.Handler
}

// buildSettings constructs the settings area and seeds the system config.
func (s *Server) buildSettings(ctx context.Context) error {
	s.Settings = &settings.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit,
		OnChange: func(ctx context.Context, key string) error {
			if _, ok := policy.Lookup(key); !ok {
				return nil
			}
			return s.Policy.Changed(ctx)
		}}
	if err := s.Settings.SeedConfig(ctx); err != nil {
		return err
	}
	s.settingHandler = settings.Handler{S: s.Settings, Cache: s.Cache}
	s.pegelHandler = pegel.Handler{S: &pegel.Service{
		BaseURL: s.Config.PegelURL,
		HTTP:    &http.Client{Timeout: 15 * time.Second, Transport: telemetry.Transport(http.DefaultTransport)},
		Clock:   s.Clock,
		TTL: func(ctx context.Context) time.Duration {
			return s.Settings.Seconds(ctx, settings.KeyPegelCacheTTL, 5*time.Minute)
		},
	}}
	return nil
}
