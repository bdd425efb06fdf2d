// Package upstreamtest runs fake upstream identity providers over real HTTP:
// plain OAuth 2.0 (RFC 6749) with PKCE (RFC 7636), Discord, GitHub and
// Twitch with their user APIs' formats, and OpenID Connect with discovery,
// a JWKS and RS256 ID tokens. Tests point hmid at a fake with the
// HMID_LOGIN_<SLUG>_* variables from Env and sign in through it.
//
// It lives apart from package upstream so that only tests link it, and it
// does not import upstream, whose own tests use it.
package upstreamtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"hmid/internal/httpx"
)

// The client credentials every fake accepts at its token endpoint.
const (
	ClientID     = "client-123"
	ClientSecret = "secret-that-must-not-leak"
)

// grant is what the authorization endpoint remembers about a code until the
// token endpoint redeems it.
type grant struct {
	challenge, nonce, redirect, scope string
}

// Provider is a fake OAuth 2.0 provider: an authorization endpoint that
// approves at once (or denies, see Deny) and redirects back with a code, a
// token endpoint that checks the client's credentials the way the provider
// reads them, the redirect URI and the PKCE verifier, and whatever user API
// the test registers with HandleFunc. It is safe for concurrent use; its
// exported fields are knobs that the server's goroutines read, so change
// them inside Set.
type Provider struct {
	t   testing.TB
	srv *httptest.Server
	mux *http.ServeMux
	// clientAuth is how the token endpoint reads the client: "basic" or
	// "post" (RFC 6749 §2.3.1). It does not change after New.
	clientAuth string
	// apiPath is the user API's base below URL(), for Env.
	apiPath string

	mu sync.Mutex

	// FormToken makes the token endpoint answer form-encoded, as GitHub
	// does unless asked for JSON, instead of JSON (RFC 6749 §5.1).
	FormToken bool
	// Deny makes the authorization endpoint answer as if the person
	// refused consent: a redirect back with error=access_denied and the
	// state (RFC 6749 §4.1.2.1).
	Deny bool
	// User is the user object the provider's user API answers, in that
	// provider's own format; SetPerson fills it from a Person.
	User map[string]any
	// Emails is GitHub's GET /user/emails answer.
	Emails []map[string]any

	// idToken makes the OpenID Connect ID token of a grant; nil for plain
	// OAuth, where the authorization request needs no nonce.
	idToken func(g grant) string
	// person turns a Person into the knobs above; nil where there is no
	// user API.
	person func(Person)
	codes  map[string]grant
	tokens map[string]bool
	// override replaces the handler of a path (failure cases).
	override map[string]http.HandlerFunc
}

