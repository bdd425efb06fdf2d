package app_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

// jwtClientKey is one of a private_key_jwt client's signing keys.
type jwtClientKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newJWTKey(t *testing.T, kid string, alg jose.SignatureAlgorithm) jwtClientKey {
	t.Helper()
	var (
		priv crypto.Signer
		err  error
	)
	switch alg {
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return jwtClientKey{kid: kid, alg: alg, priv: priv}
}

// jwks is the public JWK Set of keys, as a client registers it.
func jwks(keys ...jwtClientKey) map[string]any {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Use: "sig", Algorithm: string(k.alg)})
	}
	b, _ := json.Marshal(set)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// assertion signs a client assertion (RFC 7523 §3) with k; edit changes the
// claims before signing.
func assertion(t *testing.T, e *apptest.Env, k jwtClientKey, clientID string, edit func(*jwt.Claims)) string {
	t.Helper()
	now := e.Clock.Now()
	cl := jwt.Claims{Issuer: clientID, Subject: clientID, Audience: jwt.Audience{e.URL + "/v1/oauth/token"},
		Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now), ID: rand.Text()}
	if edit != nil {
		edit(&cl)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(cl).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withAssertion adds the private_key_jwt parameters to a form.
func withAssertion(f url.Values, a string) url.Values {
	f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	f.Set("client_assertion", a)
	return f
}

func codeForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}}
}

// TestPrivateKeyJWT authenticates a client with signed assertions (RFC 7523
// §2.2) at the token, revocation and introspection endpoints, with each
// algorithm, and refuses forged, expired, far-future, wrongly addressed,
// replayed and otherwise bad assertions with invalid_client, changing nothing.
func TestPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_user"})
		es, rs, ed := newJWTKey(t, "es", jose.ES256), newJWTKey(t, "rs", jose.RS256), newJWTKey(t, "ed", jose.EdDSA)
		d := data(t, e.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Key App", "redirect_uris": []string{cb},
			"allowed_scopes":             []string{"openid", "profile", "offline_access"},
			"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es, rs, ed)}, http.StatusCreated))
		id := d["id"].(string)
		if _, has := d["client_secret"]; has || d["token_endpoint_auth_method"] != "private_key_jwt" || d["id_token_signed_response_alg"] != "RS256" || d["jwks"] == nil {
			t.Fatalf("registration answer %v", d)
		}

		code := getCode(t, e, u.Token, authzParams(id, "scope", "openid profile offline_access"))
		bad := map[string]string{}
		forger := newJWTKey(t, "es", jose.ES256) // same kid, another key
		bad["forged"] = assertion(t, e, forger, id, nil)
		bad["expired"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.Clock.Now().Add(-2 * time.Minute)) })
		bad["far exp"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.Clock.Now().Add(time.Hour)) })
		bad["no exp"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Expiry = nil })
		bad["wrong aud"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other.example/token"} })
		bad["iss differs"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.Issuer = "someone-else" })
		bad["no jti"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.ID = "" })
		bad["nbf ahead"] = assertion(t, e, es, id, func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(e.Clock.Now().Add(time.Minute * 2)) })
		bad["unknown client"] = assertion(t, e, es, "7c1a4f0e-0000-4000-8000-000000000000", nil)
		bad["not a JWT"] = "eyJhbGciOiJub25lIn0.e30."
		hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
		bad["HS256"], _ = jwt.Signed(hs).Claims(jwt.Claims{Issuer: id, Subject: id, Audience: jwt.Audience{e.URL},
			Expiry: jwt.NewNumericDate(e.Clock.Now().Add(time.Minute)), ID: "hs"}).Serialize()
		for name, a := range bad {
			r := tokenReq(t, e, withAssertion(codeForm(code), a), nil)
			if r.Status != http.StatusUnauthorized || r.JSON()["error"] != "invalid_client" {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		wrongType := codeForm(code)
		wrongType.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
		wrongType.Set("client_assertion", assertion(t, e, es, id, nil))
		oauthErr(t, tokenReq(t, e, wrongType, nil), http.StatusUnauthorized, "invalid_client")
		// A secret is not a way in for a private_key_jwt client, nor a second method beside the assertion.
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb},
			"client_id": {id}, "client_secret": {"hm_sec_guess"}}, nil), http.StatusUnauthorized, "invalid_client")
		both := withAssertion(codeForm(code), assertion(t, e, es, id, nil))
		both.Set("client_secret", "hm_sec_guess")
		oauthErr(t, tokenReq(t, e, both, nil), http.StatusBadRequest, "invalid_request")

		// Nothing above burnt the code: the good assertion redeems it, with the issuer as aud.
		good := assertion(t, e, es, id, func(c *jwt.Claims) { c.Audience = jwt.Audience{e.URL} })
		r := tokenReq(t, e, withAssertion(codeForm(code), good), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		tok := r.JSON()
		// Replayed: refused, whatever the request.
		replay := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}
		oauthErr(t, tokenReq(t, e, withAssertion(replay, good), nil), http.StatusUnauthorized, "invalid_client")

		// RS256 refreshes; the refresh token was not spent by the replay.
		r = tokenReq(t, e, withAssertion(replay, assertion(t, e, rs, id, nil)), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.Status, r.Body)
		}
		access := r.JSON()["access_token"].(string)
		// EdDSA at introspection, ES256 at revocation.
		in := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect",
			Body: withAssertion(url.Values{"token": {access}}, assertion(t, e, ed, id, nil))})
		if in.Status != http.StatusOK || in.JSON()["active"] != true || in.JSON()["client_id"] != id {
			t.Fatalf("introspect: %d %s", in.Status, in.Body)
		}
		in = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: withAssertion(url.Values{"token": {access}}, bad["forged"])})
		oauthErr(t, in, http.StatusUnauthorized, "invalid_client")
		rv := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: withAssertion(url.Values{"token": {access}}, bad["expired"])})
		oauthErr(t, rv, http.StatusUnauthorized, "invalid_client")
		e.Call(t, "GET", "/v1/oauth/userinfo", access, nil, http.StatusOK) // the refused revocation changed nothing
		rv = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: withAssertion(url.Values{"token": {access}}, assertion(t, e, es, id, nil))})
		if rv.Status != http.StatusOK {
			t.Fatalf("revoke: %d %s", rv.Status, rv.Body)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", access, nil, http.StatusUnauthorized)

		// A private_key_jwt client has no secret to regenerate.
		e.Call(t, "POST", "/v1/oauth/clients/"+id+"/regenerate-secret", u.Token, nil, http.StatusBadRequest)
	})
}

