package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/oauth/redirecturi"
	"hmid/internal/oauth/signing"
	"hmid/internal/oauth/store"
	"hmid/internal/outbound"
	"hmid/internal/token"
)

// Client types (spec 1, OAuth client).
const (
	Confidential = "confidential"
	Public       = "public"
)

// ID token signing algorithms a client may register with (extension field
// id_token_signed_response_alg, OpenID Connect Dynamic Client Registration §2):
// HS256, keyed with the client secret, or one of the server's signing keys.
const (
	AlgHS256 = "HS256"
	AlgRS256 = signing.AlgRS256
	AlgES256 = signing.AlgES256
)

// Client is an OAuth client as shown by the API, and as the store keeps
// it. ClientSecret is set only in the answers of creation and regeneration.
type Client = store.Client

// ClientInput is the body of client creation and update; on update only the
// fields that are Set change.
type ClientInput struct {
	Name                     httpx.Opt[string]   `json:"name"`
	Description              httpx.Opt[string]   `json:"description"`
	LogoURL                  httpx.Opt[string]   `json:"logo_url"`
	HomepageURL              httpx.Opt[string]   `json:"homepage_url"`
	PrivacyPolicyURL         httpx.Opt[string]   `json:"privacy_policy_url"`
	TermsOfServiceURL        httpx.Opt[string]   `json:"terms_of_service_url"`
	RedirectURIs             httpx.Opt[[]string] `json:"redirect_uris"`
	AllowedScopes            httpx.Opt[[]string] `json:"allowed_scopes"`
	ClientType               httpx.Opt[string]   `json:"client_type"`
	IsFirstParty             httpx.Opt[bool]     `json:"is_first_party"`
	IsActive                 httpx.Opt[bool]     `json:"is_active"`
	IDTokenSignedResponseAlg httpx.Opt[string]   `json:"id_token_signed_response_alg"`
	// Logout registration (RP-Initiated Logout 1.0 §3.1, Back-Channel Logout 1.0 §2.2).
	PostLogoutRedirectURIs           httpx.Opt[[]string] `json:"post_logout_redirect_uris"`
	BackchannelLogoutURI             httpx.Opt[string]   `json:"backchannel_logout_uri"`
	BackchannelLogoutSessionRequired httpx.Opt[bool]     `json:"backchannel_logout_session_required"`
	// Client authentication (RFC 7591 §2; private_key_jwt, RFC 7523).
	TokenEndpointAuthMethod httpx.Opt[string]          `json:"token_endpoint_auth_method"`
	JWKS                    httpx.Opt[json.RawMessage] `json:"jwks"`
	JWKSURI                 httpx.Opt[string]          `json:"jwks_uri"`
	// Resource indicators (RFC 8707) and the access token format (RFC 9068).
	Resources         httpx.Opt[[]string] `json:"resources"`
	AccessTokenFormat httpx.Opt[string]   `json:"access_token_format"`
	// GrantTypes (RFC 7591 §2): DefaultGrantTypes when not given on creation.
	GrantTypes httpx.Opt[[]string] `json:"grant_types"`
	// Token lifetimes of this client, null for the server's (lifetimes.go).
	AccessTokenLifetimeSeconds  ClientLifetime `json:"access_token_lifetime_seconds"`
	RefreshTokenLifetimeSeconds ClientLifetime `json:"refresh_token_lifetime_seconds"`
}

// loadClient returns a client by id; an unknown or malformed id is NotFound.
//
// Outside a transaction on SQLite the row may come from the row cache: every
// token request authenticates its client, and the row changes seldom. Its
// version covers users too, because deleting a user empties owner_id of the
// user's clients (ON DELETE SET NULL) in a statement that names only users.
func (s *Service) loadClient(ctx context.Context, q db.Querier, id string) (Client, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Client{}, apperr.NotFoundf("OAuth client not found")
	}
	cached := q == db.Querier(s.DB) && s.DB.Flavor == db.SQLite
	var version uint64
	if cached {
		version = s.DB.Version("oauth_clients") + s.DB.Version("users")
		if c, ok := s.clients.Get(id, version); ok {
			return c, nil
		}
	}
	c, err := s.Store.Client(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) {
		return Client{}, apperr.NotFoundf("OAuth client not found")
	}
	c.TokenEndpointAuthMethod = effectiveAuthMethod(c.TokenEndpointAuthMethod, c.ClientType)
	if err == nil && cached {
		s.clients.Put(id, c, version)
	}
	return c, err
}

