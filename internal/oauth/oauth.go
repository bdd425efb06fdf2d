// Package oauth is hmid's OAuth 2.0 authorization server and OpenID Connect
// provider (spec 1): client registration and management, the authorization
// endpoint with consent, the token endpoint (token.go: the phases every grant
// shares, and a file per grant: authorization code with PKCE, rotating
// refresh tokens, client credentials, the device grant), ID tokens, UserInfo,
// revocation (RFC 7009), introspection (RFC 7662), logout and discovery.
//
// Its parts with seams of their own are subpackages: store owns the OAuth
// tables (every oauth_* statement), signing the asymmetric signing keys,
// claims what ID tokens and UserInfo say of a user, redirecturi the rules of
// redirect URIs, cors the browser apps' access across origins. None of them
// imports this package.
//
// The security rules follow RFC 9700 (OAuth 2.0 Security Best Current
// Practice): redirect URIs match exactly, PKCE is mandatory for public
// clients and cannot be downgraded, codes are single use and their replay
// revokes what they issued, refresh tokens rotate and their replay revokes the
// whole family, every secret is stored only as a SHA-256 hash and compared in
// constant time, and state changes use conditional UPDATEs so racing requests
// cannot both win.
package oauth

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/oauth/cors"
	"hmid/internal/oauth/signing"
	"hmid/internal/oauth/store"
	"hmid/internal/outbound"
	"hmid/internal/policy"
	"hmid/internal/secretbox"
)

// Lifetimes of spec 1 (Token artifacts, Limits). AccessTokenTTL and
// RefreshTokenTTL are the defaults of the policies that set them
// (lifetimes.go).
const (
	CodeTTL         = 10 * time.Minute
	PendingTTL      = 15 * time.Minute
	AccessTokenTTL  = time.Hour
	RefreshTokenTTL = 30 * 24 * time.Hour
	IDTokenTTL      = signing.IDTokenTTL
)

// SessionCookie is the cookie holding a user session token, read by the
// authorization endpoint (DECISIONS: OAuth and OIDC).
const SessionCookie = "hmid_session"

// Service is the OAuth provider with its dependencies; DB, Store, Keys,
// Origins, Clock, Box and Audit are required.
type Service struct {
	DB       *db.DB
	Store    *store.Store  // the OAuth tables of DB
	Keys     *signing.Keys // the signing keys of ID tokens, JWT access tokens and logout tokens
	Clock    clock.Clock
	Box      *secretbox.Box
	Audit    *audit.Writer
	Resolver *authn.Resolver // resolves the user's session at the authorization endpoint
	Issuer   string          // HMID_PUBLIC_URL, without trailing slash
	LoginURL string          // where a user who is not logged in is sent; "" = Issuer + "/login"

	PurgePause time.Duration // pause between Purge's batches (store.DefaultPurgePause in the server); 0 = none

	// DefaultIDTokenAlg is the algorithm of clients registered without
	// id_token_signed_response_alg (HMID_ID_TOKEN_ALG); "" is HS256.
	DefaultIDTokenAlg string

	// RefreshReuseInterval (HMID_REFRESH_REUSE_INTERVAL) is how long after its
	// rotation a refresh token presented again by its own client gets a new
	// pair instead of revoking its family; 0 = strict reuse detection.
	RefreshReuseInterval time.Duration

	// Outbound decides which hosts a client's backchannel_logout_uri may
	// name at registration (HMID_OUTBOUND_ALLOW_CIDRS); the zero value
	// refuses literal internal addresses. Delivery checks again at dial time.
	Outbound outbound.Policy
	// OutboundHTTP sends requests to URLs clients registered (their
	// jwks_uri), under Outbound; nil builds a client from Outbound.
	OutboundHTTP *http.Client

	// Registration is the mode of dynamic client registration
	// (HMID_DYNAMIC_REGISTRATION: off, token or open; "" is off), and
	// RegistrationExpiry how long an open registration lives without a
	// token issued to it (HMID_DYNAMIC_REGISTRATION_EXPIRY; 0: the default).
	Registration       string
	RegistrationExpiry time.Duration

	// Cache is shared by the instances (Redis, or in-process alone): it
	// remembers the jti of client assertions until they expire.
	Cache cache.Cache

	// Policy gives the token lifetimes in force (nil: the defaults).
	Policy *policy.Store

	// Origins are the web origins of the clients, for CORS; a client change
	// here marks them stale (clientsChanged).
	Origins *cors.Origins

	jwks    jwksCache           // key sets fetched from clients' jwks_uri (clientkeys.go)
	clients db.RowCache[Client] // client rows read outside transactions on SQLite (loadClient)

	// Limiter throttles guesses of device user codes across instances
	// (deviceverify.go); nil leaves them unthrottled.
	Limiter cache.Limiter

	grantsOnce sync.Once
	grants     map[string]grantType // the token endpoint's grants by grant_type (token.go)
}

