package app

import (
	"context"
	"time"

	"hmid/internal/oauth"
)

// oauthArea holds the handlers of this area (built by buildOAuth).
type oauthArea struct {
	OAuth        *oauth.Service
	oauthHandler *oauth.Handler
}

// buildOAuth constructs the OAuth provider and plugs it into the bearer
// resolver (hm_at_ access tokens) and the consent page (authflow.Consents).
func (s *Server) buildOAuth(ctx context.Context) error {
	svc := &oauth.Service{
		DB:       s.DB,
		Clock:    s.Clock,
		Box:      s.Box,
		Audit:    s.Audit,
		Resolver: s.Guard.Resolver,
		Issuer:   s.Config.PublicURL,
		LoginURL: s.Config.LoginURL,

		PurgePause:           oauth.DefaultPurgePause,
		RefreshReuseInterval: s.Config.RefreshReuseInterval,
	}
	s.OAuth = svc
	s.oauthHandler = &oauth.Handler{S: svc}
	s.Guard.Resolver.OAuth = svc
	s.Consents = svc

	s.Metrics.Registry.MustRegister(svc.TableSizes())

	// Expired codes, pending authorizations and tokens are purged hourly.
	jobCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.RunPurge(jobCtx, time.Hour, func(err error) { s.Log.Error("oauth: purge failed", "err", err) })
	}()
	s.onClose(func() error { stop(); <-done; return nil })
	return nil
}
