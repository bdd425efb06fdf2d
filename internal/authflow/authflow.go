// Package authflow holds the small contracts between the areas that take part
// in a sign-in: the login pages and endpoints (internal/web, internal/auth),
// the OAuth provider (internal/oauth) and two-factor authentication
// (internal/twofactor). Each side depends on these types, not on the other.
package authflow

import (
	"context"
	"time"
)

// Scope is a requested OAuth scope with its human description.
type Scope struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Pending is a pending authorization awaiting the user's consent.
type Pending struct {
	ID         string
	ClientID   string
	ClientName string
	LogoURL    string
	Scopes     []Scope
	ExpiresAt  time.Time
}

// Consents is implemented by the OAuth provider for the consent page.
type Consents interface {
	// Pending returns the pending authorization id of user userID; a missing,
	// expired, used or foreign one is an apperr NotFound.
	Pending(ctx context.Context, pendingID, userID string) (Pending, error)
	// Decide approves or denies it (single use) and returns the URL to send
	// the browser to: the client's redirect URI with code or error, state and iss.
	Decide(ctx context.Context, pendingID, userID string, approved bool, ip, userAgent string) (redirectURL string, err error)
}

// SecondFactor is implemented by two-factor authentication for the login step.
type SecondFactor interface {
	// Enabled reports whether the user has two-factor authentication on.
	Enabled(ctx context.Context, userID string) (bool, error)
	// VerifyLogin checks a TOTP or backup code (single use, throttled, audited);
	// a wrong code is an apperr Validation error, too many a TooManyRequests.
	VerifyLogin(ctx context.Context, userID, code, ip, userAgent string) error
	// SetupRequired reports whether the user must set up two-factor
	// authentication first (a role or the login platform requires it).
	SetupRequired(ctx context.Context, userID, platformSlug string) (bool, error)
}
