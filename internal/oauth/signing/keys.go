// Package signing keeps hmid's asymmetric signing keys, RS256 and ES256
// (RFC 7518 §3.3, §3.4): the keys that sign ID tokens, JWT access tokens
// (RFC 9068) and logout tokens, and that the JWKS publishes (RFC 7517 §5).
// Keys are stored sealed with the server key, unsealed and parsed once per
// process, and rotated by generation: the newest key of an algorithm
// signs, a retired one stays published for KeyGrace so the tokens it
// signed still verify, then it is deleted. Several instances agree through
// the store's conditional inserts: of racing rotations exactly one wins.
package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/clock"
	"hmid/internal/oauth/store"
	"hmid/internal/secretbox"
)

// The algorithms of the keys (RFC 7518 §3.1).
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
)

// Algs are the algorithms with keys of their own, published at the JWKS
// in this order.
var Algs = []string{AlgRS256, AlgES256}

// IDTokenTTL is the lifetime of the ID tokens the keys sign (spec 1,
// Limits), which a retired key outlives.
const IDTokenTTL = time.Hour

// keyLeeway is added to the ID-token lifetime before a retired key leaves
// the JWKS, for verifiers whose clocks run behind (and who check exp with
// a leeway of their own).
const keyLeeway = 5 * time.Minute

// KeyGrace is how long a retired key stays published after a newer key took
// over signing: until every ID token it signed has expired (IDTokenTTL),
// plus keyLeeway. After it the key is dropped from the JWKS and deleted.
const KeyGrace = IDTokenTTL + keyLeeway

// keyCacheTTL is how long an instance signs with the keys it has loaded
// before it reads them again, so a rotation made by another instance or by
// "hmid keys rotate" is picked up within this time. Until then the instance
// still signs with the previous key, which stays published for KeyGrace, so
// its tokens verify. The JWKS and verification by an unknown kid read the
// database at once.
const keyCacheTTL = 10 * time.Second

// ErrRotationLost reports that another instance rotated the same algorithm's
// key at the same time and its new key won.
var ErrRotationLost = errors.New("signing: another rotation of this key won")

// Key is one asymmetric key, unsealed and parsed once per process: the
// request path signs with it without touching the database.
type Key struct {
	kid        string
	alg        string
	generation int64
	priv       crypto.Signer // *rsa.PrivateKey (with CRT values precomputed) or *ecdsa.PrivateKey
	method     jwt.SigningMethod
	header     string // the base64url JOSE header {"alg","kid","typ"}, encoded once
	atHeader   string // the same with typ at+jwt, for JWT access tokens (RFC 9068 §2.1)
	jwk        JWK
	created    time.Time
	activated  time.Time
	retired    time.Time // zero while it is the signing key of its algorithm
}

// Kid is the key's id, the RFC 7638 thumbprint of its public key.
func (k *Key) Kid() string { return k.kid }

// Alg is the key's algorithm, AlgRS256 or AlgES256.
func (k *Key) Alg() string { return k.alg }

// Public is the key's public key, to verify what it signed.
func (k *Key) Public() crypto.PublicKey { return k.priv.Public() }

// Sign returns the compact JWS (RFC 7515 §7.1) of claims under k, typed
// JWT. The header is encoded once per key; the signature is golang-jwt's.
func (k *Key) Sign(claims map[string]any) (string, error) {
	return k.signWith(claims, k.header)
}

// SignAccessToken is Sign typed at+jwt, as RFC 9068 §2.1 types a JWT
// access token, so it cannot pass for an ID token.
func (k *Key) SignAccessToken(claims map[string]any) (string, error) {
	return k.signWith(claims, k.atHeader)
}

// SignTyped is Sign with the header's typ set to typ (logout+jwt for a
// logout token, Back-Channel Logout 1.0 §2.4).
func (k *Key) SignTyped(claims map[string]any, typ string) (string, error) {
	header, err := encodeHeader(k.alg, k.kid, typ)
	if err != nil {
		return "", err
	}
	return k.signWith(claims, header)
}

// signWith signs claims under the encoded header.
func (k *Key) signWith(claims map[string]any, header string) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := header + "." + b64(payload)
	sig, err := k.method.Sign(input, k.priv)
	if err != nil {
		return "", err
	}
	return input + "." + b64(sig), nil
}

