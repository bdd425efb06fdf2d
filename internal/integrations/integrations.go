// Package integrations connects users' accounts on an external streaming
// platform (spec 3, Platform integrations). The platform is Twitch-like: an
// OAuth 2.0 authorization-code flow (RFC 6749 §4.1) at its identity service,
// and a Helix-style API for the user, followers, subscriptions and streams.
//
// Access and refresh tokens are sealed with the server key (AES-256-GCM)
// before they are stored and never leave the service. The OAuth state is a
// signed, expiring, single-use value bound to the user who started the
// connection, to the browser that completes it and to the redirect_uri that
// user registered.
package integrations

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/secretbox"
	"hmid/internal/telemetry"
)

// Slug is the platform slug and path word of the streaming platform.
const Slug = "streamplatform"

// StateTTL is how long a connect state stays valid.
const StateTTL = 10 * time.Minute

// StateCookie is the cookie that binds a connect state to the browser that
// started it: a random secret whose SHA-256 is in the signed state. It is
// sent only to the callback path.
const StateCookie = "hmid_integration_state"

// callbackPath is the path of the callback, under the public URL.
const callbackPath = "/v1/integrations/callback/" + Slug

// Scope is an OAuth scope the platform offers.
type Scope struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// Scopes are the platform scopes hmid asks for (Twitch scope names).
var Scopes = []Scope{
	{"user:read:email", "Read the account's email address", false},
	{"moderator:read:followers", "Read the channel's followers (follower statistics)", true},
	{"channel:read:subscriptions", "Read the channel's subscribers (subscriber statistics)", false},
	{"chat:read", "Read chat messages in the channel (chat bot)", false},
	{"chat:edit", "Send chat messages in the channel (chat bot)", false},
}

