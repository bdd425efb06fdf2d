// Package authn turns a bearer token into a Principal and guards routes with
// the permission rules of spec 1 (Authentication 1–8).
//
// Tokens are user session tokens (hm_st_), API keys (hm_ followed by base62)
// and, where a route allows it, OAuth access tokens (hm_at_, resolved by the
// oauth area through the OAuthTokens interface). Resolved principals are
// cached per token hash in process and revalidated against the authentication
// epoch: every change that can take a permission away (role edits, revoked
// keys or sessions, bans, deletions) bumps the epoch, and the next request on
// every instance sees a fresh principal.
package authn

import (
	"context"
	"slices"
	"strings"
	"time"

	"hmid/internal/telemetry"
)

// Kind is the kind of credential a principal authenticated with.
type Kind string

// Credential kinds.
const (
	KindSession Kind = "session"
	KindAPIKey  Kind = "api_key"
	KindOAuth   Kind = "oauth"
	// KindClient is an access token of the client credentials grant (RFC
	// 6749 §4.4): a service principal acting for no user, holding exactly
	// the permission strings the token was granted, like a scoped API key.
	KindClient Kind = "oauth_client"
)

// Principal is the authenticated caller.
type Principal struct {
	Kind       Kind
	UserID     string // the user acting: session or OAuth user, or the owner of an API key ("" for an ownerless system key)
	SessionID  string
	APIKeyID   string
	SystemKey  bool // a system API key: holds *:* (spec 1, Authentication 5)
	SuperAdmin bool // a super admin user: holds every permission (Authentication 8)
	Provider   string
	AuthTime   time.Time
	AMR        []string  // sessions only: how the user authenticated (OIDC amr, RFC 8176)
	ExpiresAt  time.Time // zero for keys without expiry

	// OAuth access tokens only.
	OAuthClientID string
	OAuthScopes   []string
	OAuthTokenID  string
	// OAuthAudience are the resources the token was issued for (RFC 8707);
	// nil when it names none (its client is the audience). hmid's own API
	// refuses a token whose audience leaves it out (Guard.APIResource).
	OAuthAudience []string

	perms   PermSet // the credential's own permissions
	ceiling PermSet // for user API keys: the owner's permissions, which the key cannot exceed
}

// PermSet is a set of resource:action strings with wildcard matching.
type PermSet map[string]struct{}

// NewPermSet builds a set from permission strings.
func NewPermSet(perms ...string) PermSet {
	s := make(PermSet, len(perms))
	for _, p := range perms {
		s[p] = struct{}{}
	}
	return s
}

// Can reports whether the set grants perm: exactly, by resource:* or by *:*.
func (s PermSet) Can(perm string) bool {
	if _, ok := s["*:*"]; ok {
		return true
	}
	if _, ok := s[perm]; ok {
		return true
	}
	if res, _, ok := strings.Cut(perm, ":"); ok {
		if _, ok := s[res+":*"]; ok {
			return true
		}
	}
	return false
}

// List returns the set's strings, sorted.
func (s PermSet) List() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Can reports whether the principal holds perm. Super admins and system keys
// hold everything; a user's API key holds its scopes and roles but never more
// than its owner currently holds (no escalation after the owner loses a role).
func (p *Principal) Can(perm string) bool {
	if p == nil {
		return false
	}
	if p.SuperAdmin || p.SystemKey {
		return true
	}
	if !p.perms.Can(perm) {
		return false
	}
	return p.ceiling == nil || p.ceiling.Can(perm)
}

// IsAdmin reports whether the principal is a super admin or a system key,
// the callers exempt from the scope-escalation rule (Authentication 7).
func (p *Principal) IsAdmin() bool { return p != nil && (p.SuperAdmin || p.SystemKey) }

// Actor is the id the audit log names as the actor of what p does: the
// acting user, else the API key, else the OAuth client of a client
// credentials token.
func (p *Principal) Actor() string {
	switch {
	case p == nil:
		return ""
	case p.UserID != "":
		return p.UserID
	case p.APIKeyID != "":
		return p.APIKeyID
	}
	return p.OAuthClientID
}

// IsSelf reports whether the principal acts for the user with id userID.
func (p *Principal) IsSelf(userID string) bool {
	return p != nil && p.UserID != "" && p.UserID == userID
}

// HasOAuthScope reports whether an OAuth principal was granted scope.
func (p *Principal) HasOAuthScope(scope string) bool {
	return p != nil && slices.Contains(p.OAuthScopes, scope)
}

// Permissions lists the permission strings the principal effectively holds:
// "*:*" for super admins and system keys.
func (p *Principal) Permissions() []string {
	if p.SuperAdmin || p.SystemKey {
		return []string{"*:*"}
	}
	if p.ceiling == nil {
		return p.perms.List()
	}
	var out []string
	for _, perm := range p.perms.List() {
		if p.ceiling.Can(perm) {
			out = append(out, perm)
		}
	}
	return out
}

// NewPrincipal builds a principal with its permission set, for resolvers
// outside this package (the OAuth area) and tests.
func NewPrincipal(p Principal, perms PermSet) *Principal {
	p.perms = perms
	return &p
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p, and names p's kind on the
// request's span when tracing is on.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	if p != nil {
		telemetry.SetPrincipalKind(ctx, string(p.Kind))
	}
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal of the request, or nil on public routes.
func From(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}
