package upstream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"hmid/internal/cache"
)

// BindingCookie is the cookie that binds a sign-in to the browser that
// started it.
const BindingCookie = "hmid_upstream"

// DefaultLifetime is how long a started sign-in may take.
const DefaultLifetime = 10 * time.Minute

// Flow keeps sign-ins between Begin (GET /login/{slug}) and Finish (GET
// /login/{slug}/callback).
//
// The state is 256 random bits; the cache keeps, under the SHA-256 of the
// state, the slug, the PKCE verifier, the nonce, the return path, the start
// time and the SHA-256 of the browser's binding cookie. The cookie holds 256
// random bits of its own, set by the first Begin of a browser and reused by
// later ones, so two sign-ins in two tabs both work. A callback is accepted
// only with the cookie whose hash the state was stored with: a callback URL
// made in one browser and opened in another (login CSRF, RFC 6749 §10.12;
// RFC 9700 §4.7) is refused. The state is single use: a marker set with
// SetNX decides which of two racing callbacks wins, so this holds across
// instances sharing Redis.
type Flow struct {
	// Cache is the shared cache (Redis with several instances).
	Cache cache.Cache
	// PublicURL is HMID_PUBLIC_URL; an absolute return_to under it is
	// turned into its local path.
	PublicURL string
	// Secure marks the cookie Secure (HMID_PUBLIC_URL is https).
	Secure bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Lifetime bounds a sign-in (default DefaultLifetime).
	Lifetime time.Duration
}

// Callback is a finished sign-in's data, to pass to Provider.Exchange.
type Callback struct {
	// Slug is the provider the sign-in was started with.
	Slug string
	// Code is the authorization code; empty when the provider answered
	// with an error.
	Code string
	// Params are the state, PKCE verifier and nonce of the sign-in.
	Params Params
	// ReturnTo is the local path to continue at after signing in.
	ReturnTo string
	// Started is when Begin ran.
	Started time.Time
	// LinkUser is the user who started the sign-in with BeginLink to
	// connect the provider's account to theirs; "" for a sign-in.
	LinkUser string
}

// pending is what the cache holds for a started sign-in.
type pending struct {
	Slug     string `json:"slug"`
	Verifier string `json:"verifier"`
	Nonce    string `json:"nonce"`
	ReturnTo string `json:"return_to"`
	Binding  string `json:"binding"` // hex SHA-256 of the cookie value
	Started  int64  `json:"started"` // Unix microseconds
	Link     string `json:"link,omitempty"`
}

func (f *Flow) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Flow) lifetime() time.Duration {
	if f.Lifetime > 0 {
		return f.Lifetime
	}
	return DefaultLifetime
}

// keep is how long the cache holds a state and its used marker: twice the
// lifetime, so a late callback is told "expired" and a replay "already
// used" rather than "not valid" for a while.
func (f *Flow) keep() time.Duration { return 2 * f.lifetime() }

// Begin starts a sign-in with p for the browser of r: it stores the state,
// sets the binding cookie on w and returns the provider URL to redirect to.
// returnTo is kept only as a local path (see LocalPath); anything else
// becomes "/". It fails with ErrProvider when p cannot build its URL (an
// OpenID Connect issuer whose discovery fails) and with the cache's error
// when the cache is down.
func (f *Flow) Begin(ctx context.Context, w http.ResponseWriter, r *http.Request, p Provider, returnTo string) (string, error) {
	return f.begin(ctx, w, r, p, returnTo, "")
}

// BeginLink is Begin for a signed-in user who connects another provider's
// account to theirs: the Callback carries userID as LinkUser, so the
// callback can insist that the same user is still signed in.
func (f *Flow) BeginLink(ctx context.Context, w http.ResponseWriter, r *http.Request, p Provider, returnTo, userID string) (string, error) {
	return f.begin(ctx, w, r, p, returnTo, userID)
}

func (f *Flow) begin(ctx context.Context, w http.ResponseWriter, r *http.Request, p Provider, returnTo, link string) (string, error) {
	binding := bindingOf(r)
	if binding == "" {
		binding = randomToken()
	}
	params := Params{State: randomToken(), Verifier: oauth2.GenerateVerifier(), Nonce: randomToken()}
	to, err := p.AuthCodeURL(ctx, params)
	if err != nil {
		return "", err
	}
	rec, _ := json.Marshal(pending{
		Slug: p.Slug(), Verifier: params.Verifier, Nonce: params.Nonce,
		ReturnTo: LocalPath(returnTo, f.PublicURL), Binding: hashHex(binding),
		Started: f.now().UnixMicro(), Link: link,
	})
	if err := f.Cache.Set(ctx, stateKey(params.State), rec, f.keep()); err != nil {
		return "", err
	}
	// The cookie's lifetime restarts with each sign-in; an existing value
	// is kept so sign-ins started in other tabs stay valid.
	http.SetCookie(w, &http.Cookie{
		Name: BindingCookie, Value: binding, Path: "/login/", MaxAge: int(f.lifetime().Seconds()),
		HttpOnly: true, Secure: f.Secure, SameSite: http.SameSiteLaxMode,
	})
	return to, nil
}

