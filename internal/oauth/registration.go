package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// Modes of dynamic client registration (HMID_DYNAMIC_REGISTRATION).
const (
	RegistrationOff   = "off"   // no registration endpoint (the default)
	RegistrationToken = "token" // an initial access token is required (RFC 7591 §3)
	RegistrationOpen  = "open"  // anyone may register, as MCP clients expect
)

// DefaultRegistrationExpiry is how long an open registration lives without
// a token issued to it (HMID_DYNAMIC_REGISTRATION_EXPIRY).
const DefaultRegistrationExpiry = 30 * 24 * time.Hour

// Token prefixes of registration (base62 after the prefix, like every hm_ token).
const (
	PrefixRegistrationToken  = "hm_rat_" // registration access token (RFC 7592 §1)
	PrefixInitialAccessToken = "hm_iat_" // initial access token (RFC 7591 §3)
)

// RFC 7591 §3.2.2 error codes.
const (
	ErrInvalidRedirectURI    = "invalid_redirect_uri"
	ErrInvalidClientMetadata = "invalid_client_metadata"
)

// RegistrationMetadata is the client metadata of RFC 7591 §2 that hmid
// understands; other members are ignored, as §2 asks.
type RegistrationMetadata struct {
	ClientID                 string          `json:"client_id,omitempty"` // only in RFC 7592 updates
	ClientSecret             string          `json:"client_secret,omitempty"`
	RedirectURIs             []string        `json:"redirect_uris"`
	ClientName               string          `json:"client_name,omitempty"`
	TokenEndpointAuthMethod  string          `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes               []string        `json:"grant_types,omitempty"`
	ResponseTypes            []string        `json:"response_types,omitempty"`
	Scope                    string          `json:"scope,omitempty"`
	LogoURI                  string          `json:"logo_uri,omitempty"`
	ClientURI                string          `json:"client_uri,omitempty"`
	PolicyURI                string          `json:"policy_uri,omitempty"`
	TOSURI                   string          `json:"tos_uri,omitempty"`
	JWKSURI                  string          `json:"jwks_uri,omitempty"`
	JWKS                     json.RawMessage `json:"jwks,omitempty"`
	IDTokenSignedResponseAlg string          `json:"id_token_signed_response_alg,omitempty"`
	PostLogoutRedirectURIs   []string        `json:"post_logout_redirect_uris,omitempty"`
	BackchannelLogoutURI     string          `json:"backchannel_logout_uri,omitempty"`
}

// RegistrationResponse is the client information response (RFC 7591
// §3.2.1, RFC 7592 §3): the metadata as registered, the credentials, and
// where and with what to manage the registration.
type RegistrationResponse struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64  `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64 `json:"client_secret_expires_at,omitempty"`
	RegistrationAccessToken string `json:"registration_access_token,omitempty"`
	RegistrationClientURI   string `json:"registration_client_uri"`
	RegistrationMetadata
}

// errRefused rolls back a registration refused inside its transaction.
var errRefused = errors.New("oauth: registration refused")

// RegistrationMode is the mode of dynamic client registration (off, token
// or open), RegistrationOff unless set.
func (s *Service) RegistrationMode() string {
	switch s.Registration {
	case RegistrationToken, RegistrationOpen:
		return s.Registration
	}
	return RegistrationOff
}

// registrationError is an RFC 7591 §3.2.2 error, answered as 400 {error,
// error_description}.
func registrationError(code, desc string) *Error {
	return oerr(code, desc)
}

// asRegistrationError maps a validation error of the client rules to RFC
// 7591's codes: redirect URIs have their own, all else is metadata.
func asRegistrationError(err error) *Error {
	var ae *apperr.Error
	if !errors.As(err, &ae) || (ae.Kind != apperr.Validation && ae.Kind != apperr.BadRequest && ae.Kind != apperr.Forbidden) {
		return asOAuthErr(err)
	}
	if ae.Field == "redirect_uris" {
		return registrationError(ErrInvalidRedirectURI, ae.Message)
	}
	return registrationError(ErrInvalidClientMetadata, ae.Message)
}

