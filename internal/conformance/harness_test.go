package conformance

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"hmid/internal/apptest"
)

// redirectURI is the redirect URI of the conformance client (the suite's
// callback URL).
const redirectURI = "https://rp.example/test/a/hmid/callback"

// rp is the suite acting as the relying party against one hmid: its
// registered client and the end user it logs in as.
type rp struct {
	e      *apptest.Env
	disc   map[string]any
	jwks   jose.JSONWebKeySet
	client struct{ ID, Secret string }
	user   apptest.User
}

// newRP registers a third-party confidential client that signs ID tokens
// with RS256 (the suite's static client), creates the end user and reads the
// discovery document and the JWK set.
func newRP(t *testing.T, e *apptest.Env) *rp {
	t.Helper()
	r := &rp{e: e}
	r.user = e.NewUser(t, apptest.UserSpec{Password: "conformance password"})
	d := e.Call(t, "POST", "/v1/oauth/clients", r.user.Token, map[string]any{
		"name": "OpenID conformance suite", "redirect_uris": []string{redirectURI},
		"id_token_signed_response_alg": "RS256",
		"allowed_scopes":               []string{"openid", "profile", "email", "offline_access"},
	}, http.StatusCreated).JSON()["data"].(map[string]any)
	r.client.ID, r.client.Secret = d["id"].(string), d["client_secret"].(string)
	r.disc = e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
	raw := e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).Body
	if err := json.Unmarshal(raw, &r.jwks); err != nil {
		t.Fatalf("JWKS: %v", err)
	}
	return r
}

// result is one module's outcome. A failed condition ends the module; a
// failed warning condition is recorded, and done compares the warnings with
// the ones the module documents as inherent.
type result struct {
	t        *testing.T
	warnings []string
}

func newResult(t *testing.T) *result { return &result{t: t} }

// require is a condition at level FAILURE.
func (r *result) require(ok bool, cond string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf("FAILURE %s %v", cond, args)
	}
}

// warn is a condition at level WARNING.
func (r *result) warn(ok bool, cond string) {
	if !ok {
		r.warnings = append(r.warnings, cond)
	}
}

// done asserts that exactly the expected (inherent, documented) warnings
// were raised.
func (r *result) done(expected ...string) {
	r.t.Helper()
	got := slices.Clone(r.warnings)
	sort.Strings(got)
	sort.Strings(expected)
	if !slices.Equal(got, expected) {
		r.t.Fatalf("warnings %q, want exactly the documented %q", got, expected)
	}
}

// random is a fresh state or nonce.
func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// request is an authorization request of the suite: code flow, scope
// openid, a fresh state and nonce; pairs add or (with "") drop parameters.
func (c *rp) request(pairs ...string) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {c.client.ID}, "redirect_uri": {redirectURI},
		"scope": {"openid"}, "state": {random()}, "nonce": {random()}}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			q.Del(pairs[i])
		} else {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}

// front sends the browser (with session sessionTok, "" for none) to the
// authorization endpoint; the user approves a consent page when one is
// shown. It returns where the browser ends up: the client's callback or
// the login page.
func (c *rp) front(t *testing.T, sessionTok string, q url.Values) *url.URL {
	t.Helper()
	res := c.e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?" + q.Encode(), Token: sessionTok})
	if res.Status == http.StatusOK {
		id, _ := res.JSON()["pending_authorization_id"].(string)
		res = c.e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize/consent", Token: sessionTok,
			Body: map[string]any{"pending_authorization_id": id, "approved": true}})
	}
	if res.Status != http.StatusFound {
		t.Fatalf("authorization endpoint answered %d %s, want a redirect", res.Status, res.Body)
	}
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// isLogin reports whether u is hmid's login page.
func (c *rp) isLogin(u *url.URL) bool {
	return u.Scheme+"://"+u.Host+u.Path == c.e.URL+"/login"
}

// login plays the user at the login page u: a second passes, the user signs
// in (a new session) and the browser follows return_to.
func (c *rp) login(t *testing.T, u *url.URL) (session string, back url.Values) {
	t.Helper()
	rt, err := url.Parse(u.Query().Get("return_to"))
	if err != nil || !strings.HasPrefix(rt.String(), c.e.URL+"/v1/oauth/authorize?") {
		t.Fatalf("login page without the authorization request in return_to: %s", u)
	}
	c.e.Clock.Advance(time.Second)
	session, _ = c.e.NewSession(t, c.user.ID)
	return session, rt.Query()
}

