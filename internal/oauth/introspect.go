package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// IntrospectionAuthMethods are the client authentication methods of the
// introspection endpoint (RFC 8414 §2, introspection_endpoint_auth_methods_supported).
// System API keys are accepted too, as a bearer token; RFC 8414 has no
// registered name for that, so discovery does not list it.
var IntrospectionAuthMethods = []string{AuthSecretPost, AuthSecretBasic, AuthPrivateKeyJWT}

// Introspection is the answer of the introspection endpoint (RFC 7662 §2.2).
// An inactive token is only {"active": false}: nothing else is said about it.
type Introspection struct {
	Active    bool   `json:"active"`
	Scope     string `json:"scope,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Username  string `json:"username,omitempty"`
	TokenType string `json:"token_type,omitempty"`
	Exp       int64  `json:"exp,omitempty"`
	Iat       int64  `json:"iat,omitempty"`
	Sub       string `json:"sub,omitempty"`
	Aud       any    `json:"aud,omitempty"` // the client id, or the token's resources (RFC 8707)
	Iss       string `json:"iss,omitempty"`
	JTI       string `json:"jti,omitempty"`
}

// Introspect serves POST /v1/oauth/introspect (RFC 7662). The caller is a
// confidential client, authenticated like at the token endpoint
// (client_secret_basic or client_secret_post), or a system API key sent as
// Authorization: Bearer (RFC 7662 §2.1 leaves the means to the server).
// Public clients have no credentials to protect the endpoint with and are
// refused (RFC 7662 §4: the endpoint must not become a token scanner).
//
// A client learns only about its own tokens: a token issued to another
// client is answered {"active": false} like an unknown one (RFC 7662 §2.2
// lets the server decline to reveal it). A system key sees every token.
func (h *Handler) Introspect(w http.ResponseWriter, r *http.Request) {
	s := h.S
	clientID, tok, ok := tokenForm(w, r, s.introspectionCaller)
	if !ok {
		return
	}
	// token_type_hint is only a hint (RFC 7662 §2.1): the prefix tells the
	// kind, and an unknown hint is ignored rather than refused.
	res, err := s.introspect(r.Context(), tok, clientID)
	respondOAuth(w, r, res, err)
}

// introspectionCaller authenticates the caller of the introspection
// endpoint. It returns the id of the calling client, or "" for a system key
// (which may introspect any token).
func (s *Service) introspectionCaller(r *http.Request, form url.Values) (string, *Error) {
	hdr := r.Header.Get("Authorization")
	if scheme, _, _ := strings.Cut(strings.TrimSpace(hdr), " "); strings.EqualFold(scheme, "Bearer") {
		tok, ok := authn.ParseBearer(hdr)
		if !ok || s.Resolver == nil {
			return "", oerr(ErrInvalidClient, "malformed bearer token")
		}
		p, err := s.Resolver.Resolve(r.Context(), tok)
		if err != nil {
			if apperr.Is(err, apperr.Unauthorized) {
				return "", oerr(ErrInvalidClient, "the bearer token is not a valid system API key")
			}
			return "", asOAuthErr(err)
		}
		if !p.SystemKey {
			return "", oerr(ErrInvalidClient, "only confidential clients and system API keys may introspect tokens")
		}
		return "", nil
	}
	c, _, oe := s.authenticateClient(r.Context(), r, form)
	if oe != nil {
		return "", oe
	}
	if c.ClientType != Confidential {
		e := oerr(ErrInvalidClient, "public clients may not introspect tokens: authenticate as a confidential client")
		_, _, e.basic = r.BasicAuth()
		return "", e
	}
	return c.ID, nil
}

// introspect answers for tok as seen by clientID ("" for a system key). The
// token is found by its SHA-256 hash, as everywhere: the stored hash never
// meets the presented token in a comparison that could leak by timing.
func (s *Service) introspect(ctx context.Context, tok, clientID string) (Introspection, error) {
	inactive := Introspection{}
	if isClientToken(tok) {
		return s.introspectClientToken(ctx, tok, clientID)
	}
	kind := ""
	switch {
	case token.HasShape(tok, token.PrefixAccessToken), authn.LooksLikeJWT(tok):
		kind = "access"
	case token.HasShape(tok, token.PrefixRefreshToken):
		kind = "refresh"
	default:
		return inactive, nil // not a token hmid issues: no lookup needed
	}
	now := s.Clock.Now()
	t, err := s.Store.Introspect(ctx, token.Hash(tok), now)
	if errors.Is(err, store.ErrNotFound) {
		return inactive, nil
	}
	if err != nil {
		return inactive, err
	}
	if t.Kind != kind || (clientID != "" && t.ClientID != clientID) || t.Revoked.Valid || t.Rotated.Valid ||
		!now.Before(t.Expires) || !t.ClientActive || t.UserDeleted || t.Banned {
		return inactive, nil
	}
	out := Introspection{
		Active: true, Scope: strings.Join(t.Scopes, " "), ClientID: t.ClientID, Username: t.Username,
		TokenType: "Bearer", Exp: t.Expires.Unix(), Iat: t.Created.Unix(),
		Sub: t.UserID, Aud: audienceClaim(store.DecodeResources(t.Audience), t.ClientID), Iss: s.Issuer, JTI: t.ID,
	}
	if kind == "refresh" {
		out.TokenType = "refresh_token"
	}
	return out, nil
}
