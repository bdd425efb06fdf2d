package upstreamtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"hmid/internal/httpx"
)

// KeyID is the "kid" of the key an OIDC fake signs its ID tokens with.
const KeyID = "k1"

// OIDC is a fake OpenID Connect provider: the Provider's authorization and
// token endpoints (client authentication with HTTP Basic, a nonce required),
// plus discovery at /.well-known/openid-configuration, a JWKS with an RSA
// key at /jwks, RS256 ID tokens and UserInfo at /userinfo. Its knobs, like
// the Provider's, are changed inside Set.
type OIDC struct {
	*Provider
	key *rsa.PrivateKey
	now func() time.Time

	// Issuer is the issuer the discovery document and the ID tokens name;
	// empty means URL(), the right one (Discovery §4.3).
	Issuer string
	// Claims go into the next ID tokens beside the standard ones (iss,
	// sub "oidc-user-1", aud, iat, exp, nonce), and replace them when
	// named alike. Empty at first: the person has a subject and nothing
	// else.
	Claims map[string]any
	// Tweak, when set, changes an ID token's claims last (tests of
	// refusals).
	Tweak func(c map[string]any)
	// Signer, when set, turns the claims' JSON into the ID token instead
	// of signing it with the fake's key (tests of bad signatures; one
	// returning "" sends an empty id_token).
	Signer func(payload []byte) string
	// Info is the UserInfo answer (Core §5.3.2), which hmid asks for when
	// the ID token carries no address. At first it names the default
	// subject and nothing else.
	Info map[string]any
}

// NewOIDC starts a fake OpenID Connect provider whose ID tokens are issued
// and expire by now, the clock of the test. SetPerson sets Claims and Info
// to sub, preferred_username, name, email and email_verified (each empty
// field left out). The server stops when the test ends.
func NewOIDC(t testing.TB, now func() time.Time) *OIDC {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o := &OIDC{Provider: New(t, "basic"), key: key, now: now,
		Claims: map[string]any{}, Info: map[string]any{"sub": defaultSubject}}
	o.Set(func() {
		o.idToken = o.makeIDToken
		o.person = o.setPerson
	})
	o.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		iss := o.issuer()
		o.mu.Unlock()
		httpx.JSON(w, http.StatusOK, map[string]any{
			"issuer": iss, "authorization_endpoint": o.URL() + "/authorize", "token_endpoint": o.URL() + "/token",
			"jwks_uri": o.URL() + "/jwks", "userinfo_endpoint": o.URL() + "/userinfo",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"code_challenge_methods_supported":      []string{"S256"},
		})
	})
	o.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		httpx.JSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &o.key.PublicKey, KeyID: KeyID, Algorithm: "RS256", Use: "sig"}}})
	})
	o.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		o.serveUser(w, r, func() any { return o.Info })
	})
	return o
}

// Env returns the variables that configure slug against this fake: the
// ISSUER, CLIENT_ID and CLIENT_SECRET, and for any slug but google the
// HMID_LOGIN_PROVIDERS entry that makes it a generic provider (whose button
// is labelled with the slug unless the test adds HMID_LOGIN_<SLUG>_NAME).
func (o *OIDC) Env(slug string) map[string]string {
	pre := envPrefix(slug)
	env := map[string]string{pre + "ISSUER": o.URL(), pre + "CLIENT_ID": ClientID, pre + "CLIENT_SECRET": ClientSecret}
	if slug != "google" {
		env[providersVar] = slug
	}
	return env
}

// issuer is Issuer or the fake's own URL; the caller holds the lock.
func (o *OIDC) issuer() string {
	if o.Issuer != "" {
		return o.Issuer
	}
	return o.URL()
}

// setPerson is SetPerson's mapping; the caller holds the lock.
func (o *OIDC) setPerson(who Person) {
	c := map[string]any{}
	for k, v := range map[string]string{"sub": who.Subject, "preferred_username": who.Username,
		"name": who.Name, "email": who.Email} {
		if v != "" {
			c[k] = v
		}
	}
	if who.Email != "" {
		c["email_verified"] = who.EmailVerified
	}
	o.Claims = c
	o.Info = maps.Clone(c)
	if _, ok := o.Info["sub"]; !ok {
		o.Info["sub"] = defaultSubject
	}
}

// defaultSubject is the "sub" of ID tokens whose Claims name none.
const defaultSubject = "oidc-user-1"

// makeIDToken builds and signs the ID token of a grant (Core §2), with the
// nonce of its authorization request.
func (o *OIDC) makeIDToken(g grant) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	c := map[string]any{"iss": o.issuer(), "sub": defaultSubject, "aud": ClientID,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": g.nonce}
	maps.Copy(c, o.Claims)
	if o.Tweak != nil {
		o.Tweak(c)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		o.t.Errorf("upstreamtest: ID token claims: %v", err)
		return ""
	}
	if o.Signer != nil {
		return o.Signer(payload)
	}
	return SignRS256(o.t, o.key, KeyID, payload)
}

// SignRS256 signs payload as a compact JWS with key under the key id kid,
// as the fake signs its ID tokens; a test signs with a key of its own to
// make a token the fake's JWKS does not vouch for. It may run on the
// server's goroutines, so a failure is reported with t.Errorf and gives "".
func SignRS256(t testing.TB, key *rsa.PrivateKey, kid string, payload []byte) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Errorf("upstreamtest: signer: %v", err)
		return ""
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Errorf("upstreamtest: sign: %v", err)
		return ""
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Errorf("upstreamtest: serialize: %v", err)
		return ""
	}
	return out
}
