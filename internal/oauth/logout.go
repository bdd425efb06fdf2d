package oauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/apperr"
	"hmid/internal/authflow"
	"hmid/internal/oauth/redirecturi"
)

// BackchannelLogoutEvent is the event member of a logout token (OpenID
// Connect Back-Channel Logout 1.0 §2.4).
const BackchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// LogoutTokenTTL is how long a logout token is valid after it is signed. It
// is signed anew at each delivery attempt, so a late retry still carries a
// fresh token (Back-Channel Logout 1.0 §2.4 recommends a short lifetime).
const LogoutTokenTTL = 2 * time.Minute

var _ authflow.Logouts = (*Service)(nil)

// SessionSID is the sid claim naming the browser session sessionID in ID
// tokens and logout tokens (OpenID Connect Front-Channel Logout 1.0 §3,
// Back-Channel Logout 1.0 §2.4): a MAC of the session id under the server
// key, stable for the session's life, and not the session id itself, which
// the sessions API accepts as a name of the session.
func (s *Service) SessionSID(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(s.Box.MAC([]byte("hmid oidc sid"), []byte(sessionID)))
}

// applyLogoutInput validates and applies the logout registration fields:
// post_logout_redirect_uris follow the rules of redirect URIs (RP-Initiated
// Logout 1.0 §3.1); backchannel_logout_uri is an absolute http(s) URL
// without fragment (Back-Channel Logout 1.0 §2.2, which, unlike Front-Channel
// Logout, does not tie it to a redirect URI's host; where it may point is
// the outbound rule's, checked in CreateClient and UpdateClient and again
// when a token is sent), for a client whose ID tokens
// are RS256 or ES256: logout tokens are signed like its ID tokens, and an HS256 key
// is either the client's secret, which hmid keeps only hashed, or a key that
// never leaves the server, so the client could not verify them.
func applyLogoutInput(c *Client, in ClientInput) error {
	if err := applyPostLogoutURIs(c, in); err != nil {
		return err
	}
	if in.BackchannelLogoutURI.Set {
		c.BackchannelLogoutURI = nil
		if v := in.BackchannelLogoutURI.Ptr(); v != nil && *v != "" {
			c.BackchannelLogoutURI = v
		}
	}
	if in.BackchannelLogoutSessionRequired.Set {
		if in.BackchannelLogoutSessionRequired.Ptr() == nil {
			return apperr.OnField("backchannel_logout_session_required", apperr.Invalid("backchannel_logout_session_required must be true or false"))
		}
		c.BackchannelLogoutSessionRequired = in.BackchannelLogoutSessionRequired.Value
	}
	if c.BackchannelLogoutURI == nil {
		return nil
	}
	return checkBackchannelURI(*c.BackchannelLogoutURI, c.IDTokenSignedResponseAlg)
}

// applyPostLogoutURIs applies post_logout_redirect_uris: at most 20,
// normalized like redirect URIs, without duplicates.
func applyPostLogoutURIs(c *Client, in ClientInput) error {
	if in.PostLogoutRedirectURIs.Set {
		uris := in.PostLogoutRedirectURIs.Value
		if len(uris) > 20 {
			return apperr.OnField("post_logout_redirect_uris", apperr.Invalid("post_logout_redirect_uris takes at most 20 URIs"))
		}
		clean, err := normalizeURIs("post_logout_redirect_uris", uris)
		if err != nil {
			return err
		}
		c.PostLogoutRedirectURIs = clean
	}
	if c.PostLogoutRedirectURIs == nil {
		c.PostLogoutRedirectURIs = []string{}
	}
	return nil
}

// checkBackchannelURI checks a back-channel logout URI (Back-Channel Logout
// 1.0 §2.2: an absolute http(s) URL, no fragment) and that the client's
// ID-token algorithm lets it verify logout tokens.
func checkBackchannelURI(raw, alg string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" ||
		strings.Contains(raw, "#") || len(raw) > 2000 || strings.ContainsAny(raw, " \t\r\n\\") {
		return apperr.OnField("backchannel_logout_uri", apperr.Invalid("backchannel_logout_uri must be an absolute http(s) URL without user information or fragment"))
	}
	if alg != AlgRS256 && alg != AlgES256 {
		return apperr.OnField("backchannel_logout_uri", apperr.Invalid("back-channel logout needs id_token_signed_response_alg RS256 or ES256: logout tokens are signed like ID tokens, and the client must be able to verify them"))
	}
	return nil
}