// Finish checks the callback r for the provider slug and consumes its state.
//
// Errors: ErrStateInvalid (state missing, malformed, unknown or started for
// another provider), ErrStateExpired, ErrStateReplayed, ErrStateBrowser (no
// or another binding cookie), ErrCallback (no code). A refused state that
// could still be the real browser's (wrong browser or provider) is not
// consumed, so a stray request cannot cancel someone's sign-in.
//
// When the provider answered with an error (RFC 6749 §4.1.2.1), the state
// is consumed and Finish returns the Callback (for its ReturnTo) together
// with ErrDenied (access_denied) or ErrProvider.
func (f *Flow) Finish(ctx context.Context, r *http.Request, slug string) (*Callback, error) {
	q := r.URL.Query()
	state := q.Get("state")
	if !validToken(state) {
		return nil, newError(ErrStateInvalid, slug, "", nil)
	}
	key := stateKey(state)
	data, err := f.Cache.Get(ctx, key)
	if errors.Is(err, cache.ErrMiss) {
		if used, _ := f.Cache.Get(ctx, usedKey(state)); used != nil {
			return nil, newError(ErrStateReplayed, slug, "", nil)
		}
		return nil, newError(ErrStateInvalid, slug, "", nil)
	}
	if err != nil {
		return nil, err
	}
	var rec pending
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, newError(ErrStateInvalid, slug, "", nil)
	}
	if rec.Slug != slug {
		return nil, newError(ErrStateInvalid, slug, "started for another provider", nil)
	}
	binding := bindingOf(r)
	if binding == "" || subtle.ConstantTimeCompare([]byte(hashHex(binding)), []byte(rec.Binding)) != 1 {
		return nil, newError(ErrStateBrowser, slug, "", nil)
	}
	won, err := f.Cache.SetNX(ctx, usedKey(state), []byte{1}, f.keep())
	if err != nil {
		return nil, err
	}
	if !won {
		return nil, newError(ErrStateReplayed, slug, "", nil)
	}
	if err := f.Cache.Delete(ctx, key); err != nil {
		return nil, err
	}
	started := time.UnixMicro(rec.Started)
	if !f.now().Before(started.Add(f.lifetime())) {
		return nil, newError(ErrStateExpired, slug, "", nil)
	}
	cb := &Callback{
		Slug: rec.Slug, Code: q.Get("code"), ReturnTo: rec.ReturnTo, Started: started, LinkUser: rec.Link,
		Params: Params{State: state, Verifier: rec.Verifier, Nonce: rec.Nonce},
	}
	if e := q.Get("error"); e != "" {
		return cb, providerError(slug, e)
	}
	if cb.Code == "" || len(cb.Code) > 2048 {
		return nil, newError(ErrCallback, slug, "no usable authorization code", nil)
	}
	return cb, nil
}

// providerError is the error of a callback carrying error=… . Only a code
// of RFC 6749's shape is repeated: the callback URL is anyone's to craft.
func providerError(slug, code string) *Error {
	if code == "access_denied" {
		return newError(ErrDenied, slug, "", nil)
	}
	if !oauthErrorCode.MatchString(code) {
		code = "unknown error"
	}
	return newError(ErrProvider, slug, "the provider answered "+code, nil)
}

// LocalPath returns returnTo as a path on this service, or "/". A relative
// path must start with one "/" (not "//host" or "/\host", which browsers
// read as another host); an absolute URL under publicURL (the form of the
// authorization request /v1/oauth/authorize sends to the login page)
// becomes its path and query. Control characters and backslashes are
// refused, so the result is never an open redirect.
func LocalPath(returnTo, publicURL string) string {
	s := returnTo
	if s == "" || len(s) > 4096 || strings.ContainsAny(s, "\\") || hasControl(s) {
		return "/"
	}
	base := strings.TrimRight(publicURL, "/")
	if base != "" && (s == base || strings.HasPrefix(s, base+"/") || strings.HasPrefix(s, base+"?")) {
		var ok bool
		if s, ok = pathUnder(s, base); !ok {
			return "/"
		}
	}
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return "/"
	}
	if u, err := url.Parse(s); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return s
}

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// pathUnder returns the path and query of the absolute URL s, which starts
// with base; false when s is not on base's scheme and host or carries user
// information.
func pathUnder(s, base string) (string, bool) {
	pu, err1 := url.Parse(base)
	u, err2 := url.Parse(s)
	if err1 != nil || err2 != nil || !strings.EqualFold(u.Scheme, pu.Scheme) || !strings.EqualFold(u.Host, pu.Host) || u.User != nil {
		return "", false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p, true
}

// tokenLen is the length of a randomToken.
const tokenLen = 43

// randomToken is 256 random bits, base64url without padding.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validToken accepts what randomToken makes and nothing longer, so a huge or
// odd state is refused before the cache is asked.
func validToken(s string) bool {
	if len(s) != tokenLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// bindingOf returns the browser's binding cookie when it is well formed.
func bindingOf(r *http.Request) string {
	c, err := r.Cookie(BindingCookie)
	if err != nil || !validToken(c.Value) {
		return ""
	}
	return c.Value
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func stateKey(state string) string { return "upstream:state:" + hashHex(state) }
func usedKey(state string) string  { return "upstream:used:" + hashHex(state) }
