package oauth

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/oauth/claims"
	"hmid/internal/oauth/signing"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// The token endpoint (RFC 6749 §3.2) is the phases every grant shares, run
// by Token in this order, around the grant the request names, which fills
// in only what is its own (one file each: grant_code.go, grant_refresh.go,
// grant_device.go, grant_clientcredentials.go):
//
//  1. the request: a form body without repeated parameters (§3.2, §3.1)
//     that names a grant_type;
//  2. client authentication (§2.3: client_secret_basic, client_secret_post,
//     private_key_jwt, or none for a public client);
//  3. the grant check: the client is registered for the grant
//     (unauthorized_client, §5.2) and hmid serves it (unsupported_grant_type);
//  4. the grant's own parameters (grantType.ready: invalid_request when one is
//     missing);
//  5. the audience: the resources the request names (RFC 8707 §2), each one
//     the client may ask for, checked before anything is spent;
//  6. the grant redeems what the request presents (a code, a refresh token,
//     a device code, or the client itself) and decides the scope; its tokens
//     come from the issuing phase (tokenRequest.issue: the client's
//     lifetimes and access token format, the audience within what was
//     granted), and it stores them in its own atomic step;
//  7. the response (§5.1; respond): an ID token beside the tokens when
//     openid was granted for a user (OpenID Connect Core §3.1.3.3).

// grantType is one grant type of the token endpoint: what only it knows.
type grantType interface {
	// ready checks that the request carries what the grant needs, before
	// anything is read: its parameters (invalid_request when one is
	// missing) and, for a grant limited to some clients, the client.
	ready(tr *tokenRequest) *Error
	// redeem checks what the request presents for the grant, spends it and
	// stores the tokens it issues, in one atomic step; what it issued is
	// answered by the response phase.
	redeem(ctx context.Context, tr *tokenRequest) (*issuance, *Error)
}

// tokenRequest is one request to the token endpoint as the shared phases
// have read it.
type tokenRequest struct {
	r      *http.Request
	form   url.Values
	client Client
	// secret is the client secret the client authenticated with: the
	// HS256 key of a confidential client's ID tokens ("" for the others).
	secret string
	now    time.Time
	// resources are the resource parameters (RFC 8707 §2), each one the
	// client may ask for; nil for none.
	resources []string
	// issuer, signer and the lifetimes are what the issuing phase issues
	// with: signer signs the client's JWT access tokens (nil for opaque
	// ones), taken before any transaction, as the first use of an
	// algorithm creates its key.
	issuer                string
	signer                *signing.Key
	accessTTL, refreshTTL time.Duration
}

// authorization is what a grant acting for a user redeemed: what its
// tokens are issued for, and what the response says of it.
type authorization struct {
	family store.Family // the user, the scope granted, the session, the context
	scopes []string     // the access token's: the scope granted, or less
	ac     authContext  // family.Context, decoded
	nonce  string       // the authorization request's, echoed in the ID token
	// claims are the user's claim columns when the grant read them
	// already (nil: the response reads them).
	claims *claims.Row
}

// issuance is what a grant issued. user is nil for the client credentials
// grant, which acts for no user: its answer has no refresh token and no ID
// token.
type issuance struct {
	tokens issuedTokens
	user   *authorization
}

// issuedTokens is an access token and its refresh token, issued together,
// with the lifetimes they are issued with.
type issuedTokens struct {
	access, refresh       string
	accessID              string // the access token's row id (its jti)
	accessScopes          []string
	audience              []string // the access token's resources (RFC 8707); nil: the client
	accessTTL, refreshTTL time.Duration
}

// pair is t as the store keeps it, in family f, issued at now.
func (t issuedTokens) pair(f store.Family, now time.Time) store.TokenPair {
	return store.TokenPair{Family: f, AccessID: t.accessID, AccessHash: token.Hash(t.access), AccessScopes: t.accessScopes,
		Audience: t.audience, AccessExpires: now.Add(t.accessTTL), RefreshHash: token.Hash(t.refresh), RefreshExpires: now.Add(t.refreshTTL)}
}

// TokenResponse is the successful answer of the token endpoint (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	IDToken      string `json:"id_token,omitempty"`
}

// ClientTokenResponse is the answer of the client credentials grant: an
// access token only (RFC 6749 §4.4.3: a refresh token should not be
// included).
type ClientTokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