// ownedBy reports whether the user of p owns c.
func ownedBy(c Client, p *authn.Principal) bool {
	return p != nil && p.UserID != "" && c.OwnerID != nil && *c.OwnerID == p.UserID
}

// visibleClient loads a client the caller may read: their own, or any with
// oauth_clients:read (spec 1, Authentication 6). Others answer NotFound so
// client ids of other users cannot be probed.
func (s *Service) visibleClient(ctx context.Context, p *authn.Principal, id string) (Client, error) {
	c, err := s.loadClient(ctx, s.DB, id)
	if err != nil {
		return c, err
	}
	if !ownedBy(c, p) && !p.Can("oauth_clients:read") {
		return Client{}, apperr.NotFoundf("OAuth client not found")
	}
	return c, nil
}

// manageableClient loads a client the caller may change with perm
// (oauth_clients:update or :delete): the owner, or a holder of perm (spec 1,
// OAuth clients: "owner or the permission"), which alone suffices — holding
// oauth_clients:delete without :read still deletes. A caller who may read the
// client but lacks perm gets Forbidden; one who may neither read nor change
// it gets NotFound, so client ids of other users cannot be probed.
func (s *Service) manageableClient(ctx context.Context, p *authn.Principal, id, perm string) (Client, error) {
	c, err := s.loadClient(ctx, s.DB, id)
	if err != nil {
		return c, err
	}
	switch {
	case ownedBy(c, p) || p.Can(perm):
		return c, nil
	case p.Can("oauth_clients:read"):
		return Client{}, apperr.Forbiddenf("missing permission %s", perm)
	default:
		return Client{}, apperr.NotFoundf("OAuth client not found")
	}
}

func validHTTPURL(field string, v *string) error {
	if v == nil || *v == "" {
		return nil
	}
	u, err := url.Parse(*v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(*v) > 2000 {
		return apperr.Invalid("%s must be an absolute http(s) URL", field)
	}
	return nil
}

// checkOutboundTargets checks, at creation, the URLs hmid will call.
func (s *Service) checkOutboundTargets(c Client) error {
	if err := s.checkBackchannelTarget(c); err != nil {
		return err
	}
	return s.checkJWKSTarget(c)
}

// checkBackchannelTarget refuses, with a helpful 400 at registration, a
// backchannel_logout_uri whose host is a literal internal address or
// localhost that HMID_OUTBOUND_ALLOW_CIDRS does not allow: hmid would never
// deliver there. Names are not resolved here; the outbound client checks
// the address it dials, which is what must hold (DNS can change).
func (s *Service) checkBackchannelTarget(c Client) error {
	return s.checkTarget("backchannel_logout_uri", c.BackchannelLogoutURI, "sends")
}

// checkJWKSTarget refuses a jwks_uri naming an internal address the
// outbound rules do not allow, like checkBackchannelTarget.
func (s *Service) checkJWKSTarget(c Client) error {
	return s.checkTarget("jwks_uri", c.JWKSURI, "fetches")
}

// checkTarget refuses the URL uri of the client's field when the outbound
// rules would refuse it; verb says what hmid does with it.
func (s *Service) checkTarget(field string, uri *string, verb string) error {
	if uri == nil {
		return nil
	}
	err := s.Outbound.CheckURL(*uri)
	var refused *outbound.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return apperr.OnField(field, apperr.Invalid(
			"%s names an internal address, %s (%s): hmid %s nothing there unless the operator allows its range in %s",
			field, refused.Addr, refused.Range, verb, outbound.EnvAllowCIDRs))
	}
	return apperr.OnField(field, apperr.Invalid("%s: %s", field, err.Error()))
}

// applyInput validates the set fields of in and applies them to c.
func applyInput(c *Client, in ClientInput, creating bool) error {
	for _, apply := range []func(*Client, ClientInput, bool) error{
		applyTexts, applyURLs, applyRedirectURIs, applyScopes, applyClientType, applyIDTokenAlg, applyAuthMethod, applyResources,
	} {
		if err := apply(c, in, creating); err != nil {
			return err
		}
	}
	if err := applyLogoutInput(c, in); err != nil {
		return err
	}
	if err := applyGrantTypes(c, in, creating); err != nil {
		return err
	}
	if err := requireRedirect(c); err != nil {
		return err
	}
	if err := applyLifetimeInput(c, in); err != nil {
		return err
	}
	if in.IsActive.Set {
		if in.IsActive.Ptr() == nil {
			return apperr.OnField("is_active", apperr.Invalid("is_active must be true or false"))
		}
		c.IsActive = in.IsActive.Value
	}
	return nil
}