// hint is an id_token_hint as far as it could be checked.
type hint struct {
	sub, sid string
	aud      []string
	// verified: the signature was checked with hmid's key. A hint of an
	// HS256 confidential client cannot be: its key is the client secret,
	// kept only hashed. Such a hint may name the client (as client_id
	// could) but never proves the session.
	verified bool
}

// errBadHint is the answer to an id_token_hint that is not a usable ID token.
func errBadHint(why string) error {
	return apperr.OnField("id_token_hint", apperr.Invalid("id_token_hint is not a valid ID token issued by this server: %s", why))
}

// parseHint checks an id_token_hint (RP-Initiated Logout 1.0 §2: the OP
// must validate that it issued the token). An expired token is accepted:
// its signature and issuer still prove who the RP is (§4).
func (s *Service) parseHint(ctx context.Context, raw string) (hint, error) {
	var h hint
	claims := jwt.MapClaims{}
	unverifiable := false
	var infra error // a store failure while finding the key: not the hint's fault
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		switch t.Method.Alg() {
		case AlgRS256, AlgES256:
			// Any key the JWKS still lists: a hint outlives a rotation.
			kid, _ := t.Header["kid"].(string)
			k, err := s.Keys.Published(ctx, kid)
			if err != nil {
				return nil, errors.New("unknown key id")
			}
			if k.Alg() != t.Method.Alg() {
				return nil, errors.New("the key id names a key of another algorithm")
			}
			return k.Public(), nil
		case AlgHS256:
			aud, _ := claims.GetAudience()
			if len(aud) != 1 {
				return nil, errors.New("an HS256 ID token has exactly one audience")
			}
			c, err := s.loadClient(ctx, s.DB, aud[0])
			if err != nil {
				if !apperr.Is(err, apperr.NotFound) {
					infra = err
				}
				return nil, errors.New("unknown audience")
			}
			if c.IDTokenSignedResponseAlg != AlgHS256 {
				return nil, errors.New("the client's ID tokens are not HS256")
			}
			if c.ClientType == Confidential {
				unverifiable = true
				return nil, errUnverifiable
			}
			return s.PublicClientKey(c.ID), nil
		default:
			return nil, fmt.Errorf("algorithm %q is not one hmid signs ID tokens with", t.Method.Alg())
		}
	}, jwt.WithValidMethods([]string{AlgRS256, AlgES256, AlgHS256}), jwt.WithoutClaimsValidation())
	switch {
	case unverifiable && errors.Is(err, errUnverifiable):
	case infra != nil:
		return h, infra
	case err != nil:
		return h, errBadHint("malformed or not signed by this server")
	default:
		h.verified = true
	}
	if iss, _ := claims.GetIssuer(); iss != s.Issuer {
		return h, errBadHint("wrong issuer")
	}
	h.sub, _ = claims.GetSubject()
	h.aud, _ = claims.GetAudience()
	h.sid, _ = claims["sid"].(string)
	if h.sub == "" || len(h.aud) == 0 {
		return h, errBadHint("sub and aud are required")
	}
	return h, nil
}

// errUnverifiable stops the parser at a hint whose key hmid does not hold.
var errUnverifiable = errors.New("signed with a key hmid does not keep")

// endSessionParams are the parameters of RP-Initiated Logout 1.0 §2.
var endSessionParams = []string{"id_token_hint", "logout_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales"}

// CheckEndSession validates an RP-Initiated Logout request (OpenID Connect
// RP-Initiated Logout 1.0 §2, §3) against the browser session sessionID of
// userID ("" for none); see authflow.Logouts. Every problem is a
// Validation error: the page shows it and never redirects (§3: no
// redirection to an unverified post_logout_redirect_uri).
func (s *Service) CheckEndSession(ctx context.Context, q map[string][]string, sessionID, userID string) (authflow.EndSession, error) {
	var out authflow.EndSession
	for _, p := range endSessionParams {
		if len(q[p]) > 1 {
			return out, apperr.OnField(p, apperr.Invalid("%s was given more than once", p))
		}
	}
	get := func(k string) string {
		if v := q[k]; len(v) == 1 {
			return v[0]
		}
		return ""
	}
	clientID, redirect, state := get("client_id"), get("post_logout_redirect_uri"), get("state")
	if len(state) > 1024 {
		// The same bound as the authorization request's state.
		return out, apperr.OnField("state", apperr.Invalid("state is at most 1024 characters"))
	}
	var h hint
	if raw := get("id_token_hint"); raw != "" {
		var err error
		if h, err = s.parseHint(ctx, raw); err != nil {
			return out, err
		}
		if clientID, err = hintClient(h, clientID); err != nil {
			return out, err
		}
	}
	if redirect != "" && clientID == "" {
		return out, apperr.OnField("post_logout_redirect_uri", apperr.Invalid("post_logout_redirect_uri needs client_id or id_token_hint to be verified"))
	}
	if clientID != "" {
		if err := s.endSessionClient(ctx, &out, clientID, redirect, state); err != nil {
			return out, err
		}
	}
	out.Confirmed = h.verified && sessionID != "" && h.sub == userID && h.sid != "" && h.sid == s.SessionSID(sessionID)
	return out, nil
}

