package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"hmid/internal/db"
)

// Client is an OAuth client as shown by the API. ClientSecret is set only in
// the answers of creation and regeneration.
type Client struct {
	ID                       string    `json:"id"`
	Name                     string    `json:"name"`
	Description              string    `json:"description"`
	LogoURL                  *string   `json:"logo_url"`
	HomepageURL              *string   `json:"homepage_url"`
	PrivacyPolicyURL         *string   `json:"privacy_policy_url"`
	TermsOfServiceURL        *string   `json:"terms_of_service_url"`
	RedirectURIs             []string  `json:"redirect_uris"`
	AllowedScopes            []string  `json:"allowed_scopes"`
	ClientType               string    `json:"client_type"`
	IsFirstParty             bool      `json:"is_first_party"`
	IsActive                 bool      `json:"is_active"`
	IDTokenSignedResponseAlg string    `json:"id_token_signed_response_alg"`
	OwnerID                  *string   `json:"owner_id"`
	ClientSecret             string    `json:"client_secret,omitempty"`
	CreatedAt                time.Time `json:"created_at"`
	UpdatedAt                time.Time `json:"updated_at"`

	// SecretHash is the SHA-256 hash of the client secret ("" for none);
	// the secret itself is never stored.
	SecretHash string `json:"-"`

	// PostLogoutRedirectURIs are where RP-Initiated Logout may send the
	// browser back to (exact match, RP-Initiated Logout 1.0 §3.1).
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	// BackchannelLogoutURI receives logout tokens when a session the client
	// got tokens from ends (Back-Channel Logout 1.0 §2.2); nil for none.
	BackchannelLogoutURI *string `json:"backchannel_logout_uri"`
	// BackchannelLogoutSessionRequired: the client needs sid in logout
	// tokens (hmid always sends it; kept as registered, §2.2).
	BackchannelLogoutSessionRequired bool `json:"backchannel_logout_session_required"`

	// TokenEndpointAuthMethod is how the client authenticates (RFC 7591 §2):
	// none (public), client_secret_basic or client_secret_post (either is
	// accepted), or private_key_jwt with the keys of JWKS or JWKSURI.
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method"`
	JWKS                    json.RawMessage `json:"jwks"`
	JWKSURI                 *string         `json:"jwks_uri"`

	// Resources are the absolute URIs the client may ask access tokens for
	// (RFC 8707; empty: any); AccessTokenFormat is opaque or jwt (RFC 9068).
	Resources         []string `json:"resources"`
	AccessTokenFormat string   `json:"access_token_format"`
	// GrantTypes are the grants the client may use (RFC 7591 §2).
	GrantTypes []string `json:"grant_types"`

	// DynamicRegistration says how a dynamically registered client came in
	// (RFC 7591; "token" or "open"), nil for one registered through the API.
	DynamicRegistration *string `json:"dynamic_registration"`
	// LastUsedAt is when a token was last issued to a dynamically registered
	// client, as of the hourly purge (nil: never, or not tracked).
	LastUsedAt *time.Time `json:"last_used_at"`

	// RegistrationHash is the hash of the registration access token (RFC
	// 7592 §1) of a dynamically registered client, InitialTokenID the
	// initial access token that registered it (RFC 7591 §3); "" for none.
	RegistrationHash string `json:"-"`
	InitialTokenID   string `json:"-"`

	// AccessTokenLifetimeSeconds and RefreshTokenLifetimeSeconds override
	// the server-wide token lifetimes for this client; nil is the server's.
	AccessTokenLifetimeSeconds  *int64 `json:"access_token_lifetime_seconds"`
	RefreshTokenLifetimeSeconds *int64 `json:"refresh_token_lifetime_seconds"`
}

// Clone returns c with its slices and pointed-to values copied, so a cached
// row and the copies handed out share nothing a caller could change.
func (c Client) Clone() Client {
	c.LogoURL, c.HomepageURL, c.PrivacyPolicyURL, c.TermsOfServiceURL = db.ClonePtr(c.LogoURL), db.ClonePtr(c.HomepageURL), db.ClonePtr(c.PrivacyPolicyURL), db.ClonePtr(c.TermsOfServiceURL)
	c.OwnerID, c.BackchannelLogoutURI, c.JWKSURI, c.DynamicRegistration = db.ClonePtr(c.OwnerID), db.ClonePtr(c.BackchannelLogoutURI), db.ClonePtr(c.JWKSURI), db.ClonePtr(c.DynamicRegistration)
	c.LastUsedAt, c.AccessTokenLifetimeSeconds, c.RefreshTokenLifetimeSeconds = db.ClonePtr(c.LastUsedAt), db.ClonePtr(c.AccessTokenLifetimeSeconds), db.ClonePtr(c.RefreshTokenLifetimeSeconds)
	c.RedirectURIs, c.AllowedScopes, c.PostLogoutRedirectURIs = slices.Clone(c.RedirectURIs), slices.Clone(c.AllowedScopes), slices.Clone(c.PostLogoutRedirectURIs)
	c.Resources, c.GrantTypes, c.JWKS = slices.Clone(c.Resources), slices.Clone(c.GrantTypes), slices.Clone(c.JWKS)
	return c
}