// requireRedirect refuses a client registered for the authorization code
// grant without a redirect URI (RFC 6749 §3.1.2: the code goes there). A
// client whose grants need no redirect (client credentials, device) may
// have none (RFC 7591 §2: redirect_uris is for redirect-based flows).
func requireRedirect(c *Client) error {
	if len(c.RedirectURIs) == 0 && c.AllowsGrant(GrantAuthorizationCode) {
		return apperr.OnField("redirect_uris", apperr.Invalid("redirect_uris needs at least one URI for the authorization_code grant (up to 20)"))
	}
	return nil
}

// applyTexts applies name (required on creation) and description.
func applyTexts(c *Client, in ClientInput, creating bool) error {
	if in.Name.Set || creating {
		name := strings.TrimSpace(in.Name.Value)
		if name == "" || len(name) > 100 {
			return apperr.OnField("name", apperr.Invalid("name is required and at most 100 characters"))
		}
		c.Name = name
	}
	if in.Description.Set {
		if len(in.Description.Value) > 1000 {
			return apperr.OnField("description", apperr.Invalid("description is at most 1000 characters"))
		}
		c.Description = in.Description.Value
	}
	return nil
}

// applyURLs applies the optional http(s) URLs shown on the consent screen;
// an empty string clears one.
func applyURLs(c *Client, in ClientInput, _ bool) error {
	for _, f := range []struct {
		name string
		in   httpx.Opt[string]
		dst  **string
	}{
		{"logo_url", in.LogoURL, &c.LogoURL},
		{"homepage_url", in.HomepageURL, &c.HomepageURL},
		{"privacy_policy_url", in.PrivacyPolicyURL, &c.PrivacyPolicyURL},
		{"terms_of_service_url", in.TermsOfServiceURL, &c.TermsOfServiceURL},
	} {
		if !f.in.Set {
			continue
		}
		v := f.in.Ptr()
		if v != nil && *v == "" {
			v = nil
		}
		if err := validHTTPURL(f.name, v); err != nil {
			return apperr.OnField(f.name, err)
		}
		*f.dst = v
	}
	return nil
}

// applyRedirectURIs applies up to 20 redirect URIs, normalized and without
// duplicates. Whether the client may have none depends on its grants, which
// are applied after: requireRedirect checks that once both are in place.
func applyRedirectURIs(c *Client, in ClientInput, creating bool) error {
	if !in.RedirectURIs.Set && !creating {
		return nil
	}
	uris := in.RedirectURIs.Value
	if len(uris) > 20 {
		return apperr.OnField("redirect_uris", apperr.Invalid("redirect_uris holds at most 20 URIs"))
	}
	clean, err := normalizeURIs("redirect_uris", uris)
	if err != nil {
		return err
	}
	c.RedirectURIs = clean
	return nil
}

// normalizeURIs normalizes the redirect URIs of field (redirecturi.Normalize)
// and drops duplicates.
func normalizeURIs(field string, uris []string) ([]string, error) {
	clean := []string{}
	for _, raw := range uris {
		u, err := redirecturi.Normalize(raw)
		if err != nil {
			return nil, apperr.OnField(field, err)
		}
		if !slices.Contains(clean, u) {
			clean = append(clean, u)
		}
	}
	return clean, nil
}

// applyScopes applies allowed_scopes, known scopes only; a creation without
// them gets openid, profile and email.
func applyScopes(c *Client, in ClientInput, creating bool) error {
	if !in.AllowedScopes.Set && !creating {
		return nil
	}
	scopes := in.AllowedScopes.Value
	if !in.AllowedScopes.Set || scopes == nil {
		scopes = []string{"openid", "profile", "email"}
	}
	clean := []string{}
	for _, sc := range scopes {
		if !validClientScope(sc) {
			return apperr.OnField("allowed_scopes", apperr.Invalid("scope %q is not known; known scopes are %s, and permission strings (resource:action) for the client credentials grant", sc, strings.Join(ScopeNames(), ", ")))
		}
		if !slices.Contains(clean, sc) {
			clean = append(clean, sc)
		}
	}
	c.AllowedScopes = clean
	return nil
}

