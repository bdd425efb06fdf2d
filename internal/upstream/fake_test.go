package upstream

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
)

// The fakes below are real HTTP servers speaking each provider's formats:
// an authorization endpoint that redirects back with a code, a token
// endpoint that checks the client's credentials the way the provider reads
// them, the redirect URI and the PKCE verifier, and the provider's user API.

const (
	publicURL    = "https://id.example.test"
	clientID     = "client-123"
	clientSecret = "secret-that-must-not-leak"
)

// grant is what the fake's authorization endpoint remembers about a code.
type grant struct {
	challenge, method, nonce, redirect, scope string
}

// fakeProvider is one fake upstream provider.
type fakeProvider struct {
	t   *testing.T
	srv *httptest.Server
	mux *http.ServeMux

	// clientAuth is how the token endpoint reads the client: "basic" or "post".
	clientAuth string
	// formToken answers the token request form-encoded (GitHub's default).
	formToken bool
	// idToken makes the OpenID Connect ID token for a grant; nil for plain OAuth.
	idToken func(g grant) string

	mu     sync.Mutex
	codes  map[string]grant
	tokens map[string]bool
	// override replaces the handler of a path (failure cases).
	override map[string]http.HandlerFunc
}

func newFakeProvider(t *testing.T, clientAuth string) *fakeProvider {
	f := &fakeProvider{t: t, mux: http.NewServeMux(), clientAuth: clientAuth,
		codes: map[string]grant{}, tokens: map[string]bool{}, override: map[string]http.HandlerFunc{}}
	f.mux.HandleFunc("GET /authorize", f.authorize)
	f.mux.HandleFunc("POST /token", f.token)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		h := f.override[r.URL.Path]
		f.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) URL() string { return f.srv.URL }

// set changes the fake's knobs under its lock: the server's goroutines read them.
func (f *fakeProvider) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// fail makes path answer with h from now on (nil restores the normal answer).
func (f *fakeProvider) fail(path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override[path] = h
}

// authorize is the provider's consent screen, already approved: it checks
// the request (RFC 6749 §4.1.1, RFC 7636 §4.3) and redirects back with a code.
func (f *fakeProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != clientID || q.Get("state") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	oidc := f.idToken != nil
	f.mu.Unlock()
	if oidc && q.Get("nonce") == "" {
		http.Error(w, "nonce required", http.StatusBadRequest)
		return
	}
	code := randomToken()
	f.mu.Lock()
	f.codes[code] = grant{challenge: q.Get("code_challenge"), method: q.Get("code_challenge_method"),
		nonce: q.Get("nonce"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	f.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token is the token endpoint (RFC 6749 §4.1.3, RFC 7636 §4.6).
func (f *fakeProvider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	id, secret, basic := r.BasicAuth()
	if f.clientAuth == "post" {
		if basic {
			tokenError(w, "invalid_client")
			return
		}
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else if !basic {
		tokenError(w, "invalid_client")
		return
	}
	if id != clientID || secret != clientSecret {
		tokenError(w, "invalid_client")
		return
	}
	f.mu.Lock()
	g, ok := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	f.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirect ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		tokenError(w, "invalid_grant")
		return
	}
	access := "at-" + randomToken()
	f.mu.Lock()
	f.tokens[access] = true
	form, idToken := f.formToken, f.idToken
	f.mu.Unlock()
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
	writeJSON(w, body)
}

// authorized checks the bearer token of a user-API request.
func (f *fakeProvider) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	valid := ok && f.tokens[tok]
	f.mu.Unlock()
	if !valid {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"message": "401: Unauthorized", "code": 0})
		return false
	}
	return true
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "refused by the fake"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ---- OpenID Connect ----

// fakeOIDC is a fake OpenID Connect provider: discovery, JWKS with an RSA
// key, RS256 ID tokens and UserInfo.
type fakeOIDC struct {
	*fakeProvider
	key *rsa.PrivateKey
	kid string

	// Knobs, guarded by fakeProvider.mu (use set).
	issuer string                      // the issuer the discovery document names (default the URL)
	claims map[string]any              // claims of the next ID token, beside the standard ones
	tweak  func(c map[string]any)      // changes the standard claims (tests of refusals)
	signer func(payload []byte) string // replaces the signing (tests of bad signatures)
	info   map[string]any              // the UserInfo answer
	now    func() time.Time            // the provider's clock
}

func newFakeOIDC(t *testing.T, now func() time.Time) *fakeOIDC {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o := &fakeOIDC{fakeProvider: newFakeProvider(t, "basic"), key: key, kid: "k1", now: now,
		claims: map[string]any{}}
	o.set(func() { o.idToken = o.makeIDToken })
	o.mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		iss := o.issuer
		o.mu.Unlock()
		if iss == "" {
			iss = o.URL()
		}
		writeJSON(w, map[string]any{
			"issuer": iss, "authorization_endpoint": o.URL() + "/authorize", "token_endpoint": o.URL() + "/token",
			"jwks_uri": o.URL() + "/jwks", "userinfo_endpoint": o.URL() + "/userinfo",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"code_challenge_methods_supported":      []string{"S256"},
		})
	})
	o.mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &o.key.PublicKey, KeyID: o.kid, Algorithm: "RS256", Use: "sig"}}})
	})
	o.mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		if !o.authorized(w, r) {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		writeJSON(w, o.info)
	})
	return o
}

