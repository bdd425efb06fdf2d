package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"hmid/internal/apperr"
)

// Client authentication methods (RFC 7591 §2, token_endpoint_auth_method).
const (
	AuthSecretBasic   = "client_secret_basic"
	AuthSecretPost    = "client_secret_post"
	AuthPrivateKeyJWT = "private_key_jwt"
	AuthNone          = "none"
)

// AssertionAlgs are the JWS algorithms a private_key_jwt client assertion
// may be signed with (RFC 7518 §3.1, RFC 8037 §3.1 for EdDSA), as listed in
// token_endpoint_auth_signing_alg_values_supported. "none" and the HMAC
// algorithms are never accepted: an assertion must prove the private key.
var AssertionAlgs = []string{string(jose.ES256), string(jose.RS256), string(jose.EdDSA)}

// Bounds of a registered key set.
const (
	maxClientKeys    = 20
	maxJWKSBytes     = 64 << 10
	minRSAKeyBits    = 2048
	jwksCacheTTL     = 5 * time.Minute  // a fetched jwks_uri is used this long
	jwksRefetchPause = 30 * time.Second // an unknown kid refetches at most this often
)

// effectiveAuthMethod is the method a client authenticates with; clients
// registered before the field existed (” stored) keep today's behaviour.
func effectiveAuthMethod(stored, clientType string) string {
	switch {
	case stored != "":
		return stored
	case clientType == Public:
		return AuthNone
	}
	return AuthSecretBasic
}

// parseClientJWKS validates a registered JWK Set: at most maxClientKeys
// public signing keys of the types the assertion algorithms use (RSA of at
// least 2048 bits, EC P-256, Ed25519). A private key is refused: it must
// never be sent to hmid, and storing it would make it a shared secret.
func parseClientJWKS(raw []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if len(raw) > maxJWKSBytes {
		return set, fmt.Errorf("the key set is larger than %d bytes", maxJWKSBytes)
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return set, fmt.Errorf("not a JWK Set (RFC 7517 §5): %v", err)
	}
	if len(set.Keys) == 0 || len(set.Keys) > maxClientKeys {
		return set, fmt.Errorf("the key set needs 1 to %d keys", maxClientKeys)
	}
	for i, k := range set.Keys {
		if err := checkClientKey(k); err != nil {
			return set, fmt.Errorf("key %d: %v", i, err)
		}
	}
	return set, nil
}

// checkClientKey accepts a public signing key hmid can verify assertions with.
func checkClientKey(k jose.JSONWebKey) error {
	if !k.Valid() || !k.IsPublic() {
		return errors.New("must be a valid public key (private key material is refused)")
	}
	if k.Use != "" && k.Use != "sig" {
		return errors.New(`use must be "sig"`)
	}
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		if key.N.BitLen() < minRSAKeyBits {
			return fmt.Errorf("RSA keys need at least %d bits", minRSAKeyBits)
		}
	case *ecdsa.PublicKey:
		if key.Curve != elliptic.P256() {
			return errors.New("EC keys must be on P-256 (ES256)")
		}
	case ed25519.PublicKey:
	default:
		return errors.New("only RSA, EC P-256 and Ed25519 keys are accepted")
	}
	return nil
}

// keyFits reports whether k may verify a signature made with alg: its type
// matches and, when the key names an algorithm, it is that one (RFC 7517 §4.4).
func keyFits(k jose.JSONWebKey, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey:
		return alg == string(jose.RS256)
	case *ecdsa.PublicKey:
		return alg == string(jose.ES256)
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
}

// candidateKeys returns the keys of set that may have signed a JWS with kid
// and alg: those with that kid, or every fitting key when the header has none.
func candidateKeys(set jose.JSONWebKeySet, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if (kid == "" || k.KeyID == kid) && keyFits(k, alg) {
			out = append(out, k)
		}
	}
	return out
}

// jwksCache keeps the key sets fetched from clients' jwks_uri, per client,
// in this process. Keys are public, so nothing secret is cached; another
// instance fetches its own copy.
type jwksCache struct {
	mu      sync.Mutex
	entries map[string]jwksEntry
}

type jwksEntry struct {
	uri     string
	set     jose.JSONWebKeySet
	fetched time.Time
}

