package oauth

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/oauth/redirecturi"
	"hmid/internal/oauth/store"
	"hmid/internal/secretbox"
	"hmid/internal/token"
)

// loginAfterParam carries, in the return_to URL of a forced login, the
// signed time after which the user must have authenticated. It stops
// prompt=login and max_age=0 from sending the user to the login page again
// after they have just logged in.
const loginAfterParam = "hmid_login_after"

// grant is what an authorization code (or a pending authorization) binds.
type grant struct {
	ClientID    string
	UserID      string
	RedirectURI string
	Scopes      []string
	State       string
	Nonce       string
	Challenge   string // S256 code_challenge, "" without PKCE
	AuthTime    time.Time
	Context     authContext // acr, amr and claims request (oidcparams.go)
	SessionID   string      // the browser session granting it: the ID token's sid ("" for none)
}

// authzRequest is a parsed authorization request whose client and redirect
// URI have been verified: from here on errors go back to the client.
type authzRequest struct {
	client     Client
	grant      grant
	prompt     []string
	maxAge     int // -1 when absent
	loginAfter time.Time
	params     url.Values
	oidc       oidcRequest
	resources  []string // resource indicators (RFC 8707), granted with the code
}

// Authorize serves GET and POST /v1/oauth/authorize (spec 1, Authorization;
// RFC 6749 §4.1.1, OpenID Connect Core §3.1.2).
func (h *Handler) Authorize(w http.ResponseWriter, r *http.Request) {
	s := h.S
	securityHeaders(w)
	ar, oe, ok := s.parseAuthorize(r)
	if !ok {
		// The client or its redirect URI could not be verified: never redirect (RFC 6749 §4.1.2.1).
		writeOAuthError(w, oe)
		return
	}
	fail := func(e *Error) {
		redirectTo(w, ar.grant.RedirectURI, url.Values{"error": {e.Code}, "error_description": {e.Description}, "state": {ar.grant.State}, "iss": {s.Issuer}})
	}
	if oe != nil {
		fail(oe)
		return
	}
	ctx := r.Context()
	now := s.Clock.Now()
	user, banned, err := s.sessionUser(ctx, r)
	if err != nil {
		fail(asOAuth(r, err))
		return
	}
	if banned {
		fail(oerr(ErrAccessDenied, "the account is banned"))
		return
	}
	var ac authContext
	if user != nil {
		ac = sessionContext(user)
	}
	if oe, login := interaction(ar, user, ac, now); oe != nil {
		fail(oe)
		return
	} else if login {
		s.redirectToLogin(w, ar, user != nil || ar.forcesLogin(), now)
		return
	}
	ar.grant.UserID = user.UserID
	ar.grant.AuthTime = user.AuthTime
	ac.Claims = ar.oidc.claims
	ac.ClaimScopes = ar.oidc.claims.Scopes(ar.grant.Scopes, ar.client.AllowedScopes)
	ac.Resources = ar.resources
	ar.grant.Context = ac
	ar.grant.SessionID = user.SessionID
	consentScopes := union(ar.grant.Scopes, ac.ClaimScopes)
	needConsent := slices.Contains(ar.prompt, "consent")
	if !needConsent && !ar.client.IsFirstParty {
		covered, err := s.consentCovers(ctx, user.UserID, ar.client.ID, consentScopes)
		if err != nil {
			fail(asOAuth(r, err))
			return
		}
		needConsent = !covered
	}
	if !needConsent {
		code, err := s.issueCode(ctx, s.DB, ar.grant, now)
		if err != nil {
			fail(asOAuth(r, err))
			return
		}
		redirectTo(w, ar.grant.RedirectURI, url.Values{"code": {code}, "state": {ar.grant.State}, "iss": {s.Issuer}})
		return
	}
	if slices.Contains(ar.prompt, "none") {
		fail(oerr(ErrConsentRequired, "the user has not consented to these scopes and prompt=none forbids asking"))
		return
	}
	pendingID, err := s.createPending(ctx, ar.grant, now)
	if err != nil {
		fail(asOAuth(r, err))
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		page := s.Issuer + "/consent?pending_authorization_id=" + url.QueryEscape(pendingID)
		if lang := uiLocalesFor(ar.params); lang != "" {
			page += "&ui_locales=" + lang
		}
		w.Header().Set("Location", page)
		w.WriteHeader(http.StatusFound)
		return
	}
	requested := make([]authflow.Scope, 0, len(consentScopes))
	for _, sc := range consentScopes {
		d, _ := knownScope(sc)
		requested = append(requested, d)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"consent_required":         true,
		"client":                   map[string]any{"id": ar.client.ID, "name": ar.client.Name, "logo_url": ar.client.LogoURL},
		"requested_scopes":         requested,
		"pending_authorization_id": pendingID,
	})
}

