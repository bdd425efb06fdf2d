package authn

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
)

// Rule is the access rule of one route, as listed in internal/app/routes.go.
type Rule struct {
	public      bool
	optional    bool     // public, but a valid bearer is resolved when sent
	perm        string   // required permission ("" = authenticated is enough)
	anyPerm     []string // one of these permissions is required (AnyPerm)
	selfParam   string   // URL parameter holding a user id: that user may act without perm
	systemOnly  bool     // only a system API key
	sessionOnly bool     // only a user session token
	superAdmin  bool     // only a super admin (or a system key)
	oauth       bool     // OAuth access tokens are accepted
	oauthScope  string   // …and must carry this scope ("" = any)
	browser     bool     // a page: the session comes from the cookie, failures are pages
}

// SessionCookie is the cookie holding a browser's session token (set by the
// login pages; the OAuth authorize endpoint reads it too).
const SessionCookie = "hmid_session"

// Public routes need no authentication (spec 1, Authentication 2).
func Public() Rule { return Rule{public: true} }

// Optional routes are public but see the caller when a valid token is sent.
func Optional() Rule { return Rule{public: true, optional: true} }

// Authenticated routes need any valid session token or API key.
func Authenticated() Rule { return Rule{} }

// Perm routes need the permission (or *:*, a system key, a super admin).
func Perm(p string) Rule { return Rule{perm: p} }

// AnyPerm routes need at least one of the permissions: an entry page
// (the admin console's overview) open to whoever may use any part of it.
func AnyPerm(perms ...string) Rule { return Rule{anyPerm: perms} }

// PermOrSelf routes need the permission, or the caller acting on the user
// whose id is in URL parameter param ("users:read (or self)").
func PermOrSelf(p, param string) Rule { return Rule{perm: p, selfParam: param} }

// SystemKey routes are for system API keys only (service-to-service calls).
func SystemKey() Rule { return Rule{systemOnly: true} }

// SuperAdmin routes need a super admin (or a system key): what holds
// secrets of every user, as the mail outbox does.
func SuperAdmin() Rule { return Rule{superAdmin: true} }

// Session routes need a user session token (not an API key).
func Session() Rule { return Rule{sessionOnly: true} }

// WithOAuth also accepts OAuth access tokens carrying scope ("" for any scope);
// such tokens only ever act for their own user.
func (r Rule) WithOAuth(scope string) Rule {
	r.oauth = true
	r.oauthScope = scope
	return r
}

// InBrowser makes r the rule of a page of the consoles: the caller is the
// session of the hmid_session cookie (never a bearer token, an API key or an
// OAuth token), and the rule is otherwise r, so a page needs exactly what
// the REST route that does the same needs. Without a valid session the
// browser is sent to the login page; a refusal is a page (Guard.Pages).
func (r Rule) InBrowser() Rule {
	r.browser = true
	return r
}

// String describes the rule for route listings.
func (r Rule) String() string {
	s := ""
	switch {
	case r.optional:
		s = "none (bearer optional)"
	case r.public:
		return "none"
	case r.systemOnly:
		s = "system API key"
	case r.sessionOnly:
		s = "session token"
	case r.superAdmin:
		s = "super admin"
	case r.perm != "" && r.selfParam != "":
		s = r.perm + " (or self)"
	case r.perm != "":
		s = r.perm
	case len(r.anyPerm) > 0:
		s = "any of " + strings.Join(r.anyPerm, ", ")
	default:
		s = "authenticated"
	}
	if r.browser {
		s += "; browser session"
	}
	if r.oauth {
		s += "; OAuth token"
		if r.oauthScope != "" {
			s += " with scope " + r.oauthScope
		}
	}
	return s
}

// Guard applies rules using a Resolver.
type Guard struct {
	Resolver *Resolver
	// Pages answers the refusals of browser rules (InBrowser) as pages;
	// nil answers them as JSON like the API.
	Pages PageAnswers
	// ResourceMetadata is the URL of the protected-resource metadata of
	// hmid's API (RFC 9728 §3): every 401 names it in WWW-Authenticate
	// (§5.1), so a client that knows nothing but the API finds the
	// authorization server. "" names none.
	ResourceMetadata string
	// APIResource is the resource identifier of hmid's API (RFC 8707 §2,
	// RFC 9728 §2). An OAuth token issued for resources that leave it out
	// is for another server and is refused here (RFC 8707 §1: a resource
	// server accepts only tokens meant for it); a token that names no
	// resource is accepted, as before resource indicators. "" checks none.
	APIResource string
}

// PageAnswers renders the outcomes of a browser rule that do not reach the
// page: no session (SignIn: off to the login page) and refusals (Refuse).
type PageAnswers interface {
	SignIn(w http.ResponseWriter, r *http.Request)
	Refuse(w http.ResponseWriter, r *http.Request, err error)
}