// applyClientType sets the client type on creation (confidential unless
// public is asked for); it cannot change afterwards.
func applyClientType(c *Client, in ClientInput, creating bool) error {
	if !creating {
		if in.ClientType.Set && in.ClientType.Value != c.ClientType {
			return apperr.OnField("client_type", apperr.Invalid("client_type cannot be changed after registration; register a new client"))
		}
		return nil
	}
	c.ClientType = Confidential
	if in.ClientType.Set && in.ClientType.Value != "" {
		c.ClientType = in.ClientType.Value
	}
	if c.ClientType != Confidential && c.ClientType != Public {
		return apperr.OnField("client_type", apperr.Invalid("client_type must be confidential or public"))
	}
	return nil
}

// applyIDTokenAlg applies id_token_signed_response_alg; empty means HS256
// on update and the caller's default (HMID_ID_TOKEN_ALG) on creation.
func applyIDTokenAlg(c *Client, in ClientInput, creating bool) error {
	if !in.IDTokenSignedResponseAlg.Set && !creating {
		return nil
	}
	alg := in.IDTokenSignedResponseAlg.Value
	if alg == "" {
		alg = AlgHS256
		if creating {
			alg = cmp.Or(c.IDTokenSignedResponseAlg, AlgHS256)
		}
	}
	if alg != AlgHS256 && alg != AlgRS256 && alg != AlgES256 {
		return apperr.OnField("id_token_signed_response_alg", apperr.Invalid("id_token_signed_response_alg must be HS256, RS256 or ES256"))
	}
	c.IDTokenSignedResponseAlg = alg
	return nil
}

// MaySetFirstParty reports whether p may register a first-party client or
// make a client first-party: super admins and system keys only (first-party
// clients skip the consent screen, so no one else may vouch for one).
func MaySetFirstParty(p *authn.Principal) bool { return p.IsAdmin() }

// CreateClient registers a client owned by the caller (spec 1, OAuth client
// management). Only super admins and system keys may create first-party
// clients (Forbidden otherwise). The answer carries the client secret once
// (confidential clients only).
func (s *Service) CreateClient(ctx context.Context, p *authn.Principal, in ClientInput, m Meta) (Client, error) {
	// Without an algorithm the client gets HMID_ID_TOKEN_ALG; set to RS256
	// or ES256 it gives public clients, which cannot verify HS256 (OpenID
	// Connect Core §10.1), tokens they can check against the JWKS.
	c := Client{IsActive: true, IDTokenSignedResponseAlg: cmp.Or(s.DefaultIDTokenAlg, AlgHS256)}
	if err := applyInput(&c, in, true); err != nil {
		return Client{}, err
	}
	if err := s.checkOutboundTargets(c); err != nil {
		return Client{}, err
	}
	if err := s.checkPermissionScopes(ctx, p, c, nil); err != nil {
		return Client{}, err
	}
	if in.IsFirstParty.Value {
		if !MaySetFirstParty(p) {
			return Client{}, apperr.OnField("is_first_party", apperr.Forbiddenf("only super admins and system keys can register first-party clients"))
		}
		c.IsFirstParty = true
	}
	c.ID = uuid.NewString()
	if p.UserID != "" {
		owner := p.UserID
		c.OwnerID = &owner
	}
	newSecret(&c)
	now := s.Clock.Now()
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.Store.InsertClient(ctx, tx, c, now); err != nil {
			return err
		}
		_, err := s.Audit.Record(ctx, tx, m.event(audit.Event{
			UserID: p.UserID, ActorID: actorKey(p), EventType: audit.ClientCreated, ResourceType: "oauth_client", ResourceID: c.ID,
			Description: "OAuth client " + c.Name + " registered",
			Metadata:    map[string]any{"name": c.Name, "client_type": c.ClientType, "is_first_party": c.IsFirstParty},
		}))
		return err
	})
	if err != nil {
		return Client{}, err
	}
	s.clientsChanged()
	secret := c.ClientSecret
	c, err = s.loadClient(ctx, s.DB, c.ID)
	c.ClientSecret = secret
	return c, err
}

// newSecret gives a confidential client that authenticates with a secret
// its first one, shown once in the answer; hmid keeps only the hash.
func newSecret(c *Client) {
	if c.ClientType == Confidential && c.TokenEndpointAuthMethod != AuthPrivateKeyJWT {
		c.ClientSecret = token.New(token.PrefixClientSecret)
		c.SecretHash = token.Hash(c.ClientSecret)
	}
}