// AllowsGrant reports whether the client is registered for grant.
func (c Client) AllowsGrant(grant string) bool { return slices.Contains(c.GrantTypes, grant) }

// Registration is how a dynamically registered client came in ("token" or
// "open"), "" for one registered through the API or a console.
func (c Client) Registration() string {
	if c.DynamicRegistration == nil {
		return ""
	}
	return *c.DynamicRegistration
}

const clientCols = `id, owner_id, name, description, logo_url, homepage_url, privacy_policy_url, terms_of_service_url,
	redirect_uris, allowed_scopes, client_type, is_first_party, is_active, id_token_alg, secret_hash, created_at, updated_at,
	post_logout_redirect_uris, backchannel_logout_uri, backchannel_logout_session_required,
	token_endpoint_auth_method, jwks, jwks_uri, resources, access_token_format, grant_types,
	registration_kind, registration_token_hash, last_used_at, initial_token_id,
	access_token_lifetime_seconds, refresh_token_lifetime_seconds`

// scanClient reads clientCols. token_endpoint_auth_method is as stored: ""
// for a client registered before the column existed.
func scanClient(row db.Scanner) (Client, error) {
	var c Client
	var owner, logo, home, privacy, tos, secret, bcl, jwks, jwksURI, regKind, regHash, iat sql.NullString
	var lastUsed, accessTTL, refreshTTL sql.NullInt64
	var redirects, scopes, postLogout, resources, grants db.Strings
	var created, updated int64
	err := row.Scan(&c.ID, &owner, &c.Name, &c.Description, &logo, &home, &privacy, &tos, &redirects, &scopes,
		&c.ClientType, &c.IsFirstParty, &c.IsActive, &c.IDTokenSignedResponseAlg, &secret, &created, &updated,
		&postLogout, &bcl, &c.BackchannelLogoutSessionRequired,
		&c.TokenEndpointAuthMethod, &jwks, &jwksURI, &resources, &c.AccessTokenFormat, &grants,
		&regKind, &regHash, &lastUsed, &iat, &accessTTL, &refreshTTL)
	c.AccessTokenLifetimeSeconds, c.RefreshTokenLifetimeSeconds = lifetimePtr(accessTTL), lifetimePtr(refreshTTL)
	c.DynamicRegistration, c.RegistrationHash, c.InitialTokenID = db.StringPtr(regKind), regHash.String, iat.String
	if lastUsed.Valid {
		t := db.FromTS(lastUsed.Int64)
		c.LastUsedAt = &t
	}
	c.GrantTypes = grants
	c.Resources = resources
	if c.Resources == nil {
		c.Resources = []string{}
	}
	if jwks.Valid {
		c.JWKS = json.RawMessage(jwks.String)
	}
	c.JWKSURI = db.StringPtr(jwksURI)
	c.PostLogoutRedirectURIs, c.BackchannelLogoutURI = postLogout, db.StringPtr(bcl)
	if c.PostLogoutRedirectURIs == nil {
		c.PostLogoutRedirectURIs = []string{}
	}
	c.OwnerID, c.LogoURL, c.HomepageURL, c.PrivacyPolicyURL, c.TermsOfServiceURL = db.StringPtr(owner), db.StringPtr(logo), db.StringPtr(home), db.StringPtr(privacy), db.StringPtr(tos)
	c.RedirectURIs, c.AllowedScopes = redirects, scopes
	c.SecretHash = secret.String
	c.CreatedAt, c.UpdatedAt = db.FromTS(created), db.FromTS(updated)
	return c, err
}

// lifetimePtr is a scanned lifetime column.
func lifetimePtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