// parseAuthorize validates an authorization request. ok is false when the
// client or redirect URI is not verified (oe is then answered as JSON);
// otherwise a non-nil oe is returned to the client by redirect.
func (s *Service) parseAuthorize(r *http.Request) (ar authzRequest, oe *Error, ok bool) {
	if err := r.ParseForm(); err != nil {
		return ar, oerr(ErrInvalidRequest, "the request parameters could not be parsed"), false
	}
	q := r.Form
	ar.params = q
	for _, k := range []string{"client_id", "redirect_uri"} {
		if len(q[k]) > 1 {
			return ar, oerr(ErrInvalidRequest, k+" is given more than once"), false
		}
	}
	clientID := q.Get("client_id")
	if clientID == "" {
		return ar, oerr(ErrInvalidRequest, "client_id is required"), false
	}
	c, err := s.loadClient(r.Context(), s.DB, clientID)
	if apperr.Is(err, apperr.NotFound) {
		return ar, oerr(ErrInvalidRequest, "unknown client_id"), false
	}
	if err != nil {
		return ar, asOAuth(r, err), false
	}
	if !c.IsActive {
		return ar, oerr(ErrInvalidRequest, "the client is not active"), false
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" {
		return ar, oerr(ErrInvalidRequest, "redirect_uri is required"), false
	}
	// Exact string comparison (RFC 9700 §4.1.3), but for the port of a
	// loopback URI (RFC 8252 §7.3; package redirecturi).
	if !redirecturi.Match(c.RedirectURIs, redirect) {
		return ar, oerr(ErrInvalidRequest, "redirect_uri is not registered for this client"), false
	}
	ar.client = c
	ar.grant = grant{ClientID: c.ID, RedirectURI: redirect, State: q.Get("state"), Nonce: q.Get("nonce")}
	ar.maxAge = -1
	if oe := s.checkAuthorizeParams(&ar, q); oe != nil {
		return ar, oe, true
	}
	if oe := checkGrant(c, GrantAuthorizationCode); oe != nil { // RFC 6749 §4.1.2.1
		return ar, oe, true
	}
	return ar, s.checkOIDCParams(r.Context(), &ar, q), true
}

// Bounds of the client-chosen values an authorization request carries
// through to the redirect and the ID token (docs/decisions.md, "Input bounds").
const (
	MaxState = 1024
	MaxNonce = 512
)

// checkAuthorizeParams checks an authorization request's parameters and
// fills ar's grant, prompt and max_age from them, in the order the errors
// are reported.
func (s *Service) checkAuthorizeParams(ar *authzRequest, q url.Values) *Error {
	for _, check := range []func(*authzRequest, url.Values) *Error{checkRequestShape, checkRequestScopes, checkPKCE, checkPrompt, checkAuthorizeResources} {
		if e := check(ar, q); e != nil {
			return e
		}
	}
	if v := q.Get(loginAfterParam); v != "" {
		if t, ok := s.verifyLoginAfter(v); ok {
			ar.loginAfter = t
		}
	}
	return nil
}

// checkRequestShape refuses repeated parameters, oversized state and nonce,
// request objects and any response type or mode but code and query.
func checkRequestShape(ar *authzRequest, q url.Values) *Error {
	// RFC 6749 §3.1: parameters must not be repeated; resource may be (RFC 8707 §2).
	for k, v := range q {
		if len(v) > 1 && k != "resource" {
			return oerr(ErrInvalidRequest, k+" is given more than once")
		}
	}
	if len(ar.grant.State) > MaxState {
		// Not echoed: the error redirect would carry the whole oversized
		// value back (RFC 6749 §4.1.2.1 asks for state only when it was valid).
		ar.grant.State = ""
		return oerr(ErrInvalidRequest, fmt.Sprintf("state must be at most %d bytes", MaxState))
	}
	if len(ar.grant.Nonce) > MaxNonce {
		return oerr(ErrInvalidRequest, fmt.Sprintf("nonce must be at most %d bytes", MaxNonce))
	}
	// OpenID Connect Core §6: request objects are not supported.
	if q.Has("request") {
		return oerr(ErrRequestNotSupported, "request objects are not supported")
	}
	if q.Has("request_uri") {
		return oerr(ErrRequestURINotSupported, "request_uri is not supported")
	}
	if rt := q.Get("response_type"); rt != "code" {
		if rt == "" {
			return oerr(ErrInvalidRequest, "response_type is required and must be code")
		}
		return oerr(ErrInvalidRequest, "response_type must be code")
	}
	if rm := q.Get("response_mode"); rm != "" && rm != "query" {
		return oerr(ErrInvalidRequest, "response_mode must be query")
	}
	return nil
}