// Platform describes a platform in GET /v1/integrations/platforms.
type Platform struct {
	Slug        string   `json:"slug"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	IconURL     *string  `json:"icon_url"`
	Enabled     bool     `json:"enabled"`
	Features    []string `json:"features"`
}

const platformName = "Streaming platform"

// Integration is a connected account as served.
type Integration struct {
	ID              string     `json:"id"`
	UserID          string     `json:"user_id"`
	PlatformSlug    string     `json:"platform_slug"`
	PlatformName    string     `json:"platform_name"`
	PlatformUserID  string     `json:"platform_user_id"`
	Username        string     `json:"username"`
	DisplayName     *string    `json:"display_name"`
	ProfileImageURL *string    `json:"profile_image_url"`
	Scopes          []string   `json:"scopes"`
	IsActive        bool       `json:"is_active"`
	BotStatus       string     `json:"bot_status"`
	ConnectedAt     time.Time  `json:"connected_at"`
	LastRefreshedAt *time.Time `json:"last_refreshed_at"`

	accessToken, refreshToken string // sealed
	tokenExpiresAt            *time.Time
}

// Service holds the area's dependencies.
type Service struct {
	DB        *db.DB
	Clock     clock.Clock
	Box       *secretbox.Box
	Cache     cache.Cache
	Provider  config.ProviderConfig
	PublicURL string
	HTTP      *http.Client
	// Sessions resolves the hmid_session cookie at the callback, to check
	// that the signed-in user completing a connection is the one who
	// started it.
	Sessions SessionResolver
	// SecureCookies sets the Secure attribute on the state cookie.
	SecureCookies bool
}

// SessionResolver turns a session token into its principal
// (*authn.Resolver).
type SessionResolver interface {
	Resolve(ctx context.Context, tok string) (*authn.Principal, error)
}

// Handler serves the integration endpoints.
type Handler struct{ S *Service }

// Enabled reports whether the platform's OAuth client is configured
// (HMID_STREAMPLATFORM_CLIENT_ID and _CLIENT_SECRET): without it no account
// can be connected.
func (s *Service) Enabled() bool { return s.Provider.ClientID != "" && s.Provider.ClientSecret != "" }

func (s *Service) callbackURL() string { return s.PublicURL + callbackPath }

// redirectAllowed reports whether the browser may be sent to raw after the
// callback: an absolute http(s) URL without fragment or user information.
// Any such URL may be registered (the spec names no restriction, and a
// front end may live anywhere): the state is bound to the user and browser
// that registered it, so the callback sends only them there, and no one can
// use hmid's origin to send somebody else's browser to it.
func (s *Service) redirectAllowed(raw string) bool {
	u, err := url.Parse(raw)
	return raw != "" && err == nil && u.Fragment == "" && u.User == nil && u.Host != "" &&
		(u.Scheme == "http" || u.Scheme == "https")
}

func checkSlug(slug string) error {
	if slug != Slug {
		return apperr.NotFoundf("unknown platform %q", slug)
	}
	return nil
}

// user returns the caller's user id; integrations belong to users.
func user(ctx context.Context) (string, error) {
	p := authn.From(ctx)
	if p == nil || p.UserID == "" {
		return "", apperr.Forbiddenf("integrations belong to a user; use a user's session token or API key")
	}
	return p.UserID, nil
}

const cols = `id, user_id, platform_slug, platform_user_id, username, display_name, profile_image_url, scopes, is_active, bot_status,
	connected_at, last_refreshed_at, access_token, refresh_token, token_expires_at`

func scan(row db.Scanner) (Integration, error) {
	var i Integration
	var disp, img, refresh sql.NullString
	var scopes db.Strings
	var conn int64
	var refreshed, exp db.NullTime
	err := row.Scan(&i.ID, &i.UserID, &i.PlatformSlug, &i.PlatformUserID, &i.Username, &disp, &img, &scopes, &i.IsActive, &i.BotStatus,
		&conn, &refreshed, &i.accessToken, &refresh, &exp)
	i.DisplayName = db.StringPtr(disp)
	i.ProfileImageURL = db.StringPtr(img)
	i.Scopes = scopes
	if i.Scopes == nil {
		i.Scopes = []string{}
	}
	i.PlatformName = platformName
	i.ConnectedAt = db.FromTS(conn)
	i.LastRefreshedAt = refreshed.Ptr()
	i.refreshToken = refresh.String
	i.tokenExpiresAt = exp.Ptr()
	return i, err
}

// Get loads an integration of the caller; another user's is reported as not found.
func (s *Service) Get(ctx context.Context, id string) (Integration, error) {
	uid, err := user(ctx)
	if err != nil {
		return Integration{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Integration{}, apperr.NotFoundf("integration not found")
	}
	i, err := scan(s.DB.QueryRowContext(ctx, `SELECT `+cols+` FROM integrations WHERE id = $1 AND user_id = $2`, id, uid))
	return i, db.NotFoundOr(err, "integration")
}

// List returns the caller's integrations, oldest first; with a slug only
// those of that platform. A credential of no user has none.
func (s *Service) List(ctx context.Context, slug string) ([]Integration, error) {
	out := []Integration{}
	p := authn.From(ctx)
	if p == nil || p.UserID == "" {
		return out, nil
	}
	q, args := `SELECT `+cols+` FROM integrations WHERE user_id = $1`, []any{p.UserID}
	if slug != "" {
		q += ` AND platform_slug = $2`
		args = append(args, slug)
	}
	return db.All(ctx, s.DB, scan, q+` ORDER BY connected_at, id`, args...)
}

// List serves GET /v1/integrations: a bare array of the caller's integrations.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.List(r.Context(), "")
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// ListPlatform serves GET /v1/integrations/platform/{slug}.
func (h *Handler) ListPlatform(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	if err := checkSlug(slug); err != nil {
		httpx.Error(w, r, err)
		return
	}
	out, err := h.S.List(r.Context(), slug)
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// Get serves GET /v1/integrations/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	i, err := h.S.Get(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, i, err)
}

// Platforms serves GET /v1/integrations/platforms.
func (h *Handler) Platforms(w http.ResponseWriter, r *http.Request) {
	httpx.JSON(w, http.StatusOK, map[string]any{"platforms": []Platform{{
		Slug: Slug, Name: platformName, Description: "Live-streaming platform: channel statistics and a chat bot for your channel",
		Enabled: h.S.Enabled(), Features: []string{"oauth", "stats", "bot"},
	}}})
}

// PlatformScopes serves GET /v1/integrations/platform/{slug}/scopes.
func (h *Handler) PlatformScopes(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	err := checkSlug(slug)
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"platform": slug, "scopes": Scopes}, err)
}

// ---- connect and callback ----

// state is the signed content of the OAuth state parameter.
type state struct {
	User     string   `json:"u"`
	Platform string   `json:"p"`
	Redirect string   `json:"r"`
	Scopes   []string `json:"s"`
	Nonce    string   `json:"n"`
	Expires  int64    `json:"e"` // Unix seconds
	// Browser is base64url(SHA-256) of the StateCookie secret set when
	// the connection was started through the API; "" for none.
	Browser string `json:"b,omitempty"`
}

var stateMACLabel = []byte("hmid integration state")

func (s *Service) signState(st state) string {
	b, _ := json.Marshal(st)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(s.Box.MAC(stateMACLabel, b))
}

// openState verifies the MAC (in constant time) and the expiry of a state.
func (s *Service) openState(v string) (state, error) {
	var st state
	bad := apperr.Bad("invalid or tampered state")
	body, mac, ok := strings.Cut(v, ".")
	if !ok {
		return st, bad
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	m, err2 := base64.RawURLEncoding.DecodeString(mac)
	if err1 != nil || err2 != nil || !secretbox.Equal(m, s.Box.MAC(stateMACLabel, b)) {
		return st, bad
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, bad
	}
	if s.Clock.Now().Unix() > st.Expires {
		return st, apperr.Bad("the state has expired; connect again")
	}
	return st, nil
}

// Connect starts connecting the caller's account on the platform slug
// (RFC 6749 §4.1.1): it returns the platform's authorization URL to send
// the user to, and the signed state in it. After the platform's callback
// the user's browser is sent to redirectURI, with integration_id or error
// added to its query. The required scopes are always asked for, scopes adds optional
// ones. The callback completes the connection only in a browser signed in
// to hmid as the caller (the built-in account console starts it so).
func (s *Service) Connect(ctx context.Context, slug, redirectURI string, scopes []string) (authorizationURL, signedState string, err error) {
	return s.connect(ctx, slug, redirectURI, scopes, "")
}

// ConnectBound is Connect for a browser that will complete the connection
// without being signed in to hmid: it also returns a random secret for the
// StateCookie (see SetStateCookie), with which the callback accepts the
// state as well.
func (s *Service) ConnectBound(ctx context.Context, slug, redirectURI string, scopes []string) (authorizationURL, signedState, browser string, err error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	browser = base64.RawURLEncoding.EncodeToString(b[:])
	authorizationURL, signedState, err = s.connect(ctx, slug, redirectURI, scopes, browserHash(browser))
	if err != nil {
		return "", "", "", err
	}
	return authorizationURL, signedState, browser, nil
}

// browserHash is what a state keeps of a StateCookie secret.
func browserHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func (s *Service) connect(ctx context.Context, slug, redirectURI string, scopes []string, browser string) (authorizationURL, signedState string, err error) {
	if err := checkSlug(slug); err != nil {
		return "", "", err
	}
	uid, err := user(ctx)
	if err != nil {
		return "", "", err
	}
	if !s.redirectAllowed(redirectURI) {
		return "", "", apperr.Invalid("redirect_uri is required: an absolute http(s) URL without user information or fragment")
	}
	asked := []string{}
	for _, sc := range Scopes {
		if sc.Required {
			asked = append(asked, sc.Name)
		}
	}
	for _, name := range scopes {
		if !slices.ContainsFunc(Scopes, func(sc Scope) bool { return sc.Name == name }) {
			return "", "", apperr.Invalid("unknown scope %q; see /v1/integrations/platform/%s/scopes", name, Slug)
		}
		if !slices.Contains(asked, name) {
			asked = append(asked, name)
		}
	}
	if !s.Enabled() {
		return "", "", apperr.Unavailablef("the %s integration is not configured on this server", Slug)
	}
	st := state{User: uid, Platform: slug, Redirect: redirectURI, Scopes: asked, Nonce: uuid.NewString(),
		Expires: s.Clock.Now().Add(StateTTL).Unix(), Browser: browser}
	signed := s.signState(st)
	q := url.Values{
		"client_id":     {s.Provider.ClientID},
		"redirect_uri":  {s.callbackURL()},
		"response_type": {"code"},
		"scope":         {strings.Join(asked, " ")},
		"state":         {signed},
	}
	sep := "?"
	if strings.Contains(s.Provider.AuthURL, "?") {
		sep = "&"
	}
	return s.Provider.AuthURL + sep + q.Encode(), signed, nil
}

// SetStateCookie stores a ConnectBound secret in the browser for the
// callback: HttpOnly, sent only to the callback path, SameSite=Lax (the
// platform sends the browser back with a top-level GET), for StateTTL.
func (s *Service) SetStateCookie(w http.ResponseWriter, secret string) {
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: secret, Path: callbackPath, HttpOnly: true,
		Secure: s.SecureCookies, SameSite: http.SameSiteLaxMode, MaxAge: int(StateTTL.Seconds())})
}

func (s *Service) clearStateCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: "", Path: callbackPath, HttpOnly: true,
		Secure: s.SecureCookies, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// errForeignState answers a callback whose state was started by another
// user or in another browser: completing it would link the platform account
// of whoever is at this browser to the hmid account of whoever started it
// (login CSRF, RFC 6749 §10.12).
var errForeignState = apperr.Bad("this connection was started by another user or in another browser; connect again from your account")

// boundTo checks that the browser completing the callback is the one that
// started st: it holds the StateCookie secret of the state, or it is signed
// in to hmid (the hmid_session cookie) as the state's user.
func (s *Service) boundTo(r *http.Request, st state) error {
	if st.Browser != "" {
		if c, err := r.Cookie(StateCookie); err == nil && secretbox.Equal([]byte(browserHash(c.Value)), []byte(st.Browser)) {
			return nil
		}
	}
	c, err := r.Cookie(authn.SessionCookie)
	if err != nil || c.Value == "" || s.Sessions == nil {
		return errForeignState
	}
	p, err := s.Sessions.Resolve(r.Context(), c.Value)
	if err != nil {
		if apperr.KindOf(err) == apperr.Unauthorized {
			return errForeignState
		}
		return err
	}
	if p == nil || p.Kind != authn.KindSession || p.UserID != st.User {
		return errForeignState
	}
	return nil
}

// Connect serves POST /v1/integrations/platform/{slug}/connect.
func (h *Handler) Connect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	slug := chi.URLParam(r, "slug")
	var in struct {
		RedirectURI string   `json:"redirect_uri"`
		Scopes      []string `json:"scopes"`
	}
	if err := httpx.Decode(r, &in); err != nil {
		// The platform and the caller are checked before the body, as the
		// service checks them first.
		if err2 := checkSlug(slug); err2 != nil {
			err = err2
		} else if _, err2 := user(ctx); err2 != nil {
			err = err2
		}
		httpx.Error(w, r, err)
		return
	}
	authURL, signed, browser, err := h.S.ConnectBound(ctx, slug, in.RedirectURI, in.Scopes)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	// A browser that calls this (the console's own scripts) keeps the
	// cookie and completes the callback with it; another client's user
	// completes it signed in to hmid.
	h.S.SetStateCookie(w, browser)
	httpx.JSON(w, http.StatusOK, map[string]any{"authorization_url": authURL, "state": signed})
}

// tokenResponse is the provider's token endpoint answer (RFC 6749 §5.1);
// Twitch sends scope as an array, others as a space-separated string.
type tokenResponse struct {
	AccessToken  string          `json:"access_token"`
	RefreshToken string          `json:"refresh_token"`
	ExpiresIn    int64           `json:"expires_in"`
	Scope        json.RawMessage `json:"scope"`
}

func (t tokenResponse) scopes() []string {
	var list []string
	if json.Unmarshal(t.Scope, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(t.Scope, &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

// errRejected means the provider refused a grant (RFC 6749 §5.2).
var errRejected = errors.New("integrations: grant rejected")

func (s *Service) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: telemetry.Transport(http.DefaultTransport)}
}

// token posts a grant to the provider's token endpoint.
func (s *Service) token(ctx context.Context, form url.Values) (tokenResponse, error) {
	var t tokenResponse
	form.Set("client_id", s.Provider.ClientID)
	form.Set("client_secret", s.Provider.ClientSecret)
	req, err := http.NewRequestWithContext(ctx, "POST", s.Provider.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return t, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := s.client().Do(req)
	if err != nil {
		return t, apperr.Unavailablef("the %s token endpoint is unreachable", Slug)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusUnauthorized:
		return t, errRejected
	case res.StatusCode != http.StatusOK:
		return t, apperr.Unavailablef("the %s token endpoint answered %d", Slug, res.StatusCode)
	}
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" {
		return t, apperr.Unavailablef("the %s token endpoint sent an unreadable answer", Slug)
	}
	return t, nil
}

// api calls a Helix-style endpoint with the app's Client-Id and the user's token.
func (s *Service) api(ctx context.Context, accessToken, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.Provider.APIURL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Client-Id", s.Provider.ClientID)
	req.Header.Set("Authorization", "Bearer "+accessToken)
	res, err := s.client().Do(req)
	if err != nil {
		return 0, apperr.Unavailablef("the %s API is unreachable", Slug)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		return res.StatusCode, nil
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(out); err != nil {
		return res.StatusCode, apperr.Unavailablef("the %s API sent an unreadable answer", Slug)
	}
	return res.StatusCode, nil
}

// sealFor seals a token bound to the integration's user and platform.
func (s *Service) sealFor(userID, tok string) (string, error) {
	return s.Box.Seal([]byte(tok), []byte("integration:"+Slug+":"+userID))
}

func (s *Service) open(i Integration, sealed string) (string, error) {
	b, err := s.Box.Open(sealed, []byte("integration:"+Slug+":"+i.UserID))
	return string(b), err
}

// Callback serves GET /v1/integrations/callback/{platform}: the provider
// sends the user back here with code and state (RFC 6749 §4.1.2).
func (h *Handler) Callback(w http.ResponseWriter, r *http.Request) {
	if err := checkSlug(chi.URLParam(r, "platform")); err != nil {
		httpx.Error(w, r, err)
		return
	}
	q := r.URL.Query()
	st, err := h.S.spendState(w, r, q.Get("state"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if e := q.Get("error"); e != "" {
		http.Redirect(w, r, withQuery(st.Redirect, "error", e), http.StatusFound)
		return
	}
	code := q.Get("code")
	if code == "" {
		httpx.Error(w, r, apperr.Bad("code is required"))
		return
	}
	id, err := h.S.complete(r.Context(), st, code)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	http.Redirect(w, r, withQuery(st.Redirect, "integration_id", id), http.StatusFound)
}

// spendState opens the callback's state, checks it belongs to this
// platform and to the browser that started the connection, and uses it up.
func (s *Service) spendState(w http.ResponseWriter, r *http.Request, raw string) (state, error) {
	st, err := s.openState(raw)
	if err != nil {
		return st, err
	}
	if st.Platform != Slug || !s.redirectAllowed(st.Redirect) {
		return st, apperr.Bad("invalid or tampered state")
	}
	// Only the browser that started the connection completes it, and only
	// that one is sent on to its redirect_uri: before the state is used up,
	// so a foreign browser cannot spend it.
	if err := s.boundTo(r, st); err != nil {
		return st, err
	}
	s.clearStateCookie(w)
	// Single use: the first callback with a state wins (RFC 6749 §10.12).
	first, err := s.Cache.SetNX(r.Context(), "integration:state:"+st.Nonce, []byte{1}, StateTTL+time.Minute)
	if err != nil {
		return st, apperr.Unavailablef("the cache is unavailable")
	}
	if !first {
		return st, apperr.Bad("this state has already been used; connect again")
	}
	return st, nil
}

// platformUser is the connected account as the platform's /users answers.
type platformUser struct {
	ID              string `json:"id"`
	Login           string `json:"login"`
	DisplayName     string `json:"display_name"`
	ProfileImageURL string `json:"profile_image_url"`
}

// complete exchanges code for tokens, reads the platform account they
// belong to, and stores the integration (sealed tokens) for the state's
// user, returning its id.
func (s *Service) complete(ctx context.Context, st state, code string) (string, error) {
	tok, err := s.token(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {s.callbackURL()}})
	if errors.Is(err, errRejected) {
		return "", apperr.Bad("the %s platform rejected the authorization code", Slug)
	}
	if err != nil {
		return "", err
	}
	var users struct {
		Data []platformUser `json:"data"`
	}
	status, err := s.api(ctx, tok.AccessToken, "/users", &users)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK || len(users.Data) == 0 || users.Data[0].ID == "" {
		return "", apperr.Unavailablef("the %s API did not return the connected user", Slug)
	}
	pu := users.Data[0]
	scopes := tok.scopes()
	if scopes == nil {
		scopes = st.Scopes
	}
	access, err := s.sealFor(st.User, tok.AccessToken)
	if err != nil {
		return "", err
	}
	var refresh any
	if tok.RefreshToken != "" {
		sealed, err := s.sealFor(st.User, tok.RefreshToken)
		if err != nil {
			return "", err
		}
		refresh = sealed
	}
	now := s.Clock.Now()
	var exp any
	if tok.ExpiresIn > 0 {
		exp = db.TS(now.Add(time.Duration(tok.ExpiresIn) * time.Second))
	}
	var id string
	err = s.DB.QueryRowContext(ctx, `INSERT INTO integrations (id, user_id, platform_slug, platform_user_id, username, display_name,
			profile_image_url, scopes, access_token, refresh_token, token_expires_at, is_active, bot_status, connected_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, TRUE, 'active', $12, $12)
		ON CONFLICT (user_id, platform_slug, platform_user_id) DO UPDATE SET username = excluded.username,
			display_name = excluded.display_name, profile_image_url = excluded.profile_image_url, scopes = excluded.scopes,
			access_token = excluded.access_token, refresh_token = excluded.refresh_token, token_expires_at = excluded.token_expires_at,
			is_active = TRUE, updated_at = excluded.updated_at
		RETURNING id`,
		uuid.NewString(), st.User, Slug, pu.ID, pu.Login, nullable(pu.DisplayName), nullable(pu.ProfileImageURL), db.JSON(scopes),
		access, refresh, exp, db.TS(now)).Scan(&id)
	if db.IsForeignKeyViolation(err) {
		return "", apperr.NotFoundf("the user who started the connection no longer exists")
	}
	return id, err
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// withQuery adds one query parameter to a URL, keeping the ones it has.
func withQuery(raw, k, v string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// ---- operations on one integration ----

// Disconnect deletes the caller's integration id with its tokens.
func (s *Service) Disconnect(ctx context.Context, id string) error {
	i, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	_, err = s.DB.ExecContext(ctx, `DELETE FROM integrations WHERE id = $1 AND user_id = $2`, i.ID, i.UserID)
	return err
}

// Delete serves DELETE /v1/integrations/{id}.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	err := h.S.Disconnect(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"success": true, "message": "Integration disconnected"}, err)
}

// refresh uses the refresh_token grant (RFC 6749 §6) and stores the new tokens.
func (s *Service) refresh(ctx context.Context, i *Integration) (time.Time, error) {
	if i.refreshToken == "" {
		return time.Time{}, apperr.Bad("this integration has no refresh token; connect the account again")
	}
	rt, err := s.open(*i, i.refreshToken)
	if err != nil {
		return time.Time{}, fmt.Errorf("integrations: open refresh token: %w", err)
	}
	tok, err := s.token(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	if errors.Is(err, errRejected) {
		_, _ = s.DB.ExecContext(ctx, `UPDATE integrations SET is_active = FALSE, updated_at = $1 WHERE id = $2`, db.TS(s.Clock.Now()), i.ID)
		return time.Time{}, apperr.Bad("the %s platform refused the refresh token; connect the account again", Slug)
	}
	if err != nil {
		return time.Time{}, err
	}
	now := s.Clock.Now()
	exp := now.Add(time.Duration(max(tok.ExpiresIn, 0)) * time.Second)
	access, err := s.sealFor(i.UserID, tok.AccessToken)
	if err != nil {
		return time.Time{}, err
	}
	refresh := i.refreshToken
	if tok.RefreshToken != "" {
		if refresh, err = s.sealFor(i.UserID, tok.RefreshToken); err != nil {
			return time.Time{}, err
		}
	}
	if _, err := s.DB.ExecContext(ctx, `UPDATE integrations SET access_token = $1, refresh_token = $2, token_expires_at = $3,
		last_refreshed_at = $4, is_active = TRUE, updated_at = $4 WHERE id = $5`, access, refresh, db.TS(exp), db.TS(now), i.ID); err != nil {
		return time.Time{}, err
	}
	i.accessToken, i.refreshToken, i.tokenExpiresAt, i.IsActive = access, refresh, &exp, true
	return exp, nil
}

// Refresh renews the access token of the caller's integration id with its
// refresh token and returns when the new one expires. A refresh token the
// platform refuses deactivates the integration.
func (s *Service) Refresh(ctx context.Context, id string) (time.Time, error) {
	i, err := s.Get(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	return s.refresh(ctx, &i)
}

// Refresh serves POST /v1/integrations/{id}/refresh.
func (h *Handler) Refresh(w http.ResponseWriter, r *http.Request) {
	exp, err := h.S.Refresh(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"success": true, "message": "Token refreshed", "expires_at": exp}, err)
}

// Stats is the channel statistics block.
type Stats struct {
	Followers      int       `json:"followers"`
	Subscribers    int       `json:"subscribers"`
	IsLive         bool      `json:"is_live"`
	CurrentViewers int       `json:"current_viewers"`
	StreamTitle    *string   `json:"stream_title"`
	GameName       *string   `json:"game_name"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Stats reads the channel statistics of the caller's integration id now
// from the platform: followers, subscribers and the live stream. An
// expired access token is refreshed first.
func (s *Service) Stats(ctx context.Context, id string) (Stats, error) {
	i, err := s.Get(ctx, id)
	if err != nil {
		return Stats{}, err
	}
	if !i.IsActive {
		return Stats{}, apperr.Bad("this integration is inactive; connect the account again")
	}
	// An expired access token is refreshed first.
	if i.tokenExpiresAt != nil && !s.Clock.Now().Before(*i.tokenExpiresAt) {
		if _, err := s.refresh(ctx, &i); err != nil {
			return Stats{}, err
		}
	}
	access, err := s.open(i, i.accessToken)
	if err != nil {
		return Stats{}, fmt.Errorf("integrations: open access token: %w", err)
	}
	bid := url.QueryEscape(i.PlatformUserID)
	var total struct {
		Total int `json:"total"`
	}
	var st Stats
	status, err := s.api(ctx, access, "/channels/followers?broadcaster_id="+bid, &total)
	if err != nil {
		return Stats{}, err
	}
	if status == http.StatusUnauthorized {
		return Stats{}, apperr.Bad("the %s platform refused the access token; refresh or connect again", Slug)
	}
	if status != http.StatusOK {
		return Stats{}, apperr.Unavailablef("the %s API answered %d", Slug, status)
	}
	st.Followers = total.Total
	total.Total = 0
	// Subscriber counts need channel:read:subscriptions (and a partner channel);
	// without them the platform answers 401/403 and the count is 0.
	status, err = s.api(ctx, access, "/subscriptions?broadcaster_id="+bid, &total)
	if err != nil {
		return Stats{}, err
	}
	if status == http.StatusOK {
		st.Subscribers = total.Total
	}
	var streams struct {
		Data []struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			GameName    string `json:"game_name"`
			ViewerCount int    `json:"viewer_count"`
		} `json:"data"`
	}
	status, err = s.api(ctx, access, "/streams?user_id="+bid, &streams)
	if err != nil {
		return Stats{}, err
	}
	if status != http.StatusOK {
		return Stats{}, apperr.Unavailablef("the %s API answered %d", Slug, status)
	}
	if len(streams.Data) > 0 && streams.Data[0].Type == "live" {
		live := streams.Data[0]
		st.IsLive, st.CurrentViewers = true, live.ViewerCount
		st.StreamTitle, st.GameName = &live.Title, &live.GameName
	}
	st.UpdatedAt = s.Clock.Now()
	return st, nil
}