// nullLifetime is a lifetime for the database: NULL for none.
func nullLifetime(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// nullJSON stores raw JSON as text, NULL when absent.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Client reads the client id through q: ErrNotFound when there is none.
func (s *Store) Client(ctx context.Context, q db.Querier, id string) (Client, error) {
	return scanClient(q.QueryRowContext(ctx, `SELECT `+clientCols+` FROM oauth_clients WHERE id = $1`, id))
}

// ClientFilter chooses the clients Clients lists: every client (All), or
// the clients of OwnerID (none when it is "").
type ClientFilter struct {
	All     bool
	OwnerID string
}

// Clients returns a page of the clients f chooses, newest first, and how
// many there are in all.
func (s *Store) Clients(ctx context.Context, f ClientFilter, limit, offset int) ([]Client, int, error) {
	where, args := "owner_id = $1", []any{f.OwnerID}
	if f.All {
		where, args = "TRUE", nil
	} else if f.OwnerID == "" {
		where, args = "FALSE", nil
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_clients WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	out, err := db.All(ctx, s.db, scanClient, `SELECT `+clientCols+` FROM oauth_clients WHERE `+where+
		` ORDER BY created_at DESC, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// InsertClient stores a new client through q, with its registration
// columns when it was registered dynamically. An id taken already is a
// unique violation (db.IsUniqueViolation).
func (s *Store) InsertClient(ctx context.Context, q db.Querier, c Client, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO oauth_clients (id, owner_id, name, description, logo_url, homepage_url, privacy_policy_url, terms_of_service_url,
		redirect_uris, allowed_scopes, client_type, is_first_party, is_active, id_token_alg, secret_hash, created_at, updated_at,
		post_logout_redirect_uris, backchannel_logout_uri, backchannel_logout_session_required,
		token_endpoint_auth_method, jwks, jwks_uri, resources, access_token_format, grant_types,
		registration_kind, registration_token_hash, initial_token_id, access_token_lifetime_seconds, refresh_token_lifetime_seconds)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)`,
		c.ID, nullPtr(c.OwnerID), c.Name, c.Description, nullPtr(c.LogoURL), nullPtr(c.HomepageURL), nullPtr(c.PrivacyPolicyURL), nullPtr(c.TermsOfServiceURL),
		db.JSON(c.RedirectURIs), db.JSON(c.AllowedScopes), c.ClientType, c.IsFirstParty, c.IsActive, c.IDTokenSignedResponseAlg, nullStr(c.SecretHash), db.TS(now),
		db.JSON(c.PostLogoutRedirectURIs), nullPtr(c.BackchannelLogoutURI), c.BackchannelLogoutSessionRequired,
		c.TokenEndpointAuthMethod, nullJSON(c.JWKS), nullPtr(c.JWKSURI), db.JSON(c.Resources), c.AccessTokenFormat, db.JSON(c.GrantTypes),
		nullPtr(c.DynamicRegistration), nullStr(c.RegistrationHash), nullStr(c.InitialTokenID),
		nullLifetime(c.AccessTokenLifetimeSeconds), nullLifetime(c.RefreshTokenLifetimeSeconds))
	return err
}

// UpdateClient writes every field a client's owner or an operator may
// change, its secret hash among them, through q; its type, owner and
// registration stay as they are.
func (s *Store) UpdateClient(ctx context.Context, q db.Querier, c Client, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE oauth_clients SET name = $1, description = $2, logo_url = $3, homepage_url = $4,
			privacy_policy_url = $5, terms_of_service_url = $6, redirect_uris = $7, allowed_scopes = $8, is_first_party = $9,
			is_active = $10, id_token_alg = $11, updated_at = $12,
			post_logout_redirect_uris = $14, backchannel_logout_uri = $15, backchannel_logout_session_required = $16,
			token_endpoint_auth_method = $17, jwks = $18, jwks_uri = $19, secret_hash = $20,
			resources = $21, access_token_format = $22, grant_types = $23,
			access_token_lifetime_seconds = $24, refresh_token_lifetime_seconds = $25 WHERE id = $13`,
		c.Name, c.Description, nullPtr(c.LogoURL), nullPtr(c.HomepageURL), nullPtr(c.PrivacyPolicyURL), nullPtr(c.TermsOfServiceURL),
		db.JSON(c.RedirectURIs), db.JSON(c.AllowedScopes), c.IsFirstParty, c.IsActive, c.IDTokenSignedResponseAlg, db.TS(now), c.ID,
		db.JSON(c.PostLogoutRedirectURIs), nullPtr(c.BackchannelLogoutURI), c.BackchannelLogoutSessionRequired,
		c.TokenEndpointAuthMethod, nullJSON(c.JWKS), nullPtr(c.JWKSURI), nullStr(c.SecretHash),
		db.JSON(c.Resources), c.AccessTokenFormat, db.JSON(c.GrantTypes),
		nullLifetime(c.AccessTokenLifetimeSeconds), nullLifetime(c.RefreshTokenLifetimeSeconds))
	return err
}

// SetClientSecret replaces the secret hash of client id through q; the old
// secret stops working with the commit.
func (s *Store) SetClientSecret(ctx context.Context, q db.Querier, id, secretHash string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE oauth_clients SET secret_hash = $1, updated_at = $2 WHERE id = $3`, secretHash, db.TS(now), id)
	return err
}

// DeleteClient deletes client id through q. Its consents, codes and tokens
// go with it (ON DELETE CASCADE): a token of an unknown client never
// resolves again.
func (s *Store) DeleteClient(ctx context.Context, q db.Querier, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM oauth_clients WHERE id = $1`, id)
	return err
}

// RevokeClientTokens revokes, through q, every token a client holds, as
// its deactivation does.
func (s *Store) RevokeClientTokens(ctx context.Context, q db.Querier, clientID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL`, db.TS(now), clientID)
	return err
}

// ActiveRedirectURIs returns the redirect URIs of every active client, a
// list per client (the web origins of CORS come from them).
func (s *Store) ActiveRedirectURIs(ctx context.Context) ([][]string, error) {
	return db.All(ctx, s.db, func(row db.Scanner) ([]string, error) {
		var uris db.Strings
		err := row.Scan(&uris)
		return uris, err
	}, `SELECT redirect_uris FROM oauth_clients WHERE is_active = TRUE`)
}