// clientKeys returns the key set to verify c's assertion with: its inline
// jwks, or the set behind its jwks_uri, fetched through the outbound client
// (HMID_OUTBOUND_ALLOW_CIDRS) and cached for jwksCacheTTL. refresh asks for
// a fresh fetch (the assertion named a kid the cached set lacks, as after
// the client rotated its keys), granted at most every jwksRefetchPause.
func (s *Service) clientKeys(ctx context.Context, c Client, refresh bool) (jose.JSONWebKeySet, error) {
	if c.JWKSURI == nil {
		return parseClientJWKS(c.JWKS)
	}
	now := s.Clock.Now()
	s.jwks.mu.Lock()
	e, ok := s.jwks.entries[c.ID]
	s.jwks.mu.Unlock()
	fresh := ok && e.uri == *c.JWKSURI && now.Sub(e.fetched) < jwksCacheTTL
	if fresh && (!refresh || now.Sub(e.fetched) < jwksRefetchPause) {
		return e.set, nil
	}
	set, err := s.fetchJWKS(ctx, *c.JWKSURI)
	if err != nil {
		return set, err
	}
	s.jwks.mu.Lock()
	if s.jwks.entries == nil {
		s.jwks.entries = map[string]jwksEntry{}
	}
	s.jwks.entries[c.ID] = jwksEntry{uri: *c.JWKSURI, set: set, fetched: now}
	s.jwks.mu.Unlock()
	return set, nil
}

// fetchJWKS GETs a client's jwks_uri through the outbound client, which
// refuses internal addresses at dial time and follows no redirects.
func (s *Service) fetchJWKS(ctx context.Context, uri string) (jose.JSONWebKeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	client := s.OutboundHTTP
	if client == nil {
		client = s.Outbound.Client()
	}
	res, err := client.Do(req)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return jose.JSONWebKeySet{}, fmt.Errorf("jwks_uri answered %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	return parseClientJWKS(body)
}

// forgetClientKeys drops a client's cached jwks_uri set (its registration changed).
func (s *Service) forgetClientKeys(id string) {
	s.jwks.mu.Lock()
	delete(s.jwks.entries, id)
	s.jwks.mu.Unlock()
}

// applyAuthMethod applies token_endpoint_auth_method, jwks and jwks_uri
// (RFC 7591 §2) and checks that they fit together and with the client type:
// public clients use none; confidential ones a secret or private_key_jwt,
// which needs exactly one of jwks and jwks_uri and ID tokens that do not
// depend on a secret (RS256 or ES256: HS256 is keyed with the secret, which
// a private_key_jwt client does not have).
func applyAuthMethod(c *Client, in ClientInput, creating bool) error {
	if in.TokenEndpointAuthMethod.Set {
		c.TokenEndpointAuthMethod = in.TokenEndpointAuthMethod.Value
	}
	if creating || c.TokenEndpointAuthMethod == "" {
		c.TokenEndpointAuthMethod = effectiveAuthMethod(c.TokenEndpointAuthMethod, c.ClientType)
	}
	if err := applyKeys(c, in); err != nil {
		return err
	}
	m := c.TokenEndpointAuthMethod
	if m == AuthPrivateKeyJWT && c.IDTokenSignedResponseAlg == AlgHS256 && in.IDTokenSignedResponseAlg.Value == "" {
		// Not asked for HS256: its default would need a secret, which a
		// private_key_jwt client lacks (RFC 7591 updates omit the field).
		c.IDTokenSignedResponseAlg = AlgRS256
	}
	switch {
	case c.ClientType == Public && m != AuthNone:
		return apperr.OnField("token_endpoint_auth_method", apperr.Invalid("public clients authenticate with none"))
	case c.ClientType == Confidential && m != AuthSecretBasic && m != AuthSecretPost && m != AuthPrivateKeyJWT:
		return apperr.OnField("token_endpoint_auth_method", apperr.Invalid("token_endpoint_auth_method must be client_secret_basic, client_secret_post or private_key_jwt"))
	case m == AuthPrivateKeyJWT && (c.JWKS == nil) == (c.JWKSURI == nil):
		return apperr.OnField("jwks", apperr.Invalid("private_key_jwt needs exactly one of jwks and jwks_uri"))
	case m == AuthPrivateKeyJWT && c.IDTokenSignedResponseAlg == AlgHS256:
		return apperr.OnField("id_token_signed_response_alg", apperr.Invalid("private_key_jwt clients have no secret to key HS256 ID tokens with: use RS256 or ES256"))
	}
	return nil
}

// applyKeys applies jwks and jwks_uri; JSON null clears either. They may not
// both be set (RFC 7591 §2: "MUST NOT both be present").
func applyKeys(c *Client, in ClientInput) error {
	if in.JWKS.Set {
		c.JWKS = nil
		if !in.JWKS.Null {
			if _, err := parseClientJWKS(in.JWKS.Value); err != nil {
				return apperr.OnField("jwks", apperr.Invalid("jwks: %s", err.Error()))
			}
			c.JWKS = in.JWKS.Value
		}
	}
	if in.JWKSURI.Set {
		v := in.JWKSURI.Ptr()
		if v != nil && *v == "" {
			v = nil
		}
		if err := validHTTPURL("jwks_uri", v); err != nil {
			return apperr.OnField("jwks_uri", err)
		}
		c.JWKSURI = v
	}
	if c.JWKS != nil && c.JWKSURI != nil {
		return apperr.OnField("jwks_uri", apperr.Invalid("give jwks or jwks_uri, not both"))
	}
	return nil
}
