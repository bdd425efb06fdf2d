package oauth

import (
	"context"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/clock/clocktest"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/oauth/claims"
	"hmid/internal/oauth/cors"
	"hmid/internal/oauth/signing"
	"hmid/internal/oauth/store"
	"hmid/internal/secretbox"
	"hmid/internal/token"
)

// The grants at the token endpoint, one level below the HTTP scenarios of
// internal/app: a Service over a real database (migrated once per engine),
// no app, no router. Each case makes its own users and clients.

// grantEnv is one engine's service.
type grantEnv struct {
	s   *Service
	clk *clocktest.Fake
}

// TestGrants runs the grant cases on each engine.
func TestGrants(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, e dbtest.Engine) {
		d := e.Open(t)
		box, err := secretbox.New(make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		clk := clocktest.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		st := store.New(d)
		g := &grantEnv{clk: clk, s: &Service{DB: d, Store: st, Keys: &signing.Keys{Store: st, Box: box, Clock: clk},
			Origins: &cors.Origins{Load: st.ActiveRedirectURIs, Clock: clk}, Clock: clk, Box: box,
			Audit: &audit.Writer{DB: d, Clock: clk}, Issuer: "https://id.example"}}
		for _, c := range []struct {
			name string
			run  func(*testing.T, *grantEnv)
		}{
			{"PhasesInOrder", testPhasesInOrder},
			{"CodeGrant", testCodeGrant},
			{"CodeBurntByFailedAttempt", testCodeBurnt},
			{"CodeResourceRefusedBeforeSpent", testCodeResource},
			{"RefreshRotates", testRefreshRotates},
			{"RefreshReuseRevokesFamily", testRefreshReuse},
			{"RefreshReuseInterval", testRefreshReuseInterval},
			{"DeviceGrant", testDeviceGrant},
			{"ClientCredentials", testClientCredentials},
		} {
			t.Run(c.name, func(t *testing.T) { c.run(t, g) })
		}
	})
}

// user inserts a user and returns its id.
func (g *grantEnv) user(t *testing.T) string {
	t.Helper()
	id := db.NewID()
	if _, err := g.s.DB.ExecContext(context.Background(), `INSERT INTO users (id, username, email, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`,
		id, "u"+id, id+"@example.org", db.TS(g.clk.Now())); err != nil {
		t.Fatal(err)
	}
	return id
}

// testClient is a registered client and its secret.
type testClient struct {
	Client
	secret string
}

// client registers an active confidential client, as mods change it.
func (g *grantEnv) client(t *testing.T, mods ...func(*Client)) testClient {
	t.Helper()
	secret := token.New(token.PrefixClientSecret)
	c := Client{ID: db.NewID(), Name: "Client", RedirectURIs: []string{"https://app.example/cb"}, AllowedScopes: []string{"openid", "profile", "offline_access"},
		ClientType: Confidential, IsActive: true, IDTokenSignedResponseAlg: AlgHS256, SecretHash: token.Hash(secret), PostLogoutRedirectURIs: []string{},
		TokenEndpointAuthMethod: AuthSecretBasic, Resources: []string{}, AccessTokenFormat: FormatOpaque, GrantTypes: GrantTypeNames()}
	for _, m := range mods {
		m(&c)
	}
	if err := g.s.Store.InsertClient(context.Background(), g.s.DB, c, g.clk.Now()); err != nil {
		t.Fatal(err)
	}
	return testClient{Client: c, secret: secret}
}

// answer is what the token endpoint's phases answered.
type answer struct {
	resp any
	oe   *Error
}

// post runs the token endpoint's phases for form, c authenticating with
// client_secret_post (none for a public client).
func (g *grantEnv) post(c testClient, form url.Values) answer {
	form.Set("client_id", c.ID)
	if c.ClientType == Confidential {
		form.Set("client_secret", c.secret)
	}
	return g.send("application/x-www-form-urlencoded", form.Encode())
}

// send posts body of type ct to the token endpoint.
func (g *grantEnv) send(ct, body string) answer {
	r := httptest.NewRequest("POST", "/v1/oauth/token", strings.NewReader(body))
	r.Header.Set("Content-Type", ct)
	resp, oe := g.s.token(r)
	return answer{resp, oe}
}