// input turns metadata into the client fields hmid validates, every field
// set: a registration (and an RFC 7592 update, which replaces the whole
// registration) defines the client entirely.
func (md RegistrationMetadata) input() (ClientInput, *Error) {
	if len(md.ResponseTypes) > 0 && !slices.Equal(md.ResponseTypes, []string{"code"}) {
		return ClientInput{}, registrationError(ErrInvalidClientMetadata, "response_types must be [\"code\"]: hmid serves the authorization code flow only")
	}
	if slices.Contains(md.GrantTypes, GrantClientCredentials) {
		return ClientInput{}, registrationError(ErrInvalidClientMetadata, "client_credentials clients are registered through the API, where their permission scopes are checked")
	}
	method := md.TokenEndpointAuthMethod
	if method == "" {
		method = AuthSecretBasic // RFC 7591 §2's default
	}
	clientType := Confidential
	if method == AuthNone {
		clientType = Public
	}
	grants := md.GrantTypes
	if len(grants) == 0 {
		grants = []string{GrantAuthorizationCode} // RFC 7591 §2's default
	}
	scopes := parseScope(md.Scope)
	if md.Scope == "" {
		scopes = []string{"openid", "profile", "email"}
	}
	for _, sc := range scopes {
		// The API's clients may hold permission strings for the client
		// credentials grant; a registered client gets the catalogue's only.
		if _, ok := knownScope(sc); !ok {
			return ClientInput{}, registrationError(ErrInvalidClientMetadata, "scope "+strconv.Quote(sc)+" is not offered to dynamically registered clients; known scopes are "+strings.Join(ScopeNames(), " "))
		}
	}
	name := strings.TrimSpace(md.ClientName)
	if name == "" {
		name = "Unnamed client"
	}
	set := func(v string) httpx.Opt[string] { return httpx.Opt[string]{Set: true, Value: v, Null: v == ""} }
	in := ClientInput{
		Name: set(name), Description: set(""), LogoURL: set(md.LogoURI), HomepageURL: set(md.ClientURI),
		PrivacyPolicyURL: set(md.PolicyURI), TermsOfServiceURL: set(md.TOSURI),
		RedirectURIs:             httpx.Opt[[]string]{Set: true, Value: md.RedirectURIs},
		AllowedScopes:            httpx.Opt[[]string]{Set: true, Value: scopes},
		ClientType:               set(clientType),
		IDTokenSignedResponseAlg: set(md.IDTokenSignedResponseAlg),
		PostLogoutRedirectURIs:   httpx.Opt[[]string]{Set: true, Value: md.PostLogoutRedirectURIs},
		BackchannelLogoutURI:     set(md.BackchannelLogoutURI),
		TokenEndpointAuthMethod:  set(method),
		JWKS:                     httpx.Opt[json.RawMessage]{Set: true, Value: md.JWKS, Null: len(md.JWKS) == 0},
		JWKSURI:                  set(md.JWKSURI),
		GrantTypes:               httpx.Opt[[]string]{Set: true, Value: grants},
	}
	if in.PostLogoutRedirectURIs.Value == nil {
		in.PostLogoutRedirectURIs.Value = []string{}
	}
	return in, nil
}

// clientMetadata is the registered metadata of c (RFC 7591 §3.2.1).
func clientMetadata(c Client) RegistrationMetadata {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return RegistrationMetadata{
		RedirectURIs: c.RedirectURIs, ClientName: c.Name, TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		GrantTypes: c.GrantTypes, ResponseTypes: []string{"code"}, Scope: strings.Join(c.AllowedScopes, " "),
		LogoURI: str(c.LogoURL), ClientURI: str(c.HomepageURL), PolicyURI: str(c.PrivacyPolicyURL), TOSURI: str(c.TermsOfServiceURL),
		JWKSURI: str(c.JWKSURI), JWKS: c.JWKS, IDTokenSignedResponseAlg: c.IDTokenSignedResponseAlg,
		PostLogoutRedirectURIs: c.PostLogoutRedirectURIs, BackchannelLogoutURI: str(c.BackchannelLogoutURI),
	}
}

// registrationResponse is the answer about c; rat and the secret are set
// only when just issued.
func (s *Service) registrationResponse(c Client, rat string) RegistrationResponse {
	r := RegistrationResponse{
		ClientID: c.ID, ClientSecret: c.ClientSecret, ClientIDIssuedAt: c.CreatedAt.Unix(),
		RegistrationAccessToken: rat, RegistrationClientURI: s.Issuer + "/v1/oauth/register/" + c.ID,
		RegistrationMetadata: clientMetadata(c),
	}
	if c.ClientType == Confidential && c.TokenEndpointAuthMethod != AuthPrivateKeyJWT {
		never := int64(0) // the secret does not expire (RFC 7591 §3.2.1)
		r.ClientSecretExpiresAt = &never
	}
	return r
}