// TestPrivateKeyJWTRegistration refuses key material and combinations that
// cannot work, and moves a client between a secret and private_key_jwt.
func TestPrivateKeyJWTRegistration(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_reg"})
		es := newJWTKey(t, "es", jose.ES256)
		privSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: es.priv, KeyID: "p"}}})
		var priv map[string]any
		_ = json.Unmarshal(privSet, &priv)
		small, _ := rsa.GenerateKey(rand.Reader, 1024)
		for name, body := range map[string]map[string]any{
			"private key":      {"token_endpoint_auth_method": "private_key_jwt", "jwks": priv},
			"no keys":          {"token_endpoint_auth_method": "private_key_jwt"},
			"both":             {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "jwks_uri": "https://keys.example/jwks"},
			"HS256":            {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "id_token_signed_response_alg": "HS256"},
			"public":           {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es), "client_type": "public"},
			"unknown method":   {"token_endpoint_auth_method": "client_secret_jwt"},
			"not a set":        {"token_endpoint_auth_method": "private_key_jwt", "jwks": map[string]any{"keys": "x"}},
			"small RSA":        {"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(jwtClientKey{kid: "s", alg: jose.RS256, priv: small})},
			"internal uri":     {"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "http://127.0.0.1:9/jwks"},
			"relative uri":     {"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "/jwks"},
			"public with post": {"client_type": "public", "token_endpoint_auth_method": "client_secret_post"},
		} {
			body["name"], body["redirect_uris"] = "Bad "+name, []string{cb}
			r := e.Call(t, "POST", "/v1/oauth/clients", u.Token, body, http.StatusBadRequest)
			if !strings.Contains(string(r.Body), "VALIDATION_ERROR") && !strings.Contains(string(r.Body), "error") {
				t.Fatalf("%s: %s", name, r.Body)
			}
		}
		var n int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM oauth_clients WHERE name LIKE 'Bad %'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("refused registrations stored: %d %v", n, err)
		}

		// A secret client moves to private_key_jwt: its secret stops working.
		c := mkClient(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "ES256"})
		d := data(t, e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es)}, http.StatusOK))
		if _, has := d["client_secret"]; has || d["token_endpoint_auth_method"] != "private_key_jwt" {
			t.Fatalf("moved: %v", d)
		}
		code := getCode(t, e, u.Token, authzParams(c.ID))
		oauthErr(t, exchange(t, e, c, code), http.StatusUnauthorized, "invalid_client")
		r := tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, es, c.ID, nil)), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		// And back: a new secret, shown once, and the keys no longer count.
		d = data(t, e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, map[string]any{"token_endpoint_auth_method": "client_secret_basic", "jwks": nil}, http.StatusOK))
		secret, _ := d["client_secret"].(string)
		if !strings.HasPrefix(secret, "hm_sec_") || d["jwks"] != nil {
			t.Fatalf("moved back: %v", d)
		}
		code = getCode(t, e, u.Token, authzParams(c.ID))
		oauthErr(t, tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, es, c.ID, nil)), nil), http.StatusUnauthorized, "invalid_client")
		if r := exchange(t, e, testClient{ID: c.ID, Secret: secret}, code); r.Status != http.StatusOK {
			t.Fatalf("secret after moving back: %d %s", r.Status, r.Body)
		}
	})
}