// code issues an authorization code of userID for c with PKCE, scopes
// and the resources granted.
func (g *grantEnv) code(t *testing.T, c testClient, userID string, scopes []string, resources ...string) (code, verifier string) {
	t.Helper()
	verifier = strings.Repeat("v", 43)
	code, err := g.s.issueCode(context.Background(), g.s.DB, grant{ClientID: c.ID, UserID: userID, RedirectURI: c.RedirectURIs[0], Scopes: parseScope(strings.Join(scopes, " ")),
		Nonce: "nonce-1", Challenge: s256(verifier), AuthTime: g.clk.Now(), SessionID: "sess-1",
		Context: authContext{ACR: ACRSingleFactor, Resources: resources}}, g.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return code, verifier
}

// exchange redeems code at the token endpoint.
func (g *grantEnv) exchange(c testClient, code, verifier string, extra ...string) answer {
	form := url.Values{"grant_type": {GrantAuthorizationCode}, "code": {code}, "redirect_uri": {c.RedirectURIs[0]}, "code_verifier": {verifier}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Add(extra[i], extra[i+1])
	}
	return g.post(c, form)
}

// tokens is a successful TokenResponse or fails the test.
func tokens(t *testing.T, a answer) TokenResponse {
	t.Helper()
	if a.oe != nil {
		t.Fatalf("token request: %v", a.oe)
	}
	tr, ok := a.resp.(TokenResponse)
	if !ok {
		t.Fatalf("answer %T, want TokenResponse", a.resp)
	}
	return tr
}

// wantError fails unless a is the OAuth error code, and returns it.
func wantError(t *testing.T, a answer, code string) *Error {
	t.Helper()
	if a.oe == nil || a.oe.Code != code {
		t.Fatalf("got %v, want %s", a.oe, code)
	}
	return a.oe
}

// resolves reports whether an access token authenticates now.
func (g *grantEnv) resolves(access string) bool {
	_, err := g.s.ResolveAccessToken(context.Background(), access)
	return err == nil
}

// testPhasesInOrder: the shared phases answer before any grant runs, in
// their order, and no grant type is left out of the table.
func testPhasesInOrder(t *testing.T, g *grantEnv) {
	c := g.client(t)
	for name := range g.s.grantTypes() {
		if !slices.Contains(grantCatalogue, name) {
			t.Errorf("grant %s is served but not in the catalogue", name)
		}
	}
	if len(g.s.grantTypes()) != len(grantCatalogue) {
		t.Errorf("%d grants served, %d in the catalogue", len(g.s.grantTypes()), len(grantCatalogue))
	}
	wantError(t, g.send("application/json", "{}"), ErrInvalidRequest) // 1. the request
	wantError(t, g.post(c, url.Values{}), ErrInvalidRequest)
	bad := c
	bad.secret = "wrong"
	wantError(t, g.post(bad, url.Values{"grant_type": {"nonsense"}}), ErrInvalidClient) // 2. before the grant type is known
	wantError(t, g.post(c, url.Values{"grant_type": {"nonsense"}}), ErrUnsupportedGrantType)
	codeOnly := g.client(t, func(c *Client) { c.GrantTypes = []string{GrantAuthorizationCode} })
	wantError(t, g.post(codeOnly, url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {"hm_rt_x"}}), ErrUnauthorizedClient) // 3. the grant check
	for grant, param := range map[string]string{GrantAuthorizationCode: "code", GrantRefreshToken: "refresh_token", GrantDeviceCode: "device_code"} {
		if oe := wantError(t, g.post(c, url.Values{"grant_type": {grant}}), ErrInvalidRequest); !strings.Contains(oe.Description, param) {
			t.Errorf("%s without %s: %v", grant, param, oe) // 4. the grant's parameters
		}
	}
	wantError(t, g.post(c, url.Values{"grant_type": {GrantDeviceCode}, "device_code": {"not-ours"}}), ErrInvalidGrant)
	wantError(t, g.post(c, url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {"hm_rt_x"}, "resource": {"not a uri"}}), ErrInvalidTarget) // 5. the audience, before anything is looked up
}