// OpenRegistrationLimit is how many clients one address may register in
// open mode: a burst of ten, then one every six minutes; a request refused
// for its metadata is not counted. Open registration
// needs no credential, so without it one address could fill the clients
// table (the expiry of unused open registrations clears them only after
// 30 days). Token mode is bounded by its initial access tokens' uses.
var OpenRegistrationLimit = cache.PerPeriod(10, time.Hour)

// throttleOpenRegistration counts an open registration against its
// address, across instances; 429 temporarily_unavailable with Retry-After
// when the address is over OpenRegistrationLimit.
func (s *Service) throttleOpenRegistration(ctx context.Context, mode, ip string) *Error {
	if mode != RegistrationOpen || s.Limiter == nil {
		return nil
	}
	d, err := cache.Allow(ctx, s.Limiter, "oauth:register:ip:"+ip, OpenRegistrationLimit)
	if err != nil {
		return asOAuthErr(err)
	}
	if !d.Allowed {
		return &Error{Code: ErrTemporarilyUnavailable, Status: http.StatusTooManyRequests, retryAfter: d.RetryAfter,
			Description: "too many client registrations from this address; try again later"}
	}
	return nil
}

// Register registers a client (RFC 7591 §3). In token mode iat must be a
// live initial access token with room for another client, whose scopes
// bound the client's; in open mode anyone may register. A registered
// client is never first party and gets only the catalogue's scopes (never
// permission scopes). The answer carries the secret of a confidential
// client and the registration access token, each once.
func (s *Service) Register(ctx context.Context, iat string, md RegistrationMetadata, m Meta) (RegistrationResponse, *Error) {
	mode := s.RegistrationMode()
	if mode == RegistrationOff {
		return RegistrationResponse{}, &Error{Code: "not_found", Description: "dynamic client registration is off", Status: 404}
	}
	in, oe := md.input()
	if oe != nil {
		return RegistrationResponse{}, oe
	}
	c := Client{IsActive: true, IDTokenSignedResponseAlg: s.DefaultIDTokenAlg}
	if c.IDTokenSignedResponseAlg == "" {
		c.IDTokenSignedResponseAlg = AlgHS256
	}
	if err := applyInput(&c, in, true); err != nil {
		return RegistrationResponse{}, asRegistrationError(err)
	}
	if err := s.checkOutboundTargets(c); err != nil {
		return RegistrationResponse{}, asRegistrationError(err)
	}
	// Counted once the metadata is valid: a refused request stores nothing.
	if oe := s.throttleOpenRegistration(ctx, mode, m.IP); oe != nil {
		return RegistrationResponse{}, oe
	}
	c.ID, c.DynamicRegistration = uuid.NewString(), &mode
	newSecret(&c)
	rat := token.New(PrefixRegistrationToken)
	c.RegistrationHash = token.Hash(rat)
	now := s.Clock.Now()
	var fail *Error
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if mode == RegistrationToken {
			if fail = s.spendInitialToken(ctx, tx, iat, &c, now); fail != nil {
				return errRefused // roll back: the token's count stays
			}
		}
		if err := s.Store.InsertClient(ctx, tx, c, now); err != nil {
			return err
		}
		_, err := s.Audit.Record(ctx, tx, m.event(audit.Event{
			EventType: audit.ClientCreated, ResourceType: "oauth_client", ResourceID: c.ID, ActorID: c.InitialTokenID,
			Description: "OAuth client " + c.Name + " registered dynamically",
			Metadata:    map[string]any{"name": c.Name, "client_type": c.ClientType, "dynamic_registration": mode},
		}))
		return err
	})
	if fail != nil {
		return RegistrationResponse{}, fail
	}
	if err != nil {
		return RegistrationResponse{}, asOAuthErr(err)
	}
	s.clientsChanged()
	secret := c.ClientSecret
	if c, err = s.loadClient(ctx, s.DB, c.ID); err != nil {
		return RegistrationResponse{}, asOAuthErr(err)
	}
	c.ClientSecret = secret
	return s.registrationResponse(c, rat), nil
}