// callback checks the authorization response (RFC 6749 §4.1.2; RFC 9207)
// and returns the code: at the redirect URI, state echoed, iss the issuer.
func (c *rp) callback(r *result, u *url.URL, q url.Values) string {
	r.t.Helper()
	got := u.Query()
	r.require(strings.HasPrefix(u.String(), redirectURI+"?"), "RejectAuthCodeInUrlFragment / redirect to the registered redirect_uri", u)
	r.require(got.Get("error") == "", "CheckIfAuthorizationEndpointError", got.Get("error"), got.Get("error_description"))
	r.require(got.Get("state") == q.Get("state"), "CheckMatchingStateParameter")
	r.require(got.Get("iss") == c.disc["issuer"], "ValidateIssIfPresentInAuthorizationResponse")
	r.require(got.Get("code") != "", "ExtractAuthorizationCodeFromAuthorizationResponse")
	return got.Get("code")
}

// authError checks an error authorization response: at the redirect URI
// with one of codes, state echoed and iss.
func (c *rp) authError(r *result, u *url.URL, q url.Values, codes ...string) string {
	r.t.Helper()
	got := u.Query()
	r.require(strings.HasPrefix(u.String(), redirectURI+"?"), "error returned to the registered redirect_uri", u)
	r.require(slices.Contains(codes, got.Get("error")), "EnsureErrorFromAuthorizationEndpointResponse", got.Get("error"), codes)
	r.require(got.Get("state") == q.Get("state"), "CheckMatchingStateParameter")
	r.require(got.Get("iss") == c.disc["issuer"], "ValidateIssIfPresentInAuthorizationResponse")
	r.require(got.Get("error_description") == "" || !strings.ContainsAny(got.Get("error_description"), "\"\\"), "ValidateErrorDescriptionFromAuthorizationEndpointResponseError")
	return got.Get("error")
}

// tokenResponse is the token endpoint's answer.
type tokenResponse struct {
	status int
	body   map[string]any
}

// exchange redeems code with client_secret_basic (the plan's default) or
// client_secret_post; extra adds form fields.
func (c *rp) exchange(t *testing.T, code, authMethod string, extra ...string) tokenResponse {
	t.Helper()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	return c.token(t, f, authMethod, extra...)
}

// token posts form to the token endpoint, authenticating the client.
func (c *rp) token(t *testing.T, f url.Values, authMethod string, extra ...string) tokenResponse {
	t.Helper()
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	hdr := map[string]string{}
	if authMethod == "client_secret_post" {
		f.Set("client_id", c.client.ID)
		f.Set("client_secret", c.client.Secret)
	} else {
		hdr["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(c.client.ID)+":"+url.QueryEscape(c.client.Secret)))
	}
	res := c.e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: f, Header: hdr})
	var body map[string]any
	_ = json.Unmarshal(res.Body, &body)
	return tokenResponse{status: res.Status, body: body}
}

// checkTokenResponse holds the suite's token response conditions
// (RFC 6749 §5.1, OIDC Core §3.1.3.3) and returns the ID token's claims.
func (c *rp) checkTokenResponse(r *result, tr tokenResponse, nonce string) map[string]any {
	r.t.Helper()
	r.require(tr.status == http.StatusOK, "CheckTokenEndpointHttpStatus200", tr.status, tr.body)
	r.require(tr.body["access_token"] != "" && tr.body["access_token"] != nil, "CheckIfTokenEndpointResponseError / access_token")
	r.require(strings.EqualFold(asString(tr.body["token_type"]), "Bearer"), "CheckForAccessTokenValue / token_type Bearer")
	exp, ok := tr.body["expires_in"].(float64)
	r.warn(ok && exp > 0, "ValidateExpiresIn")
	raw := asString(tr.body["id_token"])
	r.require(raw != "", "ExtractIdTokenFromTokenResponse")
	return c.idToken(r, raw, nonce)
}