// Published reports whether k is in the JWKS at now: the signing key of its
// algorithm, or retired less than KeyGrace ago.
func (k *Key) Published(now time.Time) bool {
	return k.retired.IsZero() || now.Before(k.retired.Add(KeyGrace))
}

// keyring is the keys as loaded at one moment, newest generation first per
// algorithm. It is never changed after it is built; a reload builds another.
type keyring struct {
	keys   []*Key
	loaded time.Time
}

// current returns the signing key of alg, or nil when it has none yet.
func (r *keyring) current(alg string) *Key {
	var best *Key
	for _, k := range r.keys {
		if k.alg == alg && (best == nil || k.generation > best.generation) {
			best = k
		}
	}
	return best
}

// byKid returns the key with the kid, or nil.
func (r *keyring) byKid(kid string) *Key {
	for _, k := range r.keys {
		if k.kid == kid {
			return k
		}
	}
	return nil
}

// Keys are the signing keys of one database, as this process has loaded
// them. The zero value is not usable: Store, Box and Clock are required.
type Keys struct {
	Store *store.Store
	Box   *secretbox.Box // seals the private keys
	Clock clock.Clock

	mu   sync.Mutex              // serializes reading and creating keys
	ring atomic.Pointer[keyring] // the keys as last loaded; nil before first use
}

// Signer returns the signing key of alg, reading the keys again when the
// cached ones are older than keyCacheTTL and creating the algorithm's first
// key on first use. While one request reads them again, the others go on
// signing with the cached key, which is still published; if reading fails
// the cached key signs too, and the next request tries again. It returns the
// database's errors only when there is no key to sign with.
func (ks *Keys) Signer(ctx context.Context, alg string) (*Key, error) {
	r := ks.ring.Load()
	var stale *Key
	if r != nil {
		stale = r.current(alg)
	}
	if stale != nil {
		if ks.Clock.Now().Sub(r.loaded) < keyCacheTTL || !ks.mu.TryLock() {
			return stale, nil
		}
		defer ks.mu.Unlock()
		r, err := ks.reloadLocked(ctx)
		if err != nil || r.current(alg) == nil {
			return stale, nil
		}
		return r.current(alg), nil
	}
	r, err := ks.reload(ctx, alg)
	if err != nil {
		return nil, err
	}
	return r.current(alg), nil
}

// JWKS returns the public keys the JWK set lists now (RFC 7517 §5), in the
// order of Algs: each algorithm's signing key and the retired keys whose
// tokens may still be unexpired (KeyGrace). It reads the keys afresh, so a
// rotation on another instance shows at once, and creates each algorithm's
// first key, so clients can fetch keys before any token.
func (ks *Keys) JWKS(ctx context.Context) ([]JWK, error) {
	ring, err := ks.reload(ctx, Algs...)
	if err != nil {
		return nil, err
	}
	now := ks.Clock.Now()
	keys := []JWK{}
	for _, alg := range Algs {
		for _, k := range ring.keys {
			if k.alg == alg && k.Published(now) {
				keys = append(keys, k.jwk)
			}
		}
	}
	return keys, nil
}

// Published returns the key of kid if the JWKS lists it now, reading the
// keys again once when the kid is not known (another instance may have
// just rotated). An unknown or no longer published kid is an error.
func (ks *Keys) Published(ctx context.Context, kid string) (*Key, error) {
	now := ks.Clock.Now()
	r := ks.ring.Load()
	if r == nil || r.byKid(kid) == nil {
		var err error
		if r, err = ks.reload(ctx); err != nil {
			return nil, err
		}
	}
	k := r.byKid(kid)
	if k == nil || !k.Published(now) {
		return nil, fmt.Errorf("kid %q is not in the JWKS", kid)
	}
	return k, nil
}

// reload reads the keys from the database, keeping the parsed keys of
// kids already known, and creates the first key of each of ensure that has
// none.
func (ks *Keys) reload(ctx context.Context, ensure ...string) (*keyring, error) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.reloadLocked(ctx, ensure...)
}