var (
	_ authn.OAuthTokens = (*Service)(nil)
	_ authflow.Consents = (*Service)(nil)
	_ error             = (*Error)(nil)
)

// Meta is who performed an operation, for the audit log.
type Meta struct {
	IP        string
	UserAgent string
	// Source is the audit event's source_service ("" for the default, "api").
	Source string
}

// MetaFrom returns the audit metadata of a request.
func MetaFrom(r *http.Request) Meta {
	e := audit.FromRequest(r, audit.Event{})
	return Meta{IP: e.IPAddress, UserAgent: e.UserAgent}
}

func (m Meta) event(e audit.Event) audit.Event {
	e.IPAddress, e.UserAgent, e.SourceService = m.IP, m.UserAgent, m.Source
	return e
}

// The scopes of spec 1 (Scopes), in the order discovery lists them.
var scopeCatalogue = []authflow.Scope{
	{Name: "openid", Description: "Sign you in and know your user id"},
	{Name: "profile", Description: "Your name, avatar, locale and login provider"},
	{Name: "email", Description: "Your email address and whether it is verified"},
	{Name: "roles", Description: "Your assigned roles"},
	{Name: "permissions", Description: "Your permissions"},
	{Name: "offline_access", Description: "Stay connected while you are away (refresh tokens)"},
}

// Scopes returns the scopes the provider knows, with their descriptions.
func Scopes() []authflow.Scope { return slices.Clone(scopeCatalogue) }

// ScopeNames returns the names of the known scopes.
func ScopeNames() []string {
	out := make([]string, len(scopeCatalogue))
	for i, s := range scopeCatalogue {
		out[i] = s.Name
	}
	return out
}

func knownScope(name string) (authflow.Scope, bool) {
	for _, s := range scopeCatalogue {
		if s.Name == name {
			return s, true
		}
	}
	return authflow.Scope{}, false
}

// parseScope splits a space-delimited scope parameter (RFC 6749 §3.3) into a
// sorted set without duplicates.
func parseScope(s string) []string {
	var out []string
	for _, f := range strings.Split(s, " ") {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// clientsChanged marks the set of CORS origins stale after a client was
// created, changed or deleted, so the next cross-origin request reads it
// again.
func (s *Service) clientsChanged() { s.Origins.Changed() }

// securityHeaders marks a response of the OAuth endpoints as never cached
// (RFC 6749 §5.1) and keeps codes and tokens out of Referer headers (RFC 9700 §4.2.4).
func securityHeaders(w http.ResponseWriter) {
	// Set straight into the map with canonical keys: this runs on every
	// token and UserInfo answer. Each slice has len == cap, so a later Add
	// copies instead of writing into the shared array.
	h := w.Header()
	h["Cache-Control"] = noStore
	h["Pragma"] = noCache
	h["Referrer-Policy"] = noReferrer
}

var (
	noStore    = []string{"no-store"}
	noCache    = []string{"no-cache"}
	noReferrer = []string{"no-referrer"}
)