// idToken verifies an ID token as the suite does (OIDC Core §3.1.3.7):
// signature with the JWKS key named by kid (RS256), iss, aud, azp, exp,
// iat, sub, nonce and the types of auth_time, acr and amr.
func (c *rp) idToken(r *result, raw, nonce string) map[string]any {
	r.t.Helper()
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	r.require(err == nil && len(jws.Signatures) == 1, "ValidateIdTokenSignature / RS256 JWS", err)
	kid := jws.Signatures[0].Header.KeyID
	r.require(kid != "", "CheckForKeyIdInServerJWKs / kid in the header")
	keys := c.jwks.Key(kid)
	r.require(len(keys) == 1, "CheckForKeyIdInServerJWKs / kid in the JWKS", kid)
	payload, err := jws.Verify(keys[0].Key)
	r.require(err == nil, "ValidateIdTokenSignatureUsingKid", err)
	var claims map[string]any
	r.require(json.Unmarshal(payload, &claims) == nil, "ValidateIdToken / JSON claims")
	now := c.e.Clock.Now().Unix()
	r.require(claims["iss"] == c.disc["issuer"], "ValidateIdToken / iss")
	switch aud := claims["aud"].(type) {
	case string:
		r.require(aud == c.client.ID, "ValidateIdToken / aud")
	case []any:
		r.require(slices.Contains(aud, any(c.client.ID)) && claims["azp"] == c.client.ID, "ValidateIdToken / aud with azp")
	default:
		r.require(false, "ValidateIdToken / aud")
	}
	exp, _ := claims["exp"].(float64)
	iat, _ := claims["iat"].(float64)
	r.require(int64(exp) > now, "ValidateIdToken / exp in the future")
	r.require(iat > 0 && int64(iat) <= now+300, "ValidateIdToken / iat not in the future")
	sub := asString(claims["sub"])
	r.require(sub != "" && len(sub) <= 255, "ValidateIdToken / sub")
	if nonce != "" {
		r.require(claims["nonce"] == nonce, "ValidateIdTokenNonce")
	} else {
		r.require(claims["nonce"] == nil, "ValidateIdTokenNonce / none sent, none returned")
	}
	requireKind[float64](r, claims, "auth_time", "ValidateIdToken / auth_time is a number")
	requireKind[string](r, claims, "acr", "ValidateIdTokenACRClaim / string")
	requireKind[[]any](r, claims, "amr", "ValidateIdToken / amr is an array")
	return claims
}

// userinfo calls the UserInfo endpoint: "get" (Authorization header),
// "post-header" or "post-body" (access_token form field).
func (c *rp) userinfo(r *result, at, how string) map[string]any {
	r.t.Helper()
	q := apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: at}
	switch how {
	case "post-header":
		q.Method, q.Body = "POST", url.Values{}
	case "post-body":
		q = apptest.Req{Method: "POST", Path: "/v1/oauth/userinfo", Body: url.Values{"access_token": {at}}}
	}
	res := c.e.Do(r.t, q)
	r.require(res.Status == http.StatusOK, "CallUserInfoEndpointWithBearerToken", res.Status, string(res.Body))
	r.require(strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), "EnsureUserInfoResponseIsJson (unsigned)")
	m := res.JSON()
	r.require(asString(m["sub"]) != "", "EnsureUserInfoContainsSub")
	checkStandardClaims(r, m)
	return m
}

// checkStandardClaims is ValidateUserInfoStandardClaims with
// EnsureUserInfoUpdatedAtValid (OIDC Core §5.1): the standard claims hmid
// returns have their standard types.
func checkStandardClaims(r *result, m map[string]any) {
	r.t.Helper()
	for _, k := range []string{"sub", "name", "picture", "preferred_username", "locale", "email"} {
		requireKind[string](r, m, k, "ValidateUserInfoStandardClaims / "+k+" is a string")
	}
	requireKind[bool](r, m, "email_verified", "ValidateUserInfoStandardClaims / email_verified is a boolean")
	requireKind[float64](r, m, "updated_at", "EnsureUserInfoUpdatedAtValid")
}

// requireKind is the condition cond that m[key], when present, is a T (a
// claim's JSON type: float64, string, bool, []any).
func requireKind[T any](r *result, m map[string]any, key, cond string) {
	r.t.Helper()
	if v, ok := m[key]; ok {
		_, is := v.(T)
		r.require(is, cond)
	}
}

// flow runs an authorization with the user's session, then the exchange,
// and returns the verified ID token claims and the token answer.
func (c *rp) flow(r *result, q url.Values, authMethod string) (map[string]any, tokenResponse) {
	r.t.Helper()
	code := c.callback(r, c.front(r.t, c.user.Token, q), q)
	tr := c.exchange(r.t, code, authMethod)
	return c.checkTokenResponse(r, tr, q.Get("nonce")), tr
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// discList reads a string array of the discovery document.
func (c *rp) discList(name string) []string {
	var out []string
	list, _ := c.disc[name].([]any)
	for _, v := range list {
		out = append(out, asString(v))
	}
	return out
}

// rsaBits is the size of an RSA JWK's modulus.
func rsaBits(k jose.JSONWebKey) int {
	if pub, ok := k.Key.(*rsa.PublicKey); ok {
		return pub.N.BitLen()
	}
	return 0
}

// reauthenticate sends q with the user's session, requires that the user is
// asked to log in again, logs in and returns the checked claims of the ID
// token the code that comes back is exchanged for (prompt=login, max_age).
func (c *rp) reauthenticate(r *result, q url.Values) map[string]any {
	r.t.Helper()
	u := c.front(r.t, c.user.Token, q)
	r.require(c.isLogin(u), "the user is asked to log in again", u)
	session, back := c.login(r.t, u)
	code := c.callback(r, c.front(r.t, session, back), q)
	return c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic"), q.Get("nonce"))
}
