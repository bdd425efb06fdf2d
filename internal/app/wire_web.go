package app

import (
	"context"
	"fmt"
	"strings"

	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/upstream"
	"hmid/internal/users"
	"hmid/internal/web"
	"hmid/internal/web/signin"
)

// webArea holds the handlers of the login extension endpoints and the
// built-in pages (built by buildWeb).
type webArea struct {
	authAPI  *auth.Handler
	webPages *web.Handler
	// signinPages are the sign-in pages on webPages.
	signinPages *signin.Pages
}

// buildWeb constructs the area with explicit dependencies. The two-factor
// and consent services are read at request time, because the areas that
// provide them may be built after this one.
func (s *Server) buildWeb(ctx context.Context) error {
	secure := strings.HasPrefix(strings.ToLower(s.Config.PublicURL), "https://")
	svc := &auth.Service{
		DB: s.DB, Clock: s.Clock, Audit: s.Audit, Limiter: s.Limiter, Epoch: s.Epoch,
		Resolver:     s.Guard.Resolver,
		Users:        s.users.S,
		SecondFactor: func() authflow.SecondFactor { return s.SecondFactor },
		Mailer:       s.Mail,
		Log:          s.Log,
		PublicURL:    s.Config.PublicURL,
		Box:          s.Box,
		Policy:       s.Policy,
	}
	s.authAPI = &auth.Handler{S: svc, SecureCookies: secure}
	reg, err := s.buildUpstream(ctx)
	if err != nil {
		return err
	}
	s.webPages = &web.Handler{
		Auth:     svc,
		Consents: func() authflow.Consents { return s.Consents },
		Logouts: func() authflow.Logouts {
			if s.OAuth == nil {
				return nil
			}
			return s.OAuth
		},
		SessionEnded: func() {
			if s.Backchannel != nil {
				s.Backchannel.Kick()
			}
		},
		Box:       s.Box,
		Cache:     s.Cache,
		PublicURL: s.Config.PublicURL,
		Secure:    secure,
		Log:       s.Log,
		Providers: reg,
		Flow: &upstream.Flow{Cache: s.Cache, PublicURL: s.Config.PublicURL, Secure: secure,
			Now: s.Clock.Now},
	}
	s.signinPages = &signin.Pages{Handler: s.webPages, Setup: s.Setup, Passkeys: s.Passkeys, TOTPEnabled: s.twoFactorSvc.Enabled,
		Devices: func() authflow.Devices {
			if s.OAuth == nil {
				return nil
			}
			return s.OAuth
		}}
	return nil
}

// buildUpstream reads the upstream sign-in providers (HMID_LOGIN_*) and
// makes sure each generic provider has its platform row, so an operator can
// turn it on and off like the seeded ones. A misconfigured provider stops
// the start: a sign-in button that can only fail is worse than none.
func (s *Server) buildUpstream(ctx context.Context) (*upstream.Registry, error) {
	getenv := s.Config.LoginEnv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	reg, err := upstream.FromEnv(getenv, s.Config.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("sign-in providers: %w", err)
	}
	reg.SetClock(s.Clock.Now)
	seeded := map[string]bool{}
	for _, p := range users.DefaultPlatforms {
		seeded[p.Slug] = true
	}
	for _, p := range reg.Providers() {
		if !seeded[p.Slug()] {
			if err := users.EnsurePlatform(ctx, s.DB, s.Clock, p.Slug(), p.Name()); err != nil {
				return nil, err
			}
		}
	}
	s.Upstream = reg
	return reg, nil
}