// checkRequestScopes requires a scope of known names the client may ask for.
func checkRequestScopes(ar *authzRequest, q url.Values) *Error {
	scopes := parseScope(q.Get("scope"))
	if len(scopes) == 0 {
		return oerr(ErrInvalidRequest, "scope is required")
	}
	for _, sc := range scopes {
		if _, ok := knownScope(sc); !ok {
			return oerr(ErrInvalidScope, "unknown scope "+sc)
		}
		if !slices.Contains(ar.client.AllowedScopes, sc) {
			return oerr(ErrInvalidScope, "the client may not request scope "+sc)
		}
	}
	ar.grant.Scopes = scopes
	return nil
}

// checkPKCE: S256 only; mandatory for public clients (RFC 7636; RFC 9700 §2.1.1).
func checkPKCE(ar *authzRequest, q url.Values) *Error {
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return oerr(ErrInvalidRequest, "code_challenge_method without code_challenge")
	case challenge != "" && method == "":
		return oerr(ErrInvalidRequest, "code_challenge_method is required and must be S256 (plain is not supported)")
	case challenge != "" && method != "S256":
		return oerr(ErrInvalidRequest, "code_challenge_method must be S256 (plain is not supported)")
	case challenge != "" && !validChallenge(challenge):
		return oerr(ErrInvalidRequest, "code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)")
	case challenge == "" && ar.client.ClientType == Public:
		return oerr(ErrInvalidRequest, "public clients must use PKCE: code_challenge with code_challenge_method=S256")
	}
	ar.grant.Challenge = challenge
	return nil
}

// checkPrompt reads prompt and max_age (OpenID Connect Core §3.1.2.1).
func checkPrompt(ar *authzRequest, q url.Values) *Error {
	for _, p := range strings.Split(q.Get("prompt"), " ") {
		switch p {
		case "":
		case "none", "login", "consent", "select_account":
			if !slices.Contains(ar.prompt, p) {
				ar.prompt = append(ar.prompt, p)
			}
		default:
			return oerr(ErrInvalidRequest, "unsupported prompt value "+p)
		}
	}
	if slices.Contains(ar.prompt, "none") && len(ar.prompt) > 1 {
		return oerr(ErrInvalidRequest, "prompt=none cannot be combined with other values")
	}
	if v := q.Get("max_age"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return oerr(ErrInvalidRequest, "max_age must be a non-negative integer")
		}
		ar.maxAge = n
	}
	return nil
}

// validChallenge reports whether c is an S256 challenge: 43 base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

