package app

import (
	"context"
	"net/http"
	"time"

	"hmid/internal/backchannel"
	"hmid/internal/oauth"
	"hmid/internal/oauth/cors"
	"hmid/internal/oauth/signing"
	"hmid/internal/oauth/store"
	"hmid/internal/outbound"
)

// oauthArea holds the handlers of this area (built by buildOAuth).
type oauthArea struct {
	OAuth        *oauth.Service
	oauthHandler *oauth.Handler
	// Backchannel delivers back-channel logout tokens; tests run its passes
	// with RunOnce under the fake clock.
	Backchannel *backchannel.Worker
	// Outbound is the rule for requests to URLs a user or client supplied
	// (HMID_OUTBOUND_ALLOW_CIDRS), and OutboundHTTP the one client that
	// sends them (package outbound): back-channel logout tokens today.
	Outbound     outbound.Policy
	OutboundHTTP *http.Client
}

// buildOAuth constructs the OAuth provider and plugs it into the bearer
// resolver (hm_at_ access tokens) and the consent page (authflow.Consents).
func (s *Server) buildOAuth(ctx context.Context) error {
	s.Outbound = outbound.Policy{Allow: s.Config.OutboundAllowCIDRs}
	s.OutboundHTTP = s.Outbound.Client()
	st := store.New(s.DB)
	svc := &oauth.Service{
		DB:       s.DB,
		Store:    st,
		Keys:     &signing.Keys{Store: st, Box: s.Box, Clock: s.Clock},
		Origins:  &cors.Origins{Load: st.ActiveRedirectURIs, Clock: s.Clock},
		Clock:    s.Clock,
		Box:      s.Box,
		Audit:    s.Audit,
		Resolver: s.Guard.Resolver,
		Issuer:   s.Config.PublicURL,
		LoginURL: s.Config.LoginURL,

		PurgePause:           store.DefaultPurgePause,
		DefaultIDTokenAlg:    s.Config.IDTokenAlg,
		RefreshReuseInterval: s.Config.RefreshReuseInterval,
		Outbound:             s.Outbound,
		OutboundHTTP:         s.OutboundHTTP,
		Cache:                s.Cache,
		Registration:         s.Config.DynamicRegistration,
		RegistrationExpiry:   s.Config.DynamicRegistrationExpiry,
		Limiter:              s.Limiter,
		Policy:               s.Policy,
	}
	s.OAuth = svc
	s.oauthHandler = &oauth.Handler{S: svc}
	s.Guard.Resolver.OAuth = svc
	s.Guard.APIResource, s.Guard.ResourceMetadata = svc.APIResource(), svc.Issuer+oauth.ProtectedResourcePath
	s.Consents = svc

	s.Metrics.Registry.MustRegister(st.TableSizes())

	// Expired codes, pending authorizations and tokens are purged hourly.
	jobCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.RunPurge(jobCtx, time.Hour, func(err error) { s.Log.Error("oauth: purge failed", "err", err) })
	}()
	// Signing keys rotate by age (HMID_SIGNING_KEY_ROTATION) and retired
	// keys are deleted once past their grace, checked every minute.
	keysDone := make(chan struct{})
	go func() {
		defer close(keysDone)
		svc.RunKeyMaintenance(jobCtx, time.Minute, s.Config.SigningKeyRotation, func(err error) { s.Log.Error("oauth: signing-key maintenance failed", "err", err) })
	}()
	s.onClose(func() error { stop(); <-done; <-keysDone; return nil })

	// Back-channel logout (OpenID Connect Back-Channel Logout 1.0): the
	// worker turns ended sessions into logout tokens and delivers them.
	s.Backchannel = backchannel.New(s.DB, s.Clock, s.Log, svc, s.OutboundHTTP)
	s.onClose(s.Backchannel.Start())
	return nil
}
