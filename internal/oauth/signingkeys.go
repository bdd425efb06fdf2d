package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/db"
)

// KeyAlgs are the asymmetric ID-token algorithms, each with keys of its own
// published at the JWKS, in the order the JWKS lists them.
var KeyAlgs = []string{AlgRS256, AlgES256}

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
var ErrRotationLost = errors.New("oauth: another rotation of this key won")

// signingKey is one asymmetric key, unsealed and parsed once per process:
// the request path signs with it without touching the database.
type signingKey struct {
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

// sign returns the compact JWS (RFC 7515 §7.1) of claims under k. The header
// is encoded once per key; the signature is golang-jwt's.
func (k *signingKey) sign(claims map[string]any) (string, error) {
	return k.signTyped(claims, k.header)
}

// signTyped is sign with another of k's encoded headers.
func (k *signingKey) signTyped(claims map[string]any, header string) (string, error) {
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

// published reports whether k is in the JWKS at now: the signing key of its
// algorithm, or retired less than KeyGrace ago.
func (k *signingKey) published(now time.Time) bool {
	return k.retired.IsZero() || now.Before(k.retired.Add(KeyGrace))
}

// keyring is the keys as loaded at one moment, newest generation first per
// algorithm. It is never changed after it is built; a reload builds another.
type keyring struct {
	keys   []*signingKey
	loaded time.Time
}

// current returns the signing key of alg, or nil when it has none yet.
func (r *keyring) current(alg string) *signingKey {
	var best *signingKey
	for _, k := range r.keys {
		if k.alg == alg && (best == nil || k.generation > best.generation) {
			best = k
		}
	}
	return best
}

// byKid returns the key with the kid, or nil.
func (r *keyring) byKid(kid string) *signingKey {
	for _, k := range r.keys {
		if k.kid == kid {
			return k
		}
	}
	return nil
}

// signer returns the signing key of alg, reading the keys again when the
// cached ones are older than keyCacheTTL and creating the algorithm's first
// key on first use. While one request reads them again, the others go on
// signing with the cached key, which is still published; if reading fails
// the cached key signs too, and the next request tries again.
func (s *Service) signer(ctx context.Context, alg string) (*signingKey, error) {
	r := s.ring.Load()
	var stale *signingKey
	if r != nil {
		stale = r.current(alg)
	}
	if stale != nil {
		if s.Clock.Now().Sub(r.loaded) < keyCacheTTL || !s.keyMu.TryLock() {
			return stale, nil
		}
		defer s.keyMu.Unlock()
		r, err := s.reloadLocked(ctx)
		if err != nil || r.current(alg) == nil {
			return stale, nil
		}
		return r.current(alg), nil
	}
	r, err := s.reloadKeys(ctx, alg)
	if err != nil {
		return nil, err
	}
	return r.current(alg), nil
}

// reloadKeys reads the keys from the database, keeping the parsed keys of
// kids already known, and creates the first key of each of ensure that has
// none.
func (s *Service) reloadKeys(ctx context.Context, ensure ...string) (*keyring, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	return s.reloadLocked(ctx, ensure...)
}

// reloadLocked is reloadKeys for a caller holding keyMu. Several instances
// creating a first key at once agree through INSERT … ON CONFLICT DO NOTHING
// on (alg, generation 1).
func (s *Service) reloadLocked(ctx context.Context, ensure ...string) (*keyring, error) {
	r, err := s.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	created := false
	for _, alg := range ensure {
		if r.current(alg) != nil {
			continue
		}
		k, err := s.newSealedKey(alg)
		if err != nil {
			return nil, err
		}
		if _, err := s.insertKey(ctx, s.DB, alg, 1, k); err != nil {
			return nil, err
		}
		created = true
	}
	if created {
		if r, err = s.loadKeys(ctx); err != nil {
			return nil, err
		}
	}
	s.ring.Store(r)
	return r, nil
}

// loadKeys reads every stored key; the caller holds keyMu. Keys the cached
// ring already holds are reused, so a key is unsealed and parsed once.
func (s *Service) loadKeys(ctx context.Context) (*keyring, error) {
	prev := s.ring.Load()
	rows, err := s.DB.QueryContext(ctx, `SELECT kid, alg, generation, private_key, created_at, activated_at, retired_at FROM oauth_signing_keys ORDER BY alg, generation DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	r := &keyring{loaded: s.Clock.Now()}
	for rows.Next() {
		var kid, alg, sealed string
		var gen, created, activated int64
		var retired sql.NullInt64
		if err := rows.Scan(&kid, &alg, &gen, &sealed, &created, &activated, &retired); err != nil {
			return nil, err
		}
		var k signingKey
		if prev != nil && prev.byKid(kid) != nil {
			k = *prev.byKid(kid)
		} else {
			parsed, err := s.openKey(kid, alg, sealed)
			if err != nil {
				return nil, err
			}
			k = *parsed
		}
		k.generation, k.created, k.activated, k.retired = gen, db.FromTS(created), db.FromTS(activated), time.Time{}
		if retired.Valid {
			k.retired = db.FromTS(retired.Int64)
		}
		r.keys = append(r.keys, &k)
	}
	return r, rows.Err()
}

// openKey unseals and parses a stored private key and prepares what signing
// and the JWKS need of it.
func (s *Service) openKey(kid, alg, sealed string) (*signingKey, error) {
	der, err := s.Box.Open(sealed, []byte("oauth_signing_key:"+kid))
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
func newSigningKey(kid, alg string, key any) (*signingKey, error) {
	k := &signingKey{kid: kid, alg: alg}
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
	header, err := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	if err != nil {
		return nil, err
	}
	k.header = b64(header)
	atHeader, err := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "at+jwt"})
	if err != nil {
		return nil, err
	}
	k.atHeader = b64(atHeader)
	return k, nil
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

// sealedKey is a new private key as stored: its kid and the sealed PKCS #8
// encoding.
type sealedKey struct{ kid, sealed string }

// newSealedKey generates a key of alg and seals it with the server key. It
// runs before any transaction opens: RSA key generation takes tenths of a
// second, too long to hold SQLite's writer.
func (s *Service) newSealedKey(alg string) (sealedKey, error) {
	kid, priv, err := generateKey(alg)
	if err != nil {
		return sealedKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return sealedKey{}, err
	}
	sealed, err := s.Box.Seal(der, []byte("oauth_signing_key:"+kid))
	return sealedKey{kid: kid, sealed: sealed}, err
}

// insertKey stores k as generation gen of alg. It reports false when that
// generation already exists: another instance stored it first, and its key
// is the one everyone uses.
func (s *Service) insertKey(ctx context.Context, q db.Querier, alg string, gen int64, k sealedKey) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO oauth_signing_keys (kid, alg, generation, private_key, created_at, activated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING`,
		k.kid, alg, gen, k.sealed, db.TS(s.Clock.Now()))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
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

// SigningKeys lists the stored keys, read afresh, newest first per algorithm.
func (s *Service) SigningKeys(ctx context.Context) ([]KeyInfo, error) {
	r, err := s.reloadKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := make([]KeyInfo, 0, len(r.keys))
	for _, k := range r.keys {
		ki := KeyInfo{Kid: k.kid, Alg: k.alg, Generation: k.generation, CreatedAt: k.created, ActivatedAt: k.activated, Published: k.published(now)}
		if !k.retired.IsZero() {
			t := k.retired
			ki.RetiredAt = &t
		}
		out = append(out, ki)
	}
	return out, nil
}

// RotateSigningKeys adds a new key for each of algs (every algorithm of
// KeyAlgs when empty), which becomes that algorithm's signing key at once;
// the previous key is retired and stays in the JWKS for KeyGrace. It is what
// "hmid keys rotate" runs. Unknown algorithms are a validation error. When
// another instance rotates the same algorithm at the same moment, one new key
// wins and the other call answers ErrRotationLost.
func (s *Service) RotateSigningKeys(ctx context.Context, algs ...string) ([]KeyInfo, error) {
	if len(algs) == 0 {
		algs = KeyAlgs
	}
	for _, alg := range algs {
		if !slices.Contains(KeyAlgs, alg) {
			return nil, fmt.Errorf("unknown signing algorithm %q: use RS256 or ES256", alg)
		}
	}
	s.keyMu.Lock()
	r, err := s.loadKeys(ctx)
	s.keyMu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, alg := range algs {
		gen := int64(1)
		if cur := r.current(alg); cur != nil {
			gen = cur.generation + 1
		}
		if err := s.rotateTo(ctx, alg, gen); err != nil {
			return nil, err
		}
	}
	return s.SigningKeys(ctx)
}

// rotateTo stores a new key of alg as generation gen and retires the older
// ones, in one transaction. When gen exists already another rotation won:
// nothing changes and the answer is ErrRotationLost.
func (s *Service) rotateTo(ctx context.Context, alg string, gen int64) error {
	k, err := s.newSealedKey(alg)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		won, err := s.insertKey(ctx, tx, alg, gen, k)
		if err != nil {
			return err
		}
		if !won {
			return ErrRotationLost
		}
		_, err = tx.ExecContext(ctx, `UPDATE oauth_signing_keys SET retired_at = $1 WHERE alg = $2 AND generation < $3 AND retired_at IS NULL`,
			db.TS(s.Clock.Now()), alg, gen)
		return err
	})
}

// MaintainKeys is one run of the key job: it rotates each algorithm whose
// signing key is older than maxAge (0: never), and deletes retired keys past
// KeyGrace, which the JWKS no longer lists. Algorithms without a key are left
// alone: their first key is made on first use. It is safe on several
// instances at once: a rotation is conditional on the generation this run
// saw, so of instances racing exactly one rotates.
func (s *Service) MaintainKeys(ctx context.Context, maxAge time.Duration) error {
	r, err := s.reloadKeys(ctx)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	rotated := false
	if maxAge > 0 {
		for _, alg := range KeyAlgs {
			cur := r.current(alg)
			if cur == nil || now.Sub(cur.activated) < maxAge {
				continue
			}
			if err := s.rotateTo(ctx, alg, cur.generation+1); err != nil && !errors.Is(err, ErrRotationLost) {
				return err
			}
			rotated = true
		}
	}
	res, err := s.DB.ExecContext(ctx, `DELETE FROM oauth_signing_keys WHERE retired_at IS NOT NULL AND retired_at <= $1`, db.TS(now.Add(-KeyGrace)))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 || rotated {
		_, err = s.reloadKeys(ctx)
	}
	return err
}

// RunKeyMaintenance runs MaintainKeys every interval until ctx ends, on one
// instance at a time (DB.TryLock), logging failures through logf.
func (s *Service) RunKeyMaintenance(ctx context.Context, interval, maxAge time.Duration, logf func(error)) {
	s.every(ctx, interval, "oauth-signing-keys", logf, func(ctx context.Context) error { return s.MaintainKeys(ctx, maxAge) })
}