// testCodeGrant: a code buys an access token, a refresh token and an ID
// token with the nonce and the session's sid, stored in the code's family
// with a note of the session (Back-Channel Logout 1.0 §2.5).
func testCodeGrant(t *testing.T, g *grantEnv) {
	ctx := context.Background()
	u := g.user(t)
	c := g.client(t)
	code, verifier := g.code(t, c, u, []string{"openid", "offline_access", "profile"})
	tr := tokens(t, g.exchange(c, code, verifier))
	if tr.TokenType != "Bearer" || tr.Scope != "offline_access openid profile" || tr.RefreshToken == "" || tr.ExpiresIn != int(AccessTokenTTL/time.Second) {
		t.Fatalf("answer %+v", tr)
	}
	idc := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tr.IDToken, idc, func(*jwt.Token) (any, error) { return []byte(c.secret), nil },
		jwt.WithTimeFunc(g.clk.Now)); err != nil {
		t.Fatal(err)
	}
	if idc["nonce"] != "nonce-1" || idc["sid"] != g.s.SessionSID("sess-1") || idc["sub"] != u || idc["acr"] != ACRSingleFactor {
		t.Fatalf("ID token claims %v", idc)
	}
	if !g.resolves(tr.AccessToken) {
		t.Fatal("the access token does not resolve")
	}
	var grants int
	if err := g.s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_session_grants WHERE session_id = $1 AND client_id = $2`, "sess-1", c.ID).Scan(&grants); err != nil || grants != 1 {
		t.Fatalf("session grants %d %v", grants, err)
	}
	rt, err := g.s.Store.RefreshToken(ctx, token.Hash(tr.RefreshToken), g.clk.Now(), new(claims.Row))
	if err != nil || rt.Family.SessionID != "sess-1" || !rt.Family.OfflineRefresh {
		t.Fatalf("refresh token %+v %v: in the session, offline", rt, err)
	}
}

// testCodeBurnt: a code is good for one attempt, whatever its outcome (RFC
// 6749 §4.1.2); presenting it again after success revokes what it bought
// (RFC 9700 §4.3.1).
func testCodeBurnt(t *testing.T, g *grantEnv) {
	u := g.user(t)
	c := g.client(t)
	code, verifier := g.code(t, c, u, []string{"openid"})
	wantError(t, g.exchange(c, code, strings.Repeat("w", 43)), ErrInvalidGrant) // wrong verifier: burnt
	wantError(t, g.exchange(c, code, verifier), ErrInvalidGrant)
	code, verifier = g.code(t, c, u, []string{"openid"})
	tr := tokens(t, g.exchange(c, code, verifier))
	if oe := wantError(t, g.exchange(c, code, verifier), ErrInvalidGrant); !strings.Contains(oe.Description, "already used") || g.resolves(tr.AccessToken) {
		t.Fatalf("replay: %v; the tokens it bought must be revoked", oe)
	}
	other := g.client(t)
	code, verifier = g.code(t, c, u, []string{"openid"})
	wantError(t, g.exchange(other, code, verifier), ErrInvalidGrant) // another client's code
}

// testCodeResource: a resource the client may not ask for is refused
// before the code is touched; one granted narrows the audience, one not
// granted is refused (RFC 8707 §2.2).
func testCodeResource(t *testing.T, g *grantEnv) {
	const api, files = "https://api.example/", "https://files.example/"
	u := g.user(t)
	c := g.client(t, func(c *Client) { c.Resources = []string{api, files} })
	code, verifier := g.code(t, c, u, []string{"openid"}, api)
	wantError(t, g.exchange(c, code, verifier, "resource", "https://other.example/"), ErrInvalidTarget)
	wantError(t, g.exchange(c, code, verifier, "resource", files), ErrInvalidTarget) // allowed, not granted: the code is burnt now
	code, verifier = g.code(t, c, u, []string{"openid"}, api, files)
	tr := tokens(t, g.exchange(c, code, verifier, "resource", api))
	in, err := g.s.introspect(context.Background(), tr.AccessToken, "")
	if err != nil || in.Aud != api {
		t.Fatalf("audience %v %v, want %s", in.Aud, err, api)
	}
}

// refreshed runs a refresh of rt by c.
func (g *grantEnv) refreshed(c testClient, rt string, extra ...string) answer {
	form := url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {rt}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	return g.post(c, form)
}

// issue runs the code grant for a new user at c and returns its tokens.
func (g *grantEnv) issue(t *testing.T, c testClient, scopes ...string) TokenResponse {
	t.Helper()
	code, verifier := g.code(t, c, g.user(t), scopes)
	return tokens(t, g.exchange(c, code, verifier))
}

// testRefreshRotates: a refresh spends its token and answers a new pair;
// a scope may only narrow (RFC 6749 §6); another client's token is refused.
func testRefreshRotates(t *testing.T, g *grantEnv) {
	c := g.client(t)
	first := g.issue(t, c, "openid", "profile", "offline_access")
	wantError(t, g.refreshed(c, first.RefreshToken, "scope", "openid email"), ErrInvalidScope)
	wantError(t, g.refreshed(g.client(t), first.RefreshToken), ErrInvalidGrant)
	next := tokens(t, g.refreshed(c, first.RefreshToken, "scope", "openid"))
	if next.Scope != "openid" || next.RefreshToken == first.RefreshToken || next.IDToken == "" || g.resolves(first.AccessToken) || !g.resolves(next.AccessToken) {
		t.Fatalf("refresh %+v: a narrowed pair, the old access token revoked", next)
	}
	idc := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(next.IDToken, idc); err != nil || idc["nonce"] != nil {
		t.Fatalf("refreshed ID token %v %v: no nonce (OpenID Connect Core §12.2)", idc, err)
	}
	// The refresh token keeps the scope originally granted.
	again := tokens(t, g.refreshed(c, next.RefreshToken))
	if again.Scope != "offline_access openid profile" {
		t.Fatalf("scope after a narrowed refresh %q", again.Scope)
	}
	g.clk.Advance(31 * 24 * time.Hour)
	wantError(t, g.refreshed(c, again.RefreshToken), ErrInvalidGrant) // expired
}

// testRefreshReuse: a spent refresh token presented again revokes every
// token of its authorization (RFC 9700 §4.14.2) and is audited as a failed
// refresh_token_reused.
func testRefreshReuse(t *testing.T, g *grantEnv) {
	c := g.client(t)
	first := g.issue(t, c, "openid", "offline_access")
	next := tokens(t, g.refreshed(c, first.RefreshToken))
	if wantError(t, g.refreshed(c, first.RefreshToken), ErrInvalidGrant); g.resolves(next.AccessToken) {
		t.Fatal("reuse must revoke the newest pair too")
	}
	wantError(t, g.refreshed(c, next.RefreshToken), ErrInvalidGrant)
	var failed int
	if err := g.s.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND resource_id = $2 AND status <> 'success'`,
		audit.RefreshTokenReused, c.ID).Scan(&failed); err != nil || failed != 1 {
		t.Fatalf("reuse audited %d times (%v), want once", failed, err)
	}
}