// reloadLocked is reload for a caller holding mu. Several instances
// creating a first key at once agree through INSERT … ON CONFLICT DO NOTHING
// on (alg, generation 1).
func (ks *Keys) reloadLocked(ctx context.Context, ensure ...string) (*keyring, error) {
	r, err := ks.load(ctx)
	if err != nil {
		return nil, err
	}
	created := false
	for _, alg := range ensure {
		if r.current(alg) != nil {
			continue
		}
		k, err := ks.newSealedKey(alg, 1)
		if err != nil {
			return nil, err
		}
		if _, err := ks.Store.InsertSigningKey(ctx, k, ks.Clock.Now()); err != nil {
			return nil, err
		}
		created = true
	}
	if created {
		if r, err = ks.load(ctx); err != nil {
			return nil, err
		}
	}
	ks.ring.Store(r)
	return r, nil
}

// load reads every stored key; the caller holds mu. Keys the cached ring
// already holds are reused, so a key is unsealed and parsed once.
func (ks *Keys) load(ctx context.Context) (*keyring, error) {
	prev := ks.ring.Load()
	rows, err := ks.Store.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	r := &keyring{loaded: ks.Clock.Now()}
	for _, row := range rows {
		var k Key
		if prev != nil && prev.byKid(row.Kid) != nil {
			k = *prev.byKid(row.Kid)
		} else {
			parsed, err := ks.open(row.Kid, row.Alg, row.Sealed)
			if err != nil {
				return nil, err
			}
			k = *parsed
		}
		k.generation, k.created, k.activated, k.retired = row.Generation, row.Created, row.Activated, row.Retired
		r.keys = append(r.keys, &k)
	}
	return r, nil
}

// open unseals and parses a stored private key and prepares what signing
// and the JWKS need of it.
func (ks *Keys) open(kid, alg, sealed string) (*Key, error) {
	der, err := ks.Box.Open(sealed, []byte("oauth_signing_key:"+kid))
	if err != nil {
		return nil, fmt.Errorf("open %s signing key %s: %w", alg, kid, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse %s signing key %s: %w", alg, kid, err)
	}
	return newSigningKey(kid, alg, key)
}

// newSigningKey wraps a private key of alg.
func newSigningKey(kid, alg string, key any) (*Key, error) {
	k := &Key{kid: kid, alg: alg}
	switch priv := key.(type) {
	case *rsa.PrivateKey:
		if alg != AlgRS256 {
			return nil, fmt.Errorf("signing key %s is RSA, stored as %s", kid, alg)
		}
		// ParsePKCS8PrivateKey has already precomputed the CRT values;
		// doing it again is a no-op, and keeps signing fast should the key
		// come from elsewhere.
		priv.Precompute()
		k.priv, k.method, k.jwk = priv, jwt.SigningMethodRS256, rsaJWK(kid, &priv.PublicKey)
	case *ecdsa.PrivateKey:
		if alg != AlgES256 || priv.Curve != elliptic.P256() {
			return nil, fmt.Errorf("signing key %s is ECDSA, stored as %s", kid, alg)
		}
		jwk, err := ecJWK(kid, &priv.PublicKey)
		if err != nil {
			return nil, err
		}
		k.priv, k.method, k.jwk = priv, jwt.SigningMethodES256, jwk
	default:
		return nil, fmt.Errorf("signing key %s has unsupported type %T", kid, key)
	}
	var err error
	if k.header, err = encodeHeader(alg, kid, "JWT"); err != nil {
		return nil, err
	}
	if k.atHeader, err = encodeHeader(alg, kid, "at+jwt"); err != nil {
		return nil, err
	}
	return k, nil
}

// encodeHeader is the base64url JOSE header (RFC 7515 §4) of a JWS by key
// kid of alg, of type typ.
func encodeHeader(alg, kid, typ string) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": typ})
	return b64(header), err
}

// generateKey draws a new private key of alg: RSA 2048 (RFC 7518 §3.3
// minimum) or ECDSA P-256 (§3.4). Its kid is the RFC 7638 thumbprint.
func generateKey(alg string) (kid string, priv any, err error) {
	switch alg {
	case AlgRS256:
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return "", nil, err
		}
		return rsaJWK("", &k.PublicKey).thumbprint(), k, nil
	case AlgES256:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", nil, err
		}
		jwk, err := ecJWK("", &k.PublicKey)
		if err != nil {
			return "", nil, err
		}
		return jwk.thumbprint(), k, nil
	}
	return "", nil, fmt.Errorf("no signing keys for algorithm %q", alg)
}