// actorKey names an ownerless credential (a system key, a client
// credentials token) as the actor of an audit event.
func actorKey(p *authn.Principal) string {
	if p.UserID == "" {
		return p.Actor()
	}
	return ""
}

// auditClient records e, a change p made to c, in tx: on c's owner, with p
// as the actor when p is someone else.
func (s *Service) auditClient(ctx context.Context, tx *db.Tx, p *authn.Principal, c Client, m Meta, e audit.Event) error {
	owner := auditUser(c)
	e.UserID, e.ActorID, e.ResourceType, e.ResourceID = owner, actorIfOther(p, owner), "oauth_client", c.ID
	_, err := s.Audit.Record(ctx, tx, m.event(e))
	return err
}

func auditUser(c Client) string {
	if c.OwnerID != nil {
		return *c.OwnerID
	}
	return ""
}

func actorIfOther(p *authn.Principal, owner string) string {
	if p.UserID != owner {
		return p.Actor()
	}
	return ""
}

// GetClient returns a client the caller owns or may read (NotFound otherwise).
func (s *Service) GetClient(ctx context.Context, p *authn.Principal, id string) (Client, error) {
	return s.visibleClient(ctx, p, id)
}

// ListClients returns a page of clients: the caller's own (all false), or
// every client (all true; the route requires oauth_clients:read).
func (s *Service) ListClients(ctx context.Context, p *authn.Principal, all bool, pg httpx.Page) ([]Client, int, error) {
	out, total, err := s.Store.Clients(ctx, store.ClientFilter{All: all, OwnerID: p.UserID}, pg.Limit, pg.Offset())
	for i := range out {
		out[i].TokenEndpointAuthMethod = effectiveAuthMethod(out[i].TokenEndpointAuthMethod, out[i].ClientType)
	}
	return out, total, err
}

// UpdateClient changes the set fields of a client (owner or
// oauth_clients:update). First-party clients cannot be modified (Forbidden);
// making a client first-party needs a super admin or a system key.
// Deactivating a client revokes its tokens.
func (s *Service) UpdateClient(ctx context.Context, p *authn.Principal, id string, in ClientInput, m Meta) (Client, error) {
	if !in.anySet() {
		return Client{}, apperr.Invalid("give at least one field to change")
	}
	c, err := s.manageableClient(ctx, p, id, "oauth_clients:update")
	if err != nil {
		return c, err
	}
	if c.IsFirstParty {
		return Client{}, apperr.Forbiddenf("first-party clients cannot be modified")
	}
	if in.IsFirstParty.Set && in.IsFirstParty.Value && !MaySetFirstParty(p) {
		return Client{}, apperr.OnField("is_first_party", apperr.Forbiddenf("only super admins and system keys can make a client first-party"))
	}
	before, scopesBefore := c.TokenEndpointAuthMethod, c.AllowedScopes
	if err := applyInput(&c, in, false); err != nil {
		return Client{}, err
	}
	if err := s.checkChangedTargets(c, in); err != nil {
		return Client{}, err
	}
	if err := s.checkPermissionScopes(ctx, p, c, scopesBefore); err != nil {
		return Client{}, err
	}
	if in.IsFirstParty.Set {
		c.IsFirstParty = in.IsFirstParty.Value
	}
	secret := switchSecret(&c, before)
	if err := s.saveClient(ctx, p, c, m); err != nil {
		return Client{}, err
	}
	s.clientsChanged()
	s.forgetClientKeys(c.ID)
	c, err = s.loadClient(ctx, s.DB, c.ID)
	c.ClientSecret = secret
	return c, err
}

// switchSecret follows a change of authentication method: a client that
// moves to private_key_jwt loses its secret (it no longer authenticates
// with one), and one that moves from private_key_jwt to a secret method
// gets a new secret, returned once in the answer of the update.
func switchSecret(c *Client, before string) string {
	switch {
	case before == c.TokenEndpointAuthMethod:
		return ""
	case c.TokenEndpointAuthMethod == AuthPrivateKeyJWT:
		c.SecretHash = ""
	case before == AuthPrivateKeyJWT && c.ClientType == Confidential:
		secret := token.New(token.PrefixClientSecret)
		c.SecretHash = token.Hash(secret)
		return secret
	}
	return ""
}

