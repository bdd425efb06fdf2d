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
	// AcceptsCode reports whether a TOTP or backup code can finish the
	// user's second step. A user whose only second factor is a passkey has
	// Enabled true and AcceptsCode false: only a browser can finish.
	AcceptsCode(ctx context.Context, userID string) (bool, error)
	// VerifyLogin checks a TOTP or backup code (single use, throttled, audited);
	// a wrong code is an apperr Validation error, too many a TooManyRequests.
	VerifyLogin(ctx context.Context, userID, code, ip, userAgent string) error
	// SetupRequired reports whether the user must set up two-factor
	// authentication first (a role or the login platform requires it).
	SetupRequired(ctx context.Context, userID, platformSlug string) (bool, error)
}

// EndSession is an RP-Initiated Logout request checked by the OAuth provider
// (OpenID Connect RP-Initiated Logout 1.0 §2, §3).
type EndSession struct {
	// ClientID and ClientName name the client the request is from (client_id
	// or the ID token hint's audience); "" when neither was sent.
	ClientID   string
	ClientName string
	// RedirectURL is the verified post_logout_redirect_uri with state added,
	// where the browser goes after logout; "" when it stays at hmid.
	RedirectURL string
	// Confirmed is true when the ID token hint proves the request comes from
	// a client of the current browser session (issued by hmid, for that
	// session's user and sid): the logout then needs no confirmation.
	Confirmed bool
}

// Logouts is implemented by the OAuth provider for the end-session endpoint.
type Logouts interface {
	// CheckEndSession validates the request parameters against the current
	// browser session (sessionID and userID, "" for none). Bad input (a
	// malformed or forged hint, an unregistered post_logout_redirect_uri, a
	// hint for another client) is an apperr Validation error: the browser
	// must then see an error and never be redirected.
	CheckEndSession(ctx context.Context, params map[string][]string, sessionID, userID string) (EndSession, error)
}

// DeviceRequest is a device authorization awaiting a person on the
// verification page (RFC 8628 §3.3): which app asks for what, under which
// user code.
type DeviceRequest struct {
	UserCode   string // as shown on the device: ABCD-EFGH
	ClientID   string
	ClientName string
	LogoURL    string
	Scopes     []Scope
	// NeedsConsent: the scopes must be shown for consent (the client is not
	// first party and the person's stored consent does not cover them).
	NeedsConsent bool
	ExpiresAt    time.Time
}

// Approver is the signed-in person deciding a device authorization: the
// tokens the device gets act for them, with their session's authentication.
type Approver struct {
	UserID   string
	AuthTime time.Time
	AMR      []string
}

// Devices is implemented by the OAuth provider for the device verification
// page. A wrong, expired or decided user code is an apperr NotFound; too
// many attempts are an apperr TooManyRequests.
type Devices interface {
	FindDevice(ctx context.Context, who Approver, userCode, ip string) (DeviceRequest, error)
	DecideDevice(ctx context.Context, who Approver, userCode string, approved bool, ip, userAgent string) (DeviceRequest, error)
}
