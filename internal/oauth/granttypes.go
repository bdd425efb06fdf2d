package oauth

import (
	"slices"
	"strings"

	"hmid/internal/apperr"
)

// Grant types a client may register (RFC 7591 §2, with the names of the
// IANA "OAuth Parameters" registry).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// ErrUnauthorizedClient is the answer to a grant the client is not
// registered for (RFC 6749 §5.2, §4.1.2.1).
const ErrUnauthorizedClient = "unauthorized_client"

// grantCatalogue lists the grants hmid serves, in the order discovery
// lists them.
var grantCatalogue = []string{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials, GrantDeviceCode}

// GrantTypeNames returns the grant types a client may register.
func GrantTypeNames() []string { return slices.Clone(grantCatalogue) }

// DefaultGrantTypes are the grants of a client registered without
// grant_types: the authorization code flow with refresh tokens, what every
// client could use before the field existed.
func DefaultGrantTypes() []string { return []string{GrantAuthorizationCode, GrantRefreshToken} }

// applyGrantTypes validates and applies the grant_types of in (when set, or
// the default on creation). It runs after the client type is known:
// client_credentials is for confidential clients only (RFC 6749 §4.4), and
// a refresh token is only ever issued by a grant that acts for a user, so
// refresh_token needs authorization_code or the device grant beside it.
func applyGrantTypes(c *Client, in ClientInput, creating bool) error {
	if !in.GrantTypes.Set && !creating {
		return nil
	}
	fail := func(format string, args ...any) error {
		return apperr.OnField("grant_types", apperr.Invalid(format, args...))
	}
	grants := in.GrantTypes.Value
	if !in.GrantTypes.Set || grants == nil {
		grants = DefaultGrantTypes()
	}
	var clean []string
	for _, g := range grants {
		if !slices.Contains(grantCatalogue, g) {
			return fail("grant type %q is not supported; supported grant types are %s", g, strings.Join(grantCatalogue, ", "))
		}
		if !slices.Contains(clean, g) {
			clean = append(clean, g)
		}
	}
	switch {
	case len(clean) == 0:
		return fail("grant_types needs at least one grant type")
	case slices.Contains(clean, GrantClientCredentials) && c.ClientType != Confidential:
		return fail("client_credentials is for confidential clients only")
	case slices.Contains(clean, GrantRefreshToken) && !slices.Contains(clean, GrantAuthorizationCode) && !slices.Contains(clean, GrantDeviceCode):
		return fail("refresh_token needs authorization_code or %s beside it", GrantDeviceCode)
	}
	c.GrantTypes = clean
	return nil
}

// checkGrant refuses a grant the client is not registered for as
// unauthorized_client (RFC 6749 §5.2). An unknown grant type is left to the
// token endpoint's unsupported_grant_type.
func checkGrant(c Client, grant string) *Error {
	if slices.Contains(grantCatalogue, grant) && !c.AllowsGrant(grant) {
		return oerr(ErrUnauthorizedClient, "the client is not registered for the "+grant+" grant")
	}
	return nil
}