// checkChangedTargets checks the outbound URLs an update sets (a stored URI
// stays usable whatever the allow list is now).
func (s *Service) checkChangedTargets(c Client, in ClientInput) error {
	if in.BackchannelLogoutURI.Set {
		if err := s.checkBackchannelTarget(c); err != nil {
			return err
		}
	}
	if in.JWKSURI.Set {
		return s.checkJWKSTarget(c)
	}
	return nil
}

// anySet reports whether the input sets any field.
func (in ClientInput) anySet() bool {
	return slices.Contains([]bool{in.Name.Set, in.Description.Set, in.LogoURL.Set, in.HomepageURL.Set, in.PrivacyPolicyURL.Set,
		in.TermsOfServiceURL.Set, in.RedirectURIs.Set, in.AllowedScopes.Set, in.ClientType.Set,
		in.IsFirstParty.Set, in.IsActive.Set, in.IDTokenSignedResponseAlg.Set,
		in.PostLogoutRedirectURIs.Set, in.BackchannelLogoutURI.Set, in.BackchannelLogoutSessionRequired.Set,
		in.TokenEndpointAuthMethod.Set, in.JWKS.Set, in.JWKSURI.Set, in.resourceFieldsSet(), in.GrantTypes.Set, lifetimesSet(in)}, true)
}

// saveClient writes an updated client and audits it; deactivating a client
// revokes its tokens in the same transaction.
func (s *Service) saveClient(ctx context.Context, p *authn.Principal, c Client, m Meta) error {
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.Store.UpdateClient(ctx, tx, c, now); err != nil {
			return err
		}
		if !c.IsActive {
			if err := s.Store.RevokeClientTokens(ctx, tx, c.ID, now); err != nil {
				return err
			}
		}
		return s.auditClient(ctx, tx, p, c, m, audit.Event{EventType: audit.ClientUpdated, Description: "OAuth client " + c.Name + " updated"})
	})
}

// MayRegenerateSecret reports whether p, who may manage c, may also replace
// its secret: for a first-party client only super admins and system keys
// may, as its secret is the credential of an app that skips consent, and
// first-party clients cannot otherwise be modified. The API, GraphQL and the
// console all go through RegenerateSecret, which applies this rule; pages
// use it to hide what would be refused.
func MayRegenerateSecret(p *authn.Principal, c Client) bool {
	return !c.IsFirstParty || MaySetFirstParty(p)
}

// RegenerateSecret gives a confidential client a new secret, returned once;
// the old one stops working at once. Public clients have no secret (Invalid);
// a first-party client's secret is for super admins and system keys only
// (Forbidden, MayRegenerateSecret).
func (s *Service) RegenerateSecret(ctx context.Context, p *authn.Principal, id string, m Meta) (string, error) {
	c, err := s.manageableClient(ctx, p, id, "oauth_clients:update")
	if err != nil {
		return "", err
	}
	if !MayRegenerateSecret(p, c) {
		return "", apperr.Forbiddenf("only super admins and system keys can regenerate the secret of a first-party client")
	}
	if c.ClientType != Confidential {
		return "", apperr.Bad("public clients have no secret")
	}
	if c.TokenEndpointAuthMethod == AuthPrivateKeyJWT {
		return "", apperr.Bad("private_key_jwt clients authenticate with their keys and have no secret")
	}
	secret := token.New(token.PrefixClientSecret)
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.Store.SetClientSecret(ctx, tx, c.ID, token.Hash(secret), s.Clock.Now()); err != nil {
			return err
		}
		return s.auditClient(ctx, tx, p, c, m, audit.Event{EventType: audit.ClientSecretRegenerated,
			Description: "secret of OAuth client " + c.Name + " regenerated"})
	})
	return secret, err
}

// DeleteClient deletes a client (owner or oauth_clients:delete) with its
// consents, codes and tokens. First-party clients cannot be deleted (Forbidden).
func (s *Service) DeleteClient(ctx context.Context, p *authn.Principal, id string, m Meta) error {
	c, err := s.manageableClient(ctx, p, id, "oauth_clients:delete")
	if err != nil {
		return err
	}
	if c.IsFirstParty {
		return apperr.Forbiddenf("first-party clients cannot be deleted")
	}
	defer s.clientsChanged()
	defer s.forgetClientKeys(c.ID)
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := s.Store.DeleteClient(ctx, tx, c.ID); err != nil {
			return err
		}
		return s.auditClient(ctx, tx, p, c, m, audit.Event{EventType: audit.ClientDeleted,
			Description: "OAuth client " + c.Name + " deleted", Metadata: map[string]any{"name": c.Name}})
	})
}