// Stats serves POST /v1/integrations/{id}/stats.
func (h *Handler) Stats(w http.ResponseWriter, r *http.Request) {
	st, err := h.S.Stats(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"success": true, "stats": st}, err)
}

// BotStatuses are the values of bot_status.
var BotStatuses = []string{"active", "paused", "disabled"}

// SetBotStatus sets the bot status of the caller's integration id: one of
// BotStatuses (nil: none given).
func (s *Service) SetBotStatus(ctx context.Context, id string, status *string) error {
	i, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if status == nil || !slices.Contains(BotStatuses, *status) {
		return apperr.Invalid("bot_status is required: one of %s", strings.Join(BotStatuses, ", "))
	}
	_, err = s.DB.ExecContext(ctx, `UPDATE integrations SET bot_status = $1, updated_at = $2 WHERE id = $3`,
		*status, db.TS(s.Clock.Now()), i.ID)
	return err
}

// SetBotStatus serves PATCH /v1/integrations/{id}/streamplatform-status.
func (h *Handler) SetBotStatus(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := chi.URLParam(r, "id")
	var in struct {
		BotStatus *string `json:"bot_status"`
	}
	if err := httpx.Decode(r, &in); err != nil {
		// An integration that is not the caller's answers 404 before a
		// body that cannot be read, as the service checks it first.
		if _, err2 := h.S.Get(ctx, id); err2 != nil {
			err = err2
		}
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.SetBotStatus(ctx, id, in.BotStatus); err != nil {
		httpx.Error(w, r, err)
		return
	}
	// in.BotStatus may be nil when the service refused it: read it only now.
	httpx.JSON(w, http.StatusOK, map[string]any{"success": true, "bot_status": *in.BotStatus})
}
