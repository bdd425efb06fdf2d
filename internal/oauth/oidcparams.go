package oauth

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/authn"
	"hmid/internal/oauth/claims"
)

// The authentication context class references hmid issues in the acr claim
// (OpenID Connect Core §2): "1" for a single factor (a password or an
// upstream provider), "2" when a second factor was verified in the session
// or a passkey verified its user.
const (
	ACRSingleFactor = "1"
	ACRTwoFactor    = "2"
)

// ACRValues are the acr values hmid can satisfy, in discovery's
// acr_values_supported.
func ACRValues() []string { return []string{ACRSingleFactor, ACRTwoFactor} }

// DisplayValues are the display values of OpenID Connect Core §3.1.2.1. hmid
// shows the same responsive page for each.
func DisplayValues() []string { return []string{"page", "popup", "touch", "wap"} }

// UILocales are the languages of the login and consent pages (ui_locales).
func UILocales() []string { return []string{"en", "de"} }

// authContext is what an authorization request and its session fix for
// every ID token and UserInfo answer that descend from it: the acr and amr
// of the authentication and the claims request parameter. It is stored with
// a pending authorization and, from the code on, per token family.
type authContext struct {
	ACR    string          `json:"acr,omitempty"`
	AMR    []string        `json:"amr,omitempty"`
	Claims *claims.Request `json:"claims,omitempty"`
	// ClaimScopes are the scopes, beyond the granted ones, whose claims the
	// claims parameter asked for; consent covered them (see claimScopes).
	ClaimScopes []string `json:"claim_scopes,omitempty"`
	// Resources are the resource indicators the authorization request
	// named (RFC 8707 §2.1): the most a token of the family may be for.
	Resources []string `json:"resources,omitempty"`
}

// oidcRequest holds the OpenID Connect parameters of an authorization
// request beyond prompt and max_age (Core §3.1.2.1, §5.5).
type oidcRequest struct {
	claims       *claims.Request
	acrEssential []string // acr values the claims parameter demands (essential); nil: any
	hintSub      string   // sub of a verified id_token_hint
}

// checkOIDCParams validates display, acr_values, claims and id_token_hint.
// login_hint, ui_locales and claims_locales need no check: the login page
// reads the first two from its return URL; claims_locales is accepted and
// ignored (hmid's claims have one language).
func (s *Service) checkOIDCParams(ctx context.Context, ar *authzRequest, q url.Values) *Error {
	if d := q.Get("display"); d != "" && !slices.Contains(DisplayValues(), d) {
		return oerr(ErrInvalidRequest, "display must be one of page, popup, touch, wap")
	}
	if v := q.Get("claims"); v != "" {
		cr, err := claims.ParseRequest(v)
		if err != nil {
			return oerr(ErrInvalidRequest, "claims: "+err.Error())
		}
		ar.oidc.claims = cr
		ar.oidc.acrEssential = cr.EssentialACR()
	}
	if v := q.Get("id_token_hint"); v != "" {
		sub, e := s.verifyIDTokenHint(ctx, ar.client, v)
		if e != nil {
			return e
		}
		ar.oidc.hintSub = sub
	}
	return nil
}

// sessionContext says how the session's user authenticated: the amr stored
// with the session (read with it by the resolver), and the acr it amounts to.
func sessionContext(p *authn.Principal) authContext {
	ac := authContext{ACR: ACRSingleFactor}
	if len(p.AMR) > 0 {
		ac.AMR = slices.Clone(p.AMR)
	}
	// "otp": a TOTP or backup code after the first factor; "mfa": a passkey
	// that verified its user (possession and PIN or biometric, RFC 8176 §2).
	if slices.Contains(p.AMR, "otp") || slices.Contains(p.AMR, "mfa") {
		ac.ACR = ACRTwoFactor
	}
	return ac
}

// need is what the authorization endpoint must ask of the user before
// it may answer for the session's user, beyond consent.
type need int

const (
	interactNone  need = iota
	interactLogin      // (re-)authenticate: no session, too old, another user
	interactMFA        // authenticate with a second factor: an essential acr "2"
	interactFail       // cannot be satisfied even after logging in again
)