// newSealedKey generates a key of alg as generation gen and seals it with
// the server key. It runs before any transaction opens: RSA key generation
// takes tenths of a second, too long to hold SQLite's writer.
func (ks *Keys) newSealedKey(alg string, gen int64) (store.SigningKey, error) {
	kid, priv, err := generateKey(alg)
	if err != nil {
		return store.SigningKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return store.SigningKey{}, err
	}
	sealed, err := ks.Box.Seal(der, []byte("oauth_signing_key:"+kid))
	return store.SigningKey{Kid: kid, Alg: alg, Generation: gen, Sealed: sealed}, err
}

// KeyInfo describes a signing key, for "hmid keys" and the operator.
type KeyInfo struct {
	Kid         string
	Alg         string
	Generation  int64
	CreatedAt   time.Time
	ActivatedAt time.Time
	RetiredAt   *time.Time // nil for the signing key of its algorithm
	Published   bool       // in the JWKS now
}

// List returns the stored keys, read afresh, newest first per algorithm.
func (ks *Keys) List(ctx context.Context) ([]KeyInfo, error) {
	r, err := ks.reload(ctx)
	if err != nil {
		return nil, err
	}
	now := ks.Clock.Now()
	out := make([]KeyInfo, 0, len(r.keys))
	for _, k := range r.keys {
		ki := KeyInfo{Kid: k.kid, Alg: k.alg, Generation: k.generation, CreatedAt: k.created, ActivatedAt: k.activated, Published: k.Published(now)}
		if !k.retired.IsZero() {
			t := k.retired
			ki.RetiredAt = &t
		}
		out = append(out, ki)
	}
	return out, nil
}

// Rotate adds a new key for each of algs (every algorithm of Algs when
// empty), which becomes that algorithm's signing key at once; the previous
// key is retired and stays in the JWKS for KeyGrace. It is what "hmid keys
// rotate" runs, and returns the keys as List does. An unknown algorithm is
// an error. When another instance rotates the same algorithm at the same
// moment, one new key wins and the other call answers ErrRotationLost.
func (ks *Keys) Rotate(ctx context.Context, algs ...string) ([]KeyInfo, error) {
	if len(algs) == 0 {
		algs = Algs
	}
	for _, alg := range algs {
		if !slices.Contains(Algs, alg) {
			return nil, fmt.Errorf("unknown signing algorithm %q: use RS256 or ES256", alg)
		}
	}
	ks.mu.Lock()
	r, err := ks.load(ctx)
	ks.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, alg := range algs {
		gen := int64(1)
		if cur := r.current(alg); cur != nil {
			gen = cur.generation + 1
		}
		if err := ks.rotateTo(ctx, alg, gen); err != nil {
			return nil, err
		}
	}
	return ks.List(ctx)
}

// rotateTo stores a new key of alg as generation gen and retires the older
// ones, atomically. When gen exists already another rotation won: nothing
// changes and the answer is ErrRotationLost.
func (ks *Keys) rotateTo(ctx context.Context, alg string, gen int64) error {
	k, err := ks.newSealedKey(alg, gen)
	if err != nil {
		return err
	}
	won, err := ks.Store.RotateSigningKey(ctx, k, ks.Clock.Now())
	if err == nil && !won {
		return ErrRotationLost
	}
	return err
}

// Maintain is one run of the key job: it rotates each algorithm whose
// signing key is older than maxAge (0: never), and deletes retired keys past
// KeyGrace, which the JWKS no longer lists. Algorithms without a key are left
// alone: their first key is made on first use. It is safe on several
// instances at once: a rotation is conditional on the generation this run
// saw, so of instances racing exactly one rotates. It returns the
// database's errors.
func (ks *Keys) Maintain(ctx context.Context, maxAge time.Duration) error {
	r, err := ks.reload(ctx)
	if err != nil {
		return err
	}
	now := ks.Clock.Now()
	rotated := false
	if maxAge > 0 {
		for _, alg := range Algs {
			cur := r.current(alg)
			if cur == nil || now.Sub(cur.activated) < maxAge {
				continue
			}
			if err := ks.rotateTo(ctx, alg, cur.generation+1); err != nil && !errors.Is(err, ErrRotationLost) {
				return err
			}
			rotated = true
		}
	}
	n, err := ks.Store.DeleteRetiredSigningKeys(ctx, now.Add(-KeyGrace))
	if err != nil {
		return err
	}
	if n > 0 || rotated {
		_, err = ks.reload(ctx)
	}
	return err
}