// registeredClient loads the dynamically registered client id for its
// registration access token rat; any mismatch is invalid_token (RFC 7592
// §3: 401 whether the client is unknown or the token wrong).
func (s *Service) registeredClient(ctx context.Context, id, rat string) (Client, *Error) {
	bad := &Error{Code: ErrInvalidToken, Description: "the registration access token is missing, invalid or not this client's", Status: 401}
	if s.RegistrationMode() == RegistrationOff {
		return Client{}, &Error{Code: "not_found", Description: "dynamic client registration is off", Status: 404}
	}
	c, err := s.loadClient(ctx, s.DB, id)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Client{}, asOAuthErr(err)
	}
	stored := dummySecretHash
	if err == nil && c.RegistrationHash != "" {
		stored = c.RegistrationHash
	}
	if !token.Equal(token.Hash(rat), stored) || err != nil || c.RegistrationHash == "" || !token.HasShape(rat, PrefixRegistrationToken) {
		return Client{}, bad
	}
	return c, nil
}

// ReadRegistration answers the registration of client id (RFC 7592 §2.1).
func (s *Service) ReadRegistration(ctx context.Context, id, rat string) (RegistrationResponse, *Error) {
	c, oe := s.registeredClient(ctx, id, rat)
	if oe != nil {
		return RegistrationResponse{}, oe
	}
	return s.registrationResponse(c, ""), nil
}

// UpdateRegistration replaces the registration of client id with md (RFC
// 7592 §2.2); the client type cannot change (public or confidential).
func (s *Service) UpdateRegistration(ctx context.Context, id, rat string, md RegistrationMetadata, m Meta) (RegistrationResponse, *Error) {
	c, oe := s.registeredClient(ctx, id, rat)
	if oe != nil {
		return RegistrationResponse{}, oe
	}
	if md.ClientID != c.ID {
		return RegistrationResponse{}, registrationError(ErrInvalidClientMetadata, "client_id must be given and be this client's (RFC 7592 §2.2)")
	}
	in, oe := md.input()
	if oe != nil {
		return RegistrationResponse{}, oe
	}
	before := c.TokenEndpointAuthMethod
	if err := applyInput(&c, in, false); err != nil {
		return RegistrationResponse{}, asRegistrationError(err)
	}
	if err := s.checkOutboundTargets(c); err != nil {
		return RegistrationResponse{}, asRegistrationError(err)
	}
	if oe := s.checkInitialTokenScopes(ctx, c); oe != nil {
		return RegistrationResponse{}, oe
	}
	secret := switchSecret(&c, before)
	if err := s.saveClient(ctx, &authn.Principal{}, c, m); err != nil {
		return RegistrationResponse{}, asOAuthErr(err)
	}
	s.clientsChanged()
	s.forgetClientKeys(c.ID)
	c, err := s.loadClient(ctx, s.DB, c.ID)
	if err != nil {
		return RegistrationResponse{}, asOAuthErr(err)
	}
	c.ClientSecret = secret
	return s.registrationResponse(c, ""), nil
}

// DeleteRegistration deletes client id with its tokens (RFC 7592 §2.3).
func (s *Service) DeleteRegistration(ctx context.Context, id, rat string, m Meta) *Error {
	c, oe := s.registeredClient(ctx, id, rat)
	if oe != nil {
		return oe
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.Store.DeleteClient(ctx, tx, c.ID); err != nil {
			return err
		}
		_, err := s.Audit.Record(ctx, tx, m.event(audit.Event{
			EventType: audit.ClientDeleted, ResourceType: "oauth_client", ResourceID: c.ID,
			Description: "OAuth client " + c.Name + " deleted by its registration access token", Metadata: map[string]any{"name": c.Name},
		}))
		return err
	})
	if err != nil {
		return asOAuthErr(err)
	}
	s.clientsChanged()
	s.forgetClientKeys(c.ID)
	return nil
}

// checkInitialTokenScopes keeps an updated registration within the scopes
// of the initial access token that registered it.
func (s *Service) checkInitialTokenScopes(ctx context.Context, c Client) *Error {
	if c.InitialTokenID == "" {
		return nil
	}
	allowed, err := s.Store.InitialTokenScopes(ctx, c.InitialTokenID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return asOAuthErr(err)
	}
	return scopesWithin(c.AllowedScopes, allowed)
}

// scopesWithin refuses scopes outside allowed (empty allows any).
func scopesWithin(scopes, allowed []string) *Error {
	if len(allowed) > 0 && !subset(scopes, allowed) {
		return registrationError(ErrInvalidClientMetadata, "scope may only hold "+strings.Join(allowed, " ")+" (the initial access token's scopes)")
	}
	return nil
}
