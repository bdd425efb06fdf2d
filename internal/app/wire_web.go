package app

import (
	"context"
	"strings"

	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/web"
)

// webArea holds the handlers of the login extension endpoints and the
// built-in pages (built by buildWeb).
type webArea struct {
	authAPI  *auth.Handler
	webPages *web.Handler
}

// buildWeb constructs the area with explicit dependencies. The two-factor
// and consent services are read at request time, because the areas that
// provide them may be built after this one.
func (s *Server) buildWeb(ctx context.Context) error {
	secure := strings.HasPrefix(strings.ToLower(s.Config.PublicURL), "https://")
	svc := &auth.Service{
		DB: s.DB, Clock: s.Clock, Audit: s.Audit, Limiter: s.Limiter, Epoch: s.Epoch,
		Resolver:     s.Guard.Resolver,
		SecondFactor: func() authflow.SecondFactor { return s.SecondFactor },
		Mailer:       s.Mail,
		PublicURL:    s.Config.PublicURL,
	}
	s.authAPI = &auth.Handler{S: svc, SecureCookies: secure}
	s.webPages = &web.Handler{
		Auth:      svc,
		Consents:  func() authflow.Consents { return s.Consents },
		Box:       s.Box,
		Cache:     s.Cache,
		PublicURL: s.Config.PublicURL,
		Secure:    secure,
		Log:       s.Log,
	}
	return nil
}