// needInteraction decides whether the session user p (nil: none) may be
// answered for now (Core §3.1.2.1 prompt, max_age, id_token_hint; §5.5.1.1
// essential acr). A request that carries the signed "authenticated after"
// mark of a login it already demanded (ar.loginAfter) is satisfied by any
// newer authentication, whoever logged in: that stops loops; an essential
// acr still unmet then is a failure.
func needInteraction(ar authzRequest, p *authn.Principal, ac authContext, now time.Time) need {
	if p == nil {
		return interactLogin
	}
	acrUnmet := ar.oidc.acrEssential != nil && !slices.Contains(ar.oidc.acrEssential, ac.ACR)
	if !ar.loginAfter.IsZero() {
		switch {
		case !p.AuthTime.After(ar.loginAfter):
			return interactLogin
		case acrUnmet:
			return interactFail
		}
		return interactNone
	}
	switch {
	case ar.forcesLogin():
		return interactLogin
	case ar.maxAge > 0 && now.Sub(p.AuthTime) > time.Duration(ar.maxAge)*time.Second:
		return interactLogin
	case ar.oidc.hintSub != "" && ar.oidc.hintSub != p.UserID:
		// Core §3.1.2.1: the hint names another user than the session's.
		return interactLogin
	case ar.oidc.claims.SubValue() != "" && ar.oidc.claims.SubValue() != p.UserID:
		// Core §5.5.1: a sub asked for by value must be the session's user.
		return interactLogin
	case acrUnmet:
		return interactMFA
	}
	return interactNone
}

// interaction turns needInteraction into the endpoint's answer: an error for
// the redirect URI, or login set to send the user to the login page.
// prompt=none never shows a page (Core §3.1.2.6): login_required, or
// interaction_required when only a second factor is missing.
func interaction(ar authzRequest, p *authn.Principal, ac authContext, now time.Time) (oe *Error, login bool) {
	none := slices.Contains(ar.prompt, "none")
	switch needInteraction(ar, p, ac, now) {
	case interactLogin:
		if none {
			return oerr(ErrLoginRequired, "the user must log in (no session, an older one, or another user than the hint names) and prompt=none forbids asking"), false
		}
		return nil, true
	case interactMFA:
		if none {
			return oerr(ErrInteractionRequired, "the requested acr needs a second factor and prompt=none forbids asking"), false
		}
		return nil, true
	case interactFail:
		return oerr(ErrAccessDenied, "the user could not be authenticated at the essential acr requested"), false
	}
	return nil, false
}

// forcesLogin reports whether the request demands a login page even with a
// fresh session: prompt=login, prompt=select_account (one account per
// browser session, so choosing an account means signing in) and max_age=0.
func (ar authzRequest) forcesLogin() bool {
	return slices.Contains(ar.prompt, "login") || slices.Contains(ar.prompt, "select_account") || ar.maxAge == 0
}

// decodeContext reads a stored context; hmid wrote it, so a row that does not
// parse (never expected) counts as empty rather than failing the grant.
func decodeContext(raw string) authContext {
	var ac authContext
	if json.Unmarshal([]byte(raw), &ac) != nil {
		return authContext{}
	}
	return ac
}

// userInfoContext is decodeContext for UserInfo, which uses only the claims
// request (Core §5.5) and the scopes it added: a context without one, as
// most are, is not decoded at all, which saves UserInfo, a hot path, a JSON
// decode per request.
func userInfoContext(raw string) authContext {
	if !strings.Contains(raw, `"claims"`) {
		return authContext{}
	}
	return decodeContext(raw)
}

// addAuthClaims adds to the claims of an ID token what its authentication
// context says: acr and amr (Core §2).
func (ac authContext) addAuthClaims(claims map[string]any) {
	if ac.ACR != "" {
		claims["acr"] = ac.ACR
	}
	if len(ac.AMR) > 0 {
		claims["amr"] = ac.AMR
	}
}

// uiLocalesFor returns ui_locales of q when it names a language of the pages.
func uiLocalesFor(q url.Values) string {
	for _, tag := range strings.Fields(q.Get("ui_locales")) {
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if slices.Contains(UILocales(), primary) {
			return primary
		}
	}
	return ""
}