// Require returns middleware enforcing rule: 401 for a missing or bad token,
// 403 for a token that lacks what the rule needs.
func (g *Guard) Require(rule Rule) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rule.public && !rule.optional {
				next.ServeHTTP(w, r)
				return
			}
			if rule.browser {
				g.page(w, r, rule, next)
				return
			}
			header := r.Header.Get("Authorization")
			if header == "" {
				if rule.optional {
					next.ServeHTTP(w, r)
					return
				}
				g.challenge(w, "", "")
				httpx.Error(w, r, apperr.Unauthorizedf("authentication required: send Authorization: Bearer <token>"))
				return
			}
			tok, ok := ParseBearer(header)
			if !ok {
				g.challenge(w, "invalid_request", "")
				httpx.Error(w, r, apperr.Unauthorizedf("malformed Authorization header: expected Bearer <token>"))
				return
			}
			p, err := g.Resolver.Resolve(r.Context(), tok)
			if err == nil && !g.forAPI(p) {
				err = apperr.Unauthorizedf("the access token was issued for another resource: its audience does not name %s", g.APIResource)
			}
			if err != nil {
				if apperr.KindOf(err) == apperr.Unauthorized {
					g.challenge(w, "invalid_token", "")
				}
				httpx.Error(w, r, err)
				return
			}
			if err := rule.check(p, r); err != nil {
				if scope := rule.missingScope(p); scope != "" {
					g.challenge(w, "insufficient_scope", scope)
				}
				httpx.Error(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}

// challenge sets the WWW-Authenticate header of a refusal (RFC 6750 §3):
// the error code (none when the request carried no credentials, §3.1), the
// scope a token lacks (insufficient_scope), and where the API's
// protected-resource metadata is (RFC 9728 §5.1).
func (g *Guard) challenge(w http.ResponseWriter, code, scope string) {
	v := `Bearer realm="hmid"`
	if code != "" {
		v += `, error="` + code + `"`
	}
	if scope != "" {
		v += `, scope="` + scope + `"`
	}
	if g.ResourceMetadata != "" {
		v += `, resource_metadata="` + g.ResourceMetadata + `"`
	}
	w.Header().Set("WWW-Authenticate", v)
}

// forAPI reports whether p may call hmid's API as far as its audience goes:
// a credential that is no OAuth token, a token naming no resource, or one
// whose audience names the API.
func (g *Guard) forAPI(p *Principal) bool {
	return g.APIResource == "" || len(p.OAuthAudience) == 0 || slices.Contains(p.OAuthAudience, g.APIResource)
}

// missingScope is the scope an OAuth token would need for rule, when that
// is why the rule refuses it (RFC 6750 §3.1 insufficient_scope): the
// route's OpenID Connect scope for a user's token, the permission for a
// client credentials token, whose scopes are permissions. "" otherwise.
func (rule Rule) missingScope(p *Principal) string {
	switch p.Kind {
	case KindOAuth:
		if rule.oauth && rule.oauthScope != "" && !p.HasOAuthScope(rule.oauthScope) {
			return rule.oauthScope
		}
	case KindClient:
		if len(rule.anyPerm) > 0 {
			return strings.Join(rule.anyPerm, " ")
		}
		if rule.perm != "" && !p.Can(rule.perm) {
			return rule.perm
		}
	}
	return ""
}

// page applies a browser rule: the session comes from the cookie.
func (g *Guard) page(w http.ResponseWriter, r *http.Request, rule Rule, next http.Handler) {
	refuse := func(err error) {
		if g.Pages != nil {
			g.Pages.Refuse(w, r, err)
			return
		}
		httpx.Error(w, r, err)
	}
	var p *Principal
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		p, err = g.Resolver.Resolve(r.Context(), c.Value)
		if err != nil && apperr.KindOf(err) != apperr.Unauthorized {
			refuse(err)
			return
		}
	}
	if p == nil || p.Kind != KindSession {
		if g.Pages != nil {
			g.Pages.SignIn(w, r)
			return
		}
		httpx.Error(w, r, apperr.Unauthorizedf("sign in first"))
		return
	}
	if err := rule.check(p, r); err != nil {
		refuse(err)
		return
	}
	next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
}

func (rule Rule) check(p *Principal, r *http.Request) error {
	if p.Kind == KindOAuth {
		return rule.checkOAuth(p, r)
	}
	if err, decided := rule.checkKind(p); decided {
		return err
	}
	return rule.checkPermission(p, r)
}

// checkOAuth is the rule for an OAuth access token: the route must take
// them, the token must hold the route's scope, and it acts only for its own
// user.
func (rule Rule) checkOAuth(p *Principal, r *http.Request) error {
	if !rule.oauth {
		return apperr.Forbiddenf("OAuth access tokens are not accepted on this endpoint; use a session token or an API key")
	}
	if rule.oauthScope != "" && !p.HasOAuthScope(rule.oauthScope) {
		return apperr.Forbiddenf("the access token lacks the %s scope", rule.oauthScope)
	}
	if rule.selfParam != "" && !p.IsSelf(chi.URLParam(r, rule.selfParam)) {
		return apperr.Forbiddenf("an OAuth access token may only read its own user")
	}
	return nil
}

// checkKind decides the rules that depend on who the principal is rather
// than what it may do; decided is false for a permission rule.
func (rule Rule) checkKind(p *Principal) (err error, decided bool) {
	switch {
	case rule.optional:
		return nil, true
	case rule.systemOnly:
		if !p.SystemKey {
			return apperr.Forbiddenf("this endpoint needs a system API key"), true
		}
		return nil, true
	case rule.sessionOnly:
		if p.Kind != KindSession {
			return apperr.Forbiddenf("this endpoint needs a user session token"), true
		}
		return nil, true
	case rule.superAdmin:
		if !p.IsAdmin() {
			return apperr.Forbiddenf("this endpoint is for super admins"), true
		}
		return nil, true
	}
	return nil, false
}

// checkPermission is a permission rule: one of anyPerm, or perm, or the
// principal's own user when the rule allows self.
func (rule Rule) checkPermission(p *Principal, r *http.Request) error {
	if len(rule.anyPerm) > 0 {
		for _, perm := range rule.anyPerm {
			if p.Can(perm) {
				return nil
			}
		}
		return apperr.Forbiddenf("missing permission: one of %s", strings.Join(rule.anyPerm, ", "))
	}
	if rule.perm == "" || p.Can(rule.perm) {
		return nil
	}
	if rule.selfParam != "" && p.IsSelf(chi.URLParam(r, rule.selfParam)) {
		return nil
	}
	return apperr.Forbiddenf("missing permission %s", rule.perm)
}
