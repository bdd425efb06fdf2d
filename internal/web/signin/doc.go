// Package signin serves the pages a person signs in with: login (with the
// two-factor step), registration, OAuth consent, logout and the OpenID
// Connect end-session endpoint, sign-in with an upstream provider, the
// confirmation pages of mailed links (email address, email change, email
// link) and password reset. They are plain server-rendered pages in the
// layout of the web kit (package web), which brings the CSRF tokens, the
// language, the signed-in principal and the error pages; the templates and
// their texts live here. The routes and their rules are in
// internal/app/routes.go, the one table.
package signin

import (
	"context"
	"embed"

	"hmid/internal/authflow"
	"hmid/internal/passkey"

	"hmid/internal/setup"
	"hmid/internal/web"
)

// Pages are the sign-in pages, on the web kit's Handler (its services:
// Auth, Consents, Logouts, Providers, Flow, Emails, Cache).
type Pages struct {
	*web.Handler
	// Devices returns the OAuth provider's side of the device verification
	// page at request time (nil while none is wired: the page answers 503).
	Devices func() authflow.Devices
	// Passkeys signs in with passkeys (passkey.go); nil: not offered.
	Passkeys *passkey.Service
	// TOTPEnabled reports whether a user has TOTP on, so the two-factor
	// step asks for a code only then.
	TOTPEnabled func(ctx context.Context, userID string) (bool, error)
	// Setup creates the first administrator (the /setup page).
	Setup *setup.Service
}

// templates are the sign-in pages, each drawn in the kit's layout, and
// the pieces they share (parts_signin.html).
//
//go:embed templates/*.html
var templates embed.FS

func init() { web.AddPages(templates, "templates/*.html", "templates/parts_signin.html") }