// testRefreshReuseInterval: within the reuse interval its own client gets
// a sibling pair and nothing is revoked; after it, reuse revokes.
func testRefreshReuseInterval(t *testing.T, g *grantEnv) {
	grant := g.s.grantTypes()[GrantRefreshToken].(*refreshGrant)
	grant.reuseInterval = time.Minute
	defer func() { grant.reuseInterval = 0 }()
	c := g.client(t)
	first := g.issue(t, c, "openid", "offline_access")
	next := tokens(t, g.refreshed(c, first.RefreshToken))
	g.clk.Advance(10 * time.Second)
	sibling := tokens(t, g.refreshed(c, first.RefreshToken))
	if !g.resolves(next.AccessToken) || !g.resolves(sibling.AccessToken) {
		t.Fatal("a retry within the interval keeps both pairs")
	}
	g.clk.Advance(time.Minute)
	if wantError(t, g.refreshed(c, first.RefreshToken), ErrInvalidGrant); g.resolves(next.AccessToken) || g.resolves(sibling.AccessToken) {
		t.Fatal("reuse after the interval revokes the family")
	}
}

// testDeviceGrant: pending, slow_down, an approval's tokens once, the
// client's access token format and the audience phase included.
func testDeviceGrant(t *testing.T, g *grantEnv) {
	ctx := context.Background()
	u := g.user(t)
	c := g.client(t, func(c *Client) { c.AccessTokenFormat, c.IDTokenSignedResponseAlg = FormatJWT, AlgES256 })
	start, err := g.s.startDevice(ctx, c.Client, []string{"openid", "offline_access"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	poll := func(extra ...string) answer {
		form := url.Values{"grant_type": {GrantDeviceCode}, "device_code": {start.DeviceCode}}
		for i := 0; i+1 < len(extra); i += 2 {
			form.Set(extra[i], extra[i+1])
		}
		return g.post(c, form)
	}
	wantError(t, poll(), ErrAuthorizationPending)
	wantError(t, poll(), ErrSlowDown)
	wantError(t, g.post(g.client(t), url.Values{"grant_type": {GrantDeviceCode}, "device_code": {start.DeviceCode}}), ErrInvalidGrant) // another client's
	if _, err := g.s.DecideDevice(ctx, authflow.Approver{UserID: u, AuthTime: g.clk.Now(), AMR: []string{"pwd", "otp"}}, start.UserCode, true, "", ""); err != nil {
		t.Fatal(err)
	}
	g.clk.Advance(time.Minute)
	tr := tokens(t, poll("resource", "https://api.example/"))
	atc := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tr.AccessToken, atc); err != nil || atc["aud"] != "https://api.example/" || atc["acr"] != ACRTwoFactor {
		t.Fatalf("the device grant's access token %v %v: a JWT for the resource asked, with the approver's acr", atc, err)
	}
	if tr.RefreshToken == "" || tr.IDToken == "" || !g.resolves(tr.AccessToken) {
		t.Fatalf("answer %+v", tr)
	}
	g.clk.Advance(time.Minute)
	wantError(t, poll(), ErrInvalidGrant) // once
	g.clk.Advance(DeviceCodeTTL)
	wantError(t, poll(), ErrExpiredToken)
}

// testClientCredentials: permission scopes of the client, never OpenID
// Connect ones (they need a user), and no refresh or ID token (RFC 6749
// §4.4.3); public clients are refused.
func testClientCredentials(t *testing.T, g *grantEnv) {
	c := g.client(t, func(c *Client) {
		c.GrantTypes, c.AllowedScopes = []string{GrantClientCredentials}, []string{"openid", "gps:read", "devices:read"}
	})
	a := g.post(c, url.Values{"grant_type": {GrantClientCredentials}})
	ct, ok := a.resp.(ClientTokenResponse)
	if a.oe != nil || !ok || ct.Scope != "devices:read gps:read" || !isClientToken(ct.AccessToken) {
		t.Fatalf("default scopes: %+v %v", a.resp, a.oe)
	}
	p, err := g.s.ResolveAccessToken(context.Background(), ct.AccessToken)
	if err != nil || !p.Can("gps:read") || p.Can("gps:write") || p.UserID != "" {
		t.Fatalf("the token's principal %+v %v", p, err)
	}
	wantError(t, g.post(c, url.Values{"grant_type": {GrantClientCredentials}, "scope": {"openid"}}), ErrInvalidScope)
	wantError(t, g.post(c, url.Values{"grant_type": {GrantClientCredentials}, "scope": {"gps:write"}}), ErrInvalidScope)
	a = g.post(c, url.Values{"grant_type": {GrantClientCredentials}, "scope": {"gps:read"}})
	if ct, ok := a.resp.(ClientTokenResponse); a.oe != nil || !ok || ct.Scope != "gps:read" {
		t.Fatalf("asked scope: %+v %v", a.resp, a.oe)
	}
	// An owner caps the token: an owner without the permission gets none.
	owner := g.user(t)
	owned := g.client(t, func(c *Client) {
		c.GrantTypes, c.AllowedScopes, c.OwnerID = []string{GrantClientCredentials}, []string{"gps:read"}, &owner
	})
	wantError(t, g.post(owned, url.Values{"grant_type": {GrantClientCredentials}}), ErrInvalidScope)
	pub := g.client(t, func(c *Client) {
		c.ClientType, c.GrantTypes, c.TokenEndpointAuthMethod = Public, []string{GrantClientCredentials}, AuthNone
	})
	wantError(t, g.post(pub, url.Values{"grant_type": {GrantClientCredentials}}), ErrUnauthorizedClient)
}