func (o *fakeOIDC) makeIDToken(g grant) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	iss := o.issuer
	if iss == "" {
		iss = o.URL()
	}
	c := map[string]any{"iss": iss, "sub": "oidc-user-1", "aud": clientID,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": g.nonce}
	for k, v := range o.claims {
		c[k] = v
	}
	if o.tweak != nil {
		o.tweak(c)
	}
	payload, _ := json.Marshal(c)
	if o.signer != nil {
		return o.signer(payload)
	}
	return signRS256(o.t, o.key, o.kid, payload)
}

func signRS256(t *testing.T, key *rsa.PrivateKey, kid string, payload []byte) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ---- driving a sign-in ----

// rig is a registry and a flow on a fake clock and an in-process cache.
type rig struct {
	reg  *Registry
	flow *Flow
	clk  *clocktest.Fake
}

func newRig(t *testing.T, env map[string]string) *rig {
	t.Helper()
	return newRigWith(t, env, clocktest.NewFake(time.Now()))
}

// newRigWith makes a rig on the clock clk, shared with a fake provider.
func newRigWith(t *testing.T, env map[string]string, clk *clocktest.Fake) *rig {
	t.Helper()
	reg, err := FromEnv(func(k string) string { return env[k] }, publicURL)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetClock(clk.Now)
	reg.SetTimeout(2 * time.Second)
	return &rig{reg: reg, clk: clk, flow: &Flow{Cache: cache.NewMemory(clk.Now), PublicURL: publicURL, Secure: true, Now: clk.Now}}
}

// begin runs GET /login/{slug} in a browser with the given cookies and
// returns the provider URL and the browser's binding cookie.
func (g *rig) begin(t *testing.T, slug, returnTo string, cookies ...*http.Cookie) (string, *http.Cookie) {
	t.Helper()
	p, err := g.reg.Get(slug)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/login/"+slug, nil)
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	to, err := g.flow.Begin(context.Background(), w, r, p, returnTo)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	var bind *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == BindingCookie {
			bind = c
		}
	}
	if bind == nil {
		t.Fatal("Begin set no binding cookie")
	}
	return to, bind
}

// consent follows the provider URL to the fake's authorization endpoint and
// returns the callback URL it redirects to.
func consent(t *testing.T, authURL string) *url.URL {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %d", resp.StatusCode)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// callback builds the request of the callback URL in a browser with cookies.
func callback(u *url.URL, cookies ...*http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", u.RequestURI(), nil)
	for _, c := range cookies {
		if c != nil {
			r.AddCookie(c)
		}
	}
	return r
}

// signIn runs a whole sign-in with slug and returns the identity.
func (g *rig) signIn(t *testing.T, slug string) (*Identity, error) {
	t.Helper()
	to, bind := g.begin(t, slug, "/account")
	cb := consent(t, to)
	if want := "/login/" + slug + "/callback"; cb.Path != want || cb.Host != "id.example.test" {
		t.Fatalf("redirect URI = %s, want %s%s", cb, publicURL, want)
	}
	c, err := g.flow.Finish(context.Background(), callback(cb, bind), slug)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	p, _ := g.reg.Get(slug)
	return p.Exchange(context.Background(), c.Code, c.Params)
}

// oauthEnv configures slug against the fake f.
func oauthEnv(slug, api string, f *fakeProvider) map[string]string {
	pre := envPrefix(slug)
	return map[string]string{
		pre + "CLIENT_ID": clientID, pre + "CLIENT_SECRET": clientSecret,
		pre + "AUTH_URL": f.URL() + "/authorize", pre + "TOKEN_URL": f.URL() + "/token",
		pre + "API_URL": f.URL() + api,
	}
}
