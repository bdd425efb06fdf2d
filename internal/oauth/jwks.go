package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/http"

	"hmid/internal/db"
	"hmid/internal/httpx"
)

// rsaSlot is the oauth_signing_keys row of the RS256 key.
const rsaSlot = "rs256"

// signingKey is the RSA key of RS256 ID tokens.
type signingKey struct {
	kid  string
	priv *rsa.PrivateKey
}

// signingKey returns the RS256 key, creating it on first use. Several
// instances racing to create it agree through INSERT … ON CONFLICT DO NOTHING
// on one slot and then all load the stored key.
func (s *Service) signingKey(ctx context.Context) (*signingKey, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.rsaKey != nil {
		return s.rsaKey, nil
	}
	k, err := s.loadKey(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		priv, gerr := rsa.GenerateKey(rand.Reader, 2048)
		if gerr != nil {
			return nil, gerr
		}
		kid := thumbprint(&priv.PublicKey)
		der, gerr := x509.MarshalPKCS8PrivateKey(priv)
		if gerr != nil {
			return nil, gerr
		}
		sealed, gerr := s.Box.Seal(der, []byte("oauth_signing_key:"+kid))
		if gerr != nil {
			return nil, gerr
		}
		if _, gerr := s.DB.ExecContext(ctx, `INSERT INTO oauth_signing_keys (slot, kid, private_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (slot) DO NOTHING`,
			rsaSlot, kid, sealed, db.TS(s.Clock.Now())); gerr != nil {
			return nil, gerr
		}
		k, err = s.loadKey(ctx)
	}
	if err != nil {
		return nil, err
	}
	s.rsaKey = k
	return k, nil
}

func (s *Service) loadKey(ctx context.Context) (*signingKey, error) {
	var kid, sealed string
	if err := s.DB.QueryRowContext(ctx, `SELECT kid, private_key FROM oauth_signing_keys WHERE slot = $1`, rsaSlot).Scan(&kid, &sealed); err != nil {
		return nil, err
	}
	der, err := s.Box.Open(sealed, []byte("oauth_signing_key:"+kid))
	if err != nil {
		return nil, fmt.Errorf("open RS256 signing key: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("stored signing key is not RSA")
	}
	return &signingKey{kid: kid, priv: priv}, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// thumbprint is the RFC 7638 JWK thumbprint of an RSA public key, used as kid.
func thumbprint(pub *rsa.PublicKey) string {
	e := b64(big.NewInt(int64(pub.E)).Bytes())
	n := b64(pub.N.Bytes())
	sum := sha256.Sum256([]byte(`{"e":"` + e + `","kty":"RSA","n":"` + n + `"}`))
	return b64(sum[:])
}

// JWK is one public key of the JWK set (RFC 7517 §4).
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// JWKS serves GET /v1/oauth/jwks: the public keys of RS256 ID tokens.
func (h *Handler) JWKS(w http.ResponseWriter, r *http.Request) {
	k, err := h.S.signingKey(r.Context())
	if err != nil {
		writeOAuthError(w, asOAuth(r, err))
		return
	}
	pub := k.priv.PublicKey
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.JSON(w, http.StatusOK, map[string]any{"keys": []JWK{{
		Kty: "RSA", Use: "sig", Alg: AlgRS256, Kid: k.kid,
		N: b64(pub.N.Bytes()), E: b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}