// hintClient returns the client an end-session request names, given its
// id_token_hint h and the client_id it sent (maybe ""): the hint's only
// audience when none was sent, and an error when they disagree or the hint
// has several audiences to choose from (RP-Initiated Logout 1.0 §2).
func hintClient(h hint, clientID string) (string, error) {
	switch {
	case clientID != "" && !slices.Contains(h.aud, clientID):
		return "", apperr.OnField("client_id", apperr.Invalid("client_id is not an audience of the id_token_hint"))
	case clientID == "" && len(h.aud) == 1:
		return h.aud[0], nil
	case clientID == "":
		return "", apperr.OnField("client_id", apperr.Invalid("client_id is required with an id_token_hint of several audiences"))
	}
	return clientID, nil
}

// endSessionClient fills out with the client of an end-session request and,
// when redirect is given, the registered post-logout redirect with state.
func (s *Service) endSessionClient(ctx context.Context, out *authflow.EndSession, clientID, redirect, state string) error {
	c, err := s.loadClient(ctx, s.DB, clientID)
	if apperr.Is(err, apperr.NotFound) {
		return apperr.OnField("client_id", apperr.Invalid("client_id names no registered client"))
	}
	if err != nil {
		return err
	}
	if !c.IsActive {
		return apperr.OnField("client_id", apperr.Invalid("the client is deactivated"))
	}
	out.ClientID, out.ClientName = c.ID, c.Name
	if redirect != "" {
		// Simple string comparison, like redirect_uri (RFC 3986 §6.2.1).
		if !slices.Contains(c.PostLogoutRedirectURIs, redirect) {
			return apperr.OnField("post_logout_redirect_uri", apperr.Invalid("post_logout_redirect_uri is not registered for this client"))
		}
		out.RedirectURL = redirecturi.Build(redirect, url.Values{"state": {state}})
	}
	return nil
}

// LogoutToken signs the logout token telling clientID that the browser
// session sessionID of userID ended (Back-Channel Logout 1.0 §2.4): typ
// logout+jwt, sub and sid, the back-channel logout event, no nonce, signed
// with the key of the client's RS256 or ES256 ID tokens. jti stays the same
// across the delivery attempts of one notification, so the client can
// discard a repeat. A client that is gone, or no longer registered for an
// asymmetric algorithm, is NotFound: there is nothing to deliver.
func (s *Service) LogoutToken(ctx context.Context, clientID, userID, sessionID, jti string, now time.Time) (uri, logoutToken string, err error) {
	c, err := s.loadClient(ctx, s.DB, clientID)
	if err != nil {
		return "", "", err
	}
	if c.BackchannelLogoutURI == nil || (c.IDTokenSignedResponseAlg != AlgRS256 && c.IDTokenSignedResponseAlg != AlgES256) || !c.IsActive {
		return "", "", apperr.NotFoundf("the client no longer takes back-channel logout tokens")
	}
	k, err := s.Keys.Signer(ctx, c.IDTokenSignedResponseAlg)
	if err != nil {
		return "", "", err
	}
	// Explicit typing keeps a logout token from passing as an ID token (§2.4).
	signed, err := k.SignTyped(map[string]any{
		"iss": s.Issuer, "aud": c.ID, "iat": now.Unix(), "exp": now.Add(LogoutTokenTTL).Unix(), "jti": jti,
		"sub": userID, "sid": s.SessionSID(sessionID),
		"events": map[string]any{BackchannelLogoutEvent: map[string]any{}},
	}, "logout+jwt")
	return *c.BackchannelLogoutURI, signed, err
}