// New starts a plain OAuth 2.0 fake whose token endpoint takes the client's
// credentials with HTTP Basic ("basic") or in the form body ("post"). It
// serves GET /authorize and POST /token; the test adds its user API with
// HandleFunc. The server stops when the test ends.
func New(t testing.TB, clientAuth string) *Provider {
	t.Helper()
	if clientAuth != "basic" && clientAuth != "post" {
		t.Fatalf("upstreamtest.New: client authentication %q, want basic or post", clientAuth)
	}
	p := &Provider{t: t, mux: http.NewServeMux(), clientAuth: clientAuth,
		codes: map[string]grant{}, tokens: map[string]bool{}, override: map[string]http.HandlerFunc{}}
	p.mux.HandleFunc("GET /authorize", p.authorize)
	p.mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		h := p.override[r.URL.Path]
		p.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		p.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the fake's base URL, http://127.0.0.1:port without a slash.
func (p *Provider) URL() string { return p.srv.URL }

// Close stops the server before the test ends, so that the provider is
// unreachable.
func (p *Provider) Close() { p.srv.Close() }

// HandleFunc adds a handler to the fake, with http.ServeMux's patterns
// ("GET /api/users/@me").
func (p *Provider) HandleFunc(pattern string, h http.HandlerFunc) { p.mux.HandleFunc(pattern, h) }

// ServeDefault answers r as the fake does when no Fail override is set, so
// an override can wrap the normal answer (delay it, say).
func (p *Provider) ServeDefault(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Set runs fn under the fake's lock: change the exported knobs inside it.
func (p *Provider) Set(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn()
}

// Fail makes path answer with h from now on; a nil h restores the normal
// answer.
func (p *Provider) Fail(path string, h http.HandlerFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h == nil {
		delete(p.override, path)
		return
	}
	p.override[path] = h
}

// SetPerson makes the next sign-ins sign in as who, in the provider's own
// format (see NewDiscord, NewGitHub, NewTwitch and NewOIDC for how each maps
// it). It must be called from the test's goroutine; a fake without a user
// API (one from New) fails the test.
func (p *Provider) SetPerson(who Person) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.person == nil {
		p.t.Fatal("upstreamtest: SetPerson on a fake without a user API")
		return
	}
	p.person(who)
}

// Env returns the variables that configure slug (discord, twitch or
// github) against this fake: CLIENT_ID, CLIENT_SECRET, AUTH_URL, TOKEN_URL
// and API_URL, the base of the user API.
func (p *Provider) Env(slug string) map[string]string {
	pre := envPrefix(slug)
	return map[string]string{
		pre + "CLIENT_ID": ClientID, pre + "CLIENT_SECRET": ClientSecret,
		pre + "AUTH_URL": p.URL() + "/authorize", pre + "TOKEN_URL": p.URL() + "/token",
		pre + "API_URL": p.URL() + p.apiPath,
	}
}

// authorize is the consent screen, already answered: it checks the request
// (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core §3.1.2.1 for the
// nonce) and redirects back with a code, or with access_denied under Deny.
// A request it cannot redirect back for gets a 400, as RFC 6749 §4.1.2.1
// asks of a bad client or redirect URI.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || !back.IsAbs() || back.Host == "" || q.Get("client_id") != ClientID {
		http.Error(w, "bad client or redirect URI", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("state") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	oidc, deny := p.idToken != nil, p.Deny
	p.mu.Unlock()
	if oidc && q.Get("nonce") == "" {
		http.Error(w, "nonce required", http.StatusBadRequest)
		return
	}
	v := back.Query()
	if deny {
		v.Set("error", "access_denied")
	} else {
		code := randomToken()
		p.mu.Lock()
		p.codes[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"),
			redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
		p.mu.Unlock()
		v.Set("code", code)
	}
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token is the token endpoint (RFC 6749 §4.1.3, RFC 7636 §4.6). A code
// works once, whatever the outcome, as RFC 6749 §4.1.2 asks.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	id, secret, basic := r.BasicAuth()
	if p.clientAuth == "post" {
		if basic {
			tokenError(w, "invalid_client")
			return
		}
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else if !basic {
		tokenError(w, "invalid_client")
		return
	}
	if id != ClientID || secret != ClientSecret {
		tokenError(w, "invalid_client")
		return
	}
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirect ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		tokenError(w, "invalid_grant")
		return
	}
	access := "at-" + randomToken()
	p.mu.Lock()
	p.tokens[access] = true
	form, idToken := p.FormToken, p.idToken
	p.mu.Unlock()
	if form {
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		_, _ = w.Write([]byte(url.Values{"access_token": {access}, "scope": {g.scope}, "token_type": {"bearer"}}.Encode()))
		return
	}
	body := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600,
		"refresh_token": "rt-" + randomToken(), "scope": g.scope}
	if idToken != nil {
		body["id_token"] = idToken(g)
	}
	httpx.JSON(w, http.StatusOK, body)
}

// Authorized checks the bearer token of a user-API request (RFC 6750 §2.1)
// against those the token endpoint issued; when it fails it has answered
// 401 and the handler must stop.
func (p *Provider) Authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	valid := ok && p.tokens[tok]
	p.mu.Unlock()
	if !valid {
		httpx.JSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
		return false
	}
	return true
}

// serveUser answers the user API with body(), built under the lock from
// the knobs, once the bearer token checks out.
func (p *Provider) serveUser(w http.ResponseWriter, r *http.Request, body func() any) {
	if !p.Authorized(w, r) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	httpx.JSON(w, http.StatusOK, body())
}

// Consent follows authURL, the authorization URL hmid sent the browser to,
// and returns the callback URL the fake redirects back to, without
// following it: the request hmid's callback would get. It must be called
// from the test's goroutine.
func Consent(t testing.TB, authURL string) *url.URL {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		t.Fatalf("authorize answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Merge combines the variables of several fakes into one environment. The
// HMID_LOGIN_PROVIDERS lists of generic providers are joined; for any other
// variable a later map wins.
func Merge(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	var generic []string
	for _, e := range envs {
		maps.Copy(out, e)
		if s := e[providersVar]; s != "" {
			generic = append(generic, s)
		}
	}
	if len(generic) > 0 {
		out[providersVar] = strings.Join(generic, ",")
	}
	return out
}

// providersVar lists hmid's generic OpenID Connect providers.
const providersVar = "HMID_LOGIN_PROVIDERS"

// envPrefix is the variable prefix of slug, as hmid reads it:
// HMID_LOGIN_MY_CORP_ for my-corp.
func envPrefix(slug string) string {
	return "HMID_LOGIN_" + strings.ToUpper(strings.ReplaceAll(slug, "-", "_")) + "_"
}

// tokenError is an error answer of the token endpoint (RFC 6749 §5.2).
func tokenError(w http.ResponseWriter, code string) {
	httpx.JSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": "refused by the fake"})
}

// randomToken makes codes and access tokens no one can guess.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
