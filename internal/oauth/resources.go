package oauth

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/oauth/signing"
)

// ErrInvalidTarget is RFC 8707 §2's error for a resource that is not a
// valid absolute URI or not one the client may ask for.
const ErrInvalidTarget = "invalid_target"

// Access token formats of a client (access_token_format).
const (
	FormatOpaque = "opaque" // hm_at_ tokens, looked up by hash (the default)
	FormatJWT    = "jwt"    // RFC 9068 JWTs signed with the ID-token keys
)

// Bounds of resource indicators.
const (
	maxResources   = 20
	maxResourceLen = 2000
)

// validResource reports whether r is a resource indicator of RFC 8707 §2:
// an absolute URI without a fragment. hmid also wants a host, so that the
// audience names a server.
func validResource(r string) bool {
	if r == "" || len(r) > maxResourceLen || strings.ContainsAny(r, "# \t\r\n") {
		return false
	}
	u, err := url.Parse(r)
	return err == nil && u.IsAbs() && u.Host != ""
}

// allowsResource reports whether the client may ask for r: any when its
// resources list is empty, else one of them (exact match).
func allowsResource(c Client, r string) bool {
	return len(c.Resources) == 0 || slices.Contains(c.Resources, r)
}

// applyResources applies resources and access_token_format.
func applyResources(c *Client, in ClientInput, creating bool) error {
	if in.Resources.Set {
		if len(in.Resources.Value) > maxResources {
			return apperr.OnField("resources", apperr.Invalid("resources holds at most %d URIs", maxResources))
		}
		clean := []string{}
		for _, r := range in.Resources.Value {
			if !validResource(r) {
				return apperr.OnField("resources", apperr.Invalid("resource %q is not an absolute URI with a host and without a fragment (RFC 8707 §2)", r))
			}
			if !slices.Contains(clean, r) {
				clean = append(clean, r)
			}
		}
		c.Resources = clean
	} else if creating {
		c.Resources = []string{}
	}
	if in.AccessTokenFormat.Set {
		c.AccessTokenFormat = in.AccessTokenFormat.Value
	}
	if c.AccessTokenFormat == "" {
		c.AccessTokenFormat = FormatOpaque
	}
	if c.AccessTokenFormat != FormatOpaque && c.AccessTokenFormat != FormatJWT {
		return apperr.OnField("access_token_format", apperr.Invalid("access_token_format must be opaque or jwt"))
	}
	return nil
}

// parseResources reads the resource parameters of a request (RFC 8707
// §2: it may be repeated), each a valid resource indicator.
func parseResources(v url.Values) ([]string, *Error) {
	var out []string
	for _, r := range v["resource"] {
		if !validResource(r) {
			return nil, oerr(ErrInvalidTarget, "resource must be an absolute URI without a fragment (RFC 8707 §2)")
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(out) > maxResources {
		return nil, oerr(ErrInvalidTarget, "at most 20 resources")
	}
	slices.Sort(out)
	return out, nil
}

// checkAuthorizeResources reads the resources of an authorization request,
// which the client must be allowed; they are granted with the code.
func checkAuthorizeResources(ar *authzRequest, q url.Values) *Error {
	res, oe := parseResources(q)
	if oe != nil {
		return oe
	}
	for _, r := range res {
		if !allowsResource(ar.client, r) {
			return oerr(ErrInvalidTarget, "the client may not request resource "+r)
		}
	}
	ar.resources = res
	return nil
}

// requestedResources reads the resources a token request names (RFC 8707
// §2), each one the client may ask for; nil for none.
func requestedResources(c Client, form url.Values) ([]string, *Error) {
	req, oe := parseResources(form)
	if oe != nil {
		return nil, oe
	}
	for _, r := range req {
		if !allowsResource(c, r) {
			return nil, oerr(ErrInvalidTarget, "the client may not request resource "+r)
		}
	}
	return req, nil
}

// grantedAudience is the audience of an access token issued for a token
// request (RFC 8707 §2.2): the resources it names (requested), or all the
// grant's resources when it names none. When the authorization named
// resources a request may only narrow them. nil means no resource: the
// client is the audience.
func grantedAudience(requested, granted []string) ([]string, *Error) {
	if len(requested) == 0 {
		return granted, nil
	}
	for _, r := range requested {
		if len(granted) > 0 && !slices.Contains(granted, r) {
			return nil, oerr(ErrInvalidTarget, "resource "+r+" was not granted: a token request may only narrow the resources of the authorization")
		}
	}
	return requested, nil
}

// audienceClaim is the aud of an access token (introspection, RFC 9068):
// its one resource as a string, several as an array, the client id when
// it has none.
func audienceClaim(audience []string, clientID string) any {
	switch len(audience) {
	case 0:
		return clientID
	case 1:
		return audience[0]
	}
	return audience
}

// accessJWT makes the RFC 9068 JWT access token of t, issued by issuer to
// c for a: the claims of §2.2, signed by k (the current key of the client's
// ID-token algorithm when that is asymmetric, else RS256: an HS256 key
// would be the client's own secret, useless to a resource server), typed
// at+jwt (§2.1). jti is the token's row id, which introspection answers too.
func accessJWT(k *signing.Key, issuer string, c Client, a *authorization, t issuedTokens, now time.Time) (string, error) {
	claims := map[string]any{
		"iss": issuer, "sub": a.family.UserID, "aud": audienceClaim(t.audience, c.ID), "client_id": c.ID,
		"iat": now.Unix(), "exp": now.Add(t.accessTTL).Unix(), "jti": t.accessID,
		"scope": strings.Join(t.accessScopes, " "), "auth_time": a.family.AuthTime.Unix(),
	}
	if a.ac.ACR != "" {
		claims["acr"] = a.ac.ACR
	}
	if len(a.ac.AMR) > 0 {
		claims["amr"] = a.ac.AMR
	}
	return k.SignAccessToken(claims)
}

// accessTokenAlg is the algorithm of a client's JWT access tokens.
func accessTokenAlg(c Client) string {
	if c.IDTokenSignedResponseAlg == AlgES256 {
		return signing.AlgES256
	}
	return signing.AlgRS256
}

// resourceFields are the client fields of this file, for ClientInput.anySet.
func (in ClientInput) resourceFieldsSet() bool {
	return in.Resources.Set || in.AccessTokenFormat.Set
}