// Token serves POST /v1/oauth/token (RFC 6749 §3.2; spec 1, Token).
func (h *Handler) Token(w http.ResponseWriter, r *http.Request) {
	resp, oe := h.S.token(r)
	if oe != nil {
		writeOAuthError(w, logged(r, oe))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// token runs the phases of the token endpoint for r.
func (s *Service) token(r *http.Request) (any, *Error) {
	form, oe := parseForm(r)
	if oe != nil {
		return nil, oe
	}
	name := form.Get("grant_type")
	if name == "" {
		return nil, oerr(ErrInvalidRequest, "grant_type is required")
	}
	ctx := r.Context()
	c, secret, oe := s.authenticateClient(ctx, r, form)
	if oe != nil {
		return nil, oe
	}
	if oe := checkGrant(c, name); oe != nil {
		return nil, oe
	}
	g, ok := s.grantTypes()[name]
	if !ok {
		return nil, oerr(ErrUnsupportedGrantType, "grant_type must be one of "+strings.Join(grantCatalogue, ", "))
	}
	tr := &tokenRequest{r: r, form: form, client: c, secret: secret, issuer: s.Issuer}
	if oe := g.ready(tr); oe != nil {
		return nil, oe
	}
	if tr.resources, oe = requestedResources(c, form); oe != nil {
		return nil, oe
	}
	if tr.signer, oe = s.accessSigner(ctx, c); oe != nil {
		return nil, oe
	}
	tr.now = s.Clock.Now()
	tr.accessTTL, tr.refreshTTL = s.lifetimes(c)
	is, oe := g.redeem(ctx, tr)
	if oe != nil {
		return nil, oe
	}
	return s.respond(ctx, tr, is)
}

// grantTypes returns the grants of the token endpoint by grant_type, made
// once from the service's dependencies: each grant holds only those it
// needs, the shared phases are the service's.
func (s *Service) grantTypes() map[string]grantType {
	s.grantsOnce.Do(func() {
		s.grants = map[string]grantType{
			GrantAuthorizationCode: &codeGrant{db: s.DB, store: s.Store},
			GrantRefreshToken:      &refreshGrant{db: s.DB, store: s.Store, audit: s.Audit, reuseInterval: s.RefreshReuseInterval},
			GrantDeviceCode:        &deviceGrant{db: s.DB, store: s.Store},
			GrantClientCredentials: &clientGrant{db: s.DB, store: s.Store},
		}
	})
	return s.grants
}

// issue is the issuing phase of a grant acting for a user: it draws the
// access and refresh token for a, with the client's lifetimes, for the
// audience the request asks within what a granted (RFC 8707 §2.2; none
// asked: all of it), as the client's format has it: an RFC 9068 JWT or an
// opaque token. The grant stores them.
func (tr *tokenRequest) issue(a *authorization) (issuedTokens, *Error) {
	t := issuedTokens{access: token.New(token.PrefixAccessToken), refresh: token.New(token.PrefixRefreshToken),
		accessID: db.NewID(), accessScopes: a.scopes, accessTTL: tr.accessTTL, refreshTTL: tr.refreshTTL}
	aud, oe := grantedAudience(tr.resources, a.ac.Resources)
	if oe != nil {
		return issuedTokens{}, oe
	}
	t.audience = aud
	if tr.signer == nil {
		return t, nil
	}
	jwt, err := accessJWT(tr.signer, tr.issuer, tr.client, a, t, tr.now)
	if err != nil {
		return issuedTokens{}, asOAuthErr(err)
	}
	t.access = jwt
	return t, nil
}

// respond is the response phase (RFC 6749 §5.1): the tokens is holds, and
// an ID token when openid was granted for a user (OpenID Connect Core
// §3.1.3.3), which names the browser session of the grant in sid.
func (s *Service) respond(ctx context.Context, tr *tokenRequest, is *issuance) (any, *Error) {
	t, a := is.tokens, is.user
	if a == nil {
		return ClientTokenResponse{AccessToken: t.access, TokenType: "Bearer", ExpiresIn: int(t.accessTTL / time.Second), Scope: strings.Join(t.accessScopes, " ")}, nil
	}
	resp := TokenResponse{
		AccessToken: t.access, TokenType: "Bearer", ExpiresIn: int(t.accessTTL / time.Second),
		RefreshToken: t.refresh, Scope: strings.Join(t.accessScopes, " "),
	}
	if slices.Contains(t.accessScopes, "openid") {
		idt, err := s.idToken(ctx, idTokenFor{client: tr.client, secret: tr.secret, userID: a.family.UserID, claims: a.claims,
			scopes: t.accessScopes, authTime: a.family.AuthTime, nonce: a.nonce, sid: s.SessionSID(a.family.SessionID), ac: a.ac, now: tr.now})
		if err != nil {
			return nil, asOAuthErr(err)
		}
		resp.IDToken = idt
	}
	return resp, nil
}

// accessSigner returns the key that signs c's JWT access tokens (RFC 9068),
// nil for a client with opaque ones.
func (s *Service) accessSigner(ctx context.Context, c Client) (*signing.Key, *Error) {
	if c.AccessTokenFormat != FormatJWT {
		return nil, nil
	}
	k, err := s.Keys.Signer(ctx, accessTokenAlg(c))
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return k, nil
}

// dummySecretHash is compared against when the client is unknown, so an
// unknown client_id costs the same as a wrong secret.
var dummySecretHash = token.Hash("hm_sec_dummy")

// parseForm reads an application/x-www-form-urlencoded POST body (RFC 6749
// §3.2) and refuses repeated parameters (§3.1).
func parseForm(r *http.Request) (url.Values, *Error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return nil, oerr(ErrInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	if err := r.ParseForm(); err != nil {
		return nil, oerr(ErrInvalidRequest, "the form body could not be parsed")
	}
	for k, v := range r.PostForm {
		if len(v) > 1 && k != "resource" { // resource may be repeated (RFC 8707 §2)
			return nil, oerr(ErrInvalidRequest, k+" is given more than once")
		}
	}
	return r.PostForm, nil
}

// authenticateClient authenticates the client of a token, revocation or
// introspection request: with a client assertion (private_key_jwt, RFC 7523
// §2.2; clientassertion.go), client_secret_basic (RFC 6749 §2.3.1, id and
// secret form-urlencoded inside the header), client_secret_post, or none for
// public clients (which then rely on PKCE). It returns the client and the
// secret it presented (the HS256 key of its ID tokens; "" for the others).
func (s *Service) authenticateClient(ctx context.Context, r *http.Request, form url.Values) (Client, string, *Error) {
	if usesAssertion(form) {
		c, oe := s.authenticateAssertion(ctx, r, form)
		return c, "", oe
	}
	id, secret, basic := r.BasicAuth()
	fail := func(desc string) *Error {
		e := oerr(ErrInvalidClient, desc)
		e.basic = basic
		return e
	}
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return Client{}, "", fail("malformed client credentials in the Authorization header")
		}
		if form.Has("client_secret") {
			return Client{}, "", oerr(ErrInvalidRequest, "use one client authentication method, not Basic and client_secret together")
		}
		if fid := form.Get("client_id"); fid != "" && fid != id {
			return Client{}, "", oerr(ErrInvalidRequest, "client_id differs from the client authenticated by the Authorization header")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id == "" {
		return Client{}, "", fail("client authentication is required (client_id)")
	}
	c, err := s.loadClient(ctx, s.DB, id)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Client{}, "", asOAuthErr(err)
	}
	if err != nil || !c.IsActive {
		token.Equal(token.Hash(secret), dummySecretHash)
		return Client{}, "", fail("unknown or inactive client")
	}
	return checkSecret(c, secret, fail)
}

// checkSecret checks the secret a client presented: none for a public
// client, its own for a secret client. A private_key_jwt client has no
// secret and must send an assertion.
func checkSecret(c Client, secret string, fail func(string) *Error) (Client, string, *Error) {
	switch {
	case c.ClientType == Public && secret != "":
		return Client{}, "", fail("public clients have no secret")
	case c.ClientType == Public:
		return c, "", nil
	case c.TokenEndpointAuthMethod == AuthPrivateKeyJWT:
		return Client{}, "", fail("this client authenticates with private_key_jwt: send client_assertion")
	case secret == "" || !token.Equal(token.Hash(secret), c.SecretHash):
		return Client{}, "", fail("client authentication failed")
	}
	return c, secret, nil
}