// validVerifier checks RFC 7636 §4.1: 43 to 128 characters of [A-Za-z0-9-._~].
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// s256 is the code_challenge of a verifier (RFC 7636 §4.2).
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sessionUser resolves the user's session from the Authorization header or
// the hmid_session cookie. It returns nil for no valid session; banned is
// true when the session is valid but its user is banned.
func (s *Service) sessionUser(ctx context.Context, r *http.Request) (p *authn.Principal, banned bool, err error) {
	tok := ""
	if hdr := r.Header.Get("Authorization"); hdr != "" {
		tok, _ = authn.ParseBearer(hdr)
	} else if c, err := r.Cookie(SessionCookie); err == nil {
		tok = c.Value
	}
	if !token.HasShape(tok, token.PrefixSession) {
		return nil, false, nil
	}
	p, err = s.Resolver.Resolve(ctx, tok)
	if err != nil {
		if !apperr.Is(err, apperr.Unauthorized) {
			return nil, false, err
		}
		// Tell a banned user apart from a missing session: they must not be
		// sent to log in again, only told that access is denied.
		now := s.Clock.Now()
		var userID string
		err := s.DB.QueryRowContext(ctx, `SELECT user_id FROM sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2`,
			token.Hash(tok), db.TS(now)).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var isBanned bool
		if err := s.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM bans WHERE user_id = $1 AND `+db.ActiveBanSQL+`)`,
			userID, db.TS(now)).Scan(&isBanned); err != nil {
			return nil, false, err
		}
		return nil, isBanned, nil
	}
	if p.Kind != authn.KindSession {
		return nil, false, nil
	}
	return p, false, nil
}

// redirectToLogin sends the user to the login page with the authorization
// request as return_to. For a forced login (prompt=login or select_account,
// max_age=0, or any login asked of a user who has a session) the return URL
// drops that demand and carries a signed "authenticated after
// now" instead, so the flow resumes once the user has logged in.
func (s *Service) redirectToLogin(w http.ResponseWriter, ar authzRequest, fresh bool, now time.Time) {
	params := url.Values{}
	for k, v := range ar.params {
		params[k] = slices.Clone(v)
	}
	if fresh {
		var kept []string
		for _, p := range ar.prompt {
			if p != "login" && p != "select_account" {
				kept = append(kept, p)
			}
		}
		params.Del("prompt")
		if len(kept) > 0 {
			params.Set("prompt", strings.Join(kept, " "))
		}
		if params.Get("max_age") == "0" {
			params.Del("max_age")
		}
		params.Set(loginAfterParam, s.signLoginAfter(now))
	}
	returnTo := s.Issuer + "/v1/oauth/authorize?" + params.Encode()
	login := s.LoginURL
	if login == "" {
		login = s.Issuer + "/login"
	}
	redirectTo(w, login, url.Values{"return_to": {returnTo}})
}

func (s *Service) signLoginAfter(t time.Time) string {
	ts := strconv.FormatInt(t.UnixMicro(), 10)
	return ts + "." + base64.RawURLEncoding.EncodeToString(s.Box.MAC([]byte(loginAfterParam), []byte(ts)))
}

func (s *Service) verifyLoginAfter(v string) (time.Time, bool) {
	ts, mac, ok := strings.Cut(v, ".")
	if !ok {
		return time.Time{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !secretbox.Equal(got, s.Box.MAC([]byte(loginAfterParam), []byte(ts))) {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(n).UTC(), true
}

// consentCovers reports whether the user's stored consent for the client
// includes every scope of scopes.
func (s *Service) consentCovers(ctx context.Context, userID, clientID string, scopes []string) (bool, error) {
	granted, err := s.Store.ConsentScopes(ctx, s.DB, userID, clientID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return subset(scopes, granted), nil
}

// issueCode stores a new authorization code for g through q and returns it.
func (s *Service) issueCode(ctx context.Context, q db.Querier, g grant, now time.Time) (string, error) {
	code := token.New(token.PrefixAuthCode)
	err := s.Store.IssueCode(ctx, q, store.Code{Hash: token.Hash(code), FamilyID: db.NewID(), ClientID: g.ClientID, UserID: g.UserID,
		RedirectURI: g.RedirectURI, Scopes: g.Scopes, Nonce: g.Nonce, Challenge: g.Challenge, AuthTime: g.AuthTime,
		Created: now, Expires: now.Add(CodeTTL), SessionID: g.SessionID, Context: db.JSON(g.Context)})
	if err != nil {
		return "", err
	}
	return code, nil
}

// createPending stores g as a pending authorization, waiting for the
// user's consent, and returns its id.
func (s *Service) createPending(ctx context.Context, g grant, now time.Time) (string, error) {
	id := uuid.NewString()
	err := s.Store.CreatePending(ctx, store.PendingAuthorization{ID: id, UserID: g.UserID, ClientID: g.ClientID, RedirectURI: g.RedirectURI,
		Scopes: g.Scopes, State: g.State, Nonce: g.Nonce, Challenge: g.Challenge, AuthTime: g.AuthTime, Created: now,
		Expires: now.Add(PendingTTL), Context: db.JSON(g.Context), SessionID: g.SessionID})
	return id, err
}

// ConsentBody is the body of POST /v1/oauth/authorize/consent.
type ConsentBody struct {
	PendingAuthorizationID string `json:"pending_authorization_id"`
	Approved               *bool  `json:"approved"`
}

// Consent serves POST /v1/oauth/authorize/consent: the user approves or
// denies a pending authorization; the answer is a 302 to the client.
func (h *Handler) Consent(w http.ResponseWriter, r *http.Request) {
	var b ConsentBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	if b.PendingAuthorizationID == "" || b.Approved == nil {
		httpx.Error(w, r, apperr.Invalid("pending_authorization_id and approved are required"))
		return
	}
	m := MetaFrom(r)
	to, err := h.S.Decide(r.Context(), b.PendingAuthorizationID, authn.From(r.Context()).UserID, *b.Approved, m.IP, m.UserAgent)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	securityHeaders(w)
	w.Header().Set("Location", to)
	w.WriteHeader(http.StatusFound)
}

// Pending returns a pending authorization of the user (authflow.Consents);
// a missing, expired, decided or foreign one is NotFound.
func (s *Service) Pending(ctx context.Context, pendingID, userID string) (authflow.Pending, error) {
	notFound := apperr.NotFoundf("pending authorization not found, expired or already decided")
	if _, err := uuid.Parse(pendingID); err != nil {
		return authflow.Pending{}, notFound
	}
	row, err := s.Store.Pending(ctx, pendingID, userID, s.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return authflow.Pending{}, notFound
	}
	if err != nil {
		return authflow.Pending{}, err
	}
	p := authflow.Pending{ID: row.ID, ClientID: row.ClientID, ClientName: row.ClientName, LogoURL: row.LogoURL, ExpiresAt: row.Expires}
	for _, sc := range union(row.Scopes, decodeContext(row.Context).ClaimScopes) {
		d, _ := knownScope(sc)
		p.Scopes = append(p.Scopes, d)
	}
	return p, nil
}

// Decide approves or denies a pending authorization of the user, once
// (authflow.Consents). Approval stores the consent (consent_granted) and
// returns the client's redirect URI with a code; denial returns it with
// error=access_denied. A missing, expired, decided or foreign pending
// authorization is NotFound.
func (s *Service) Decide(ctx context.Context, pendingID, userID string, approved bool, ip, userAgent string) (string, error) {
	notFound := apperr.NotFoundf("pending authorization not found, expired or already decided")
	if _, err := uuid.Parse(pendingID); err != nil {
		return "", notFound
	}
	now := s.Clock.Now()
	var out string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		p, err := s.Store.DecidePending(ctx, tx, pendingID, userID, now)
		if errors.Is(err, store.ErrNotFound) {
			return notFound
		}
		if err != nil {
			return err
		}
		g := grant{ClientID: p.ClientID, UserID: userID, RedirectURI: p.RedirectURI, Scopes: p.Scopes, State: p.State, Nonce: p.Nonce,
			Challenge: p.Challenge, AuthTime: p.AuthTime, Context: decodeContext(p.Context), SessionID: p.SessionID}
		deny := func(desc string) error {
			out = redirecturi.Build(g.RedirectURI, url.Values{"error": {ErrAccessDenied}, "error_description": {desc}, "state": {g.State}, "iss": {s.Issuer}})
			return nil
		}
		if !approved {
			return deny("the user denied the request")
		}
		c, err := s.loadClient(ctx, tx, g.ClientID)
		if err != nil {
			return err
		}
		if !c.IsActive {
			return deny("the client is not active")
		}
		usable, err := s.Store.UserUsable(ctx, tx, userID, now)
		if err != nil {
			return err
		}
		if !usable {
			return deny("the account cannot authorize clients")
		}
		if err := s.Store.SaveConsent(ctx, tx, userID, g.ClientID, union(g.Scopes, g.Context.ClaimScopes), now); err != nil {
			return err
		}
		if _, err := s.Audit.Record(ctx, tx, Meta{IP: ip, UserAgent: userAgent}.event(auditEvent(userID, audit.ConsentGranted, c,
			"consent granted to "+c.Name, map[string]any{"client_name": c.Name, "scopes": g.Scopes}))); err != nil {
			return err
		}
		code, err := s.issueCode(ctx, tx, g, now)
		if err != nil {
			return err
		}
		out = redirecturi.Build(g.RedirectURI, url.Values{"code": {code}, "state": {g.State}, "iss": {s.Issuer}})
		return nil
	})
	return out, err
}