// jwksServer serves a JWK Set that the test can replace, counting fetches.
type jwksServer struct {
	mu      sync.Mutex
	set     map[string]any
	fetches int
}

func (j *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fetches++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(j.set)
}

func (j *jwksServer) put(set map[string]any) {
	j.mu.Lock()
	j.set = set
	j.mu.Unlock()
}

func (j *jwksServer) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetches
}

// TestPrivateKeyJWTKeysFromURI fetches a client's keys from its jwks_uri
// through the outbound client, caches them, and fetches again when an
// assertion names a key the cached set lacks (the client rotated).
func TestPrivateKeyJWTKeysFromURI(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwks_uri_user"})
		k1, k2 := newJWTKey(t, "one", jose.ES256), newJWTKey(t, "two", jose.EdDSA)
		keys := &jwksServer{set: jwks(k1)}
		srv := httptest.NewServer(keys)
		t.Cleanup(srv.Close)
		id := data(t, e.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "URI App", "redirect_uris": []string{cb},
			"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": srv.URL + "/jwks"}, http.StatusCreated))["id"].(string)
		introspect := func(k jwtClientKey) *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect",
				Body: withAssertion(url.Values{"token": {"hm_at_unknown"}}, assertion(t, e, k, id, nil))})
		}
		for range 3 {
			if r := introspect(k1); r.Status != http.StatusOK {
				t.Fatalf("introspect: %d %s", r.Status, r.Body)
			}
		}
		if n := keys.count(); n != 1 {
			t.Fatalf("fetched %d times, want 1 (cached)", n)
		}
		// Rotated at the client: the new key works once the pause has passed.
		keys.put(jwks(k2))
		e.Clock.Advance(time.Minute)
		if r := introspect(k2); r.Status != http.StatusOK {
			t.Fatalf("after rotation: %d %s", r.Status, r.Body)
		}
		oauthErr(t, introspect(k1), http.StatusUnauthorized, "invalid_client")
	}, apptest.AllowLoopbackOutbound)
}

// TestPrivateKeyJWTReplayOtherInstance: an assertion used on one instance is
// refused on the other (the jti is kept in the shared Redis until exp).
func TestPrivateKeyJWTReplayOtherInstance(t *testing.T) {
	t.Parallel()
	if dbtest.RedisURL() == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
	a, b := apptest.NewPair(t, dbtest.RedisURL())
	u := a.NewUser(t, apptest.UserSpec{Username: "jwt_pair"})
	es := newJWTKey(t, "es", jose.ES256)
	id := data(t, a.Call(t, "POST", "/v1/oauth/clients", u.Token, map[string]any{"name": "Pair App", "redirect_uris": []string{cb},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks(es)}, http.StatusCreated))["id"].(string)
	// Addressed to both instances' issuers (each test instance has its own URL).
	both := func(c *jwt.Claims) { c.Audience = jwt.Audience{a.URL, b.URL} }
	used := assertion(t, a, es, id, both)
	introspect := func(e *apptest.Env, as string) *apptest.Resp {
		return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: withAssertion(url.Values{"token": {"hm_at_x"}}, as)})
	}
	if r := introspect(a, used); r.Status != http.StatusOK {
		t.Fatalf("on A: %d %s", r.Status, r.Body)
	}
	r := introspect(b, used)
	oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
	if !strings.Contains(r.JSON()["error_description"].(string), "jti") {
		t.Fatalf("refused for another reason: %s", r.Body)
	}
	if r := introspect(b, assertion(t, a, es, id, both)); r.Status != http.StatusOK {
		t.Fatalf("a fresh assertion on B: %d %s", r.Status, r.Body)
	}
}
