package signing

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
)

// b64 is base64url without padding (RFC 7515 §2).
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWK is one public key of the JWK set (RFC 7517 §4): n and e for RSA keys
// (RFC 7518 §6.3.1), crv, x and y for elliptic-curve keys (§6.2.1).
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// rsaJWK is the JWK of an RSA public key.
func rsaJWK(kid string, pub *rsa.PublicKey) JWK {
	return JWK{Kty: "RSA", Use: "sig", Alg: AlgRS256, Kid: kid, N: b64(pub.N.Bytes()), E: b64(big.NewInt(int64(pub.E)).Bytes())}
}

// ecJWK is the JWK of a P-256 public key; x and y are the 32-byte
// coordinates of the uncompressed point (RFC 7518 §6.2.1.2).
func ecJWK(kid string, pub *ecdsa.PublicKey) (JWK, error) {
	raw, err := pub.Bytes()
	if err != nil || len(raw) != 65 {
		return JWK{}, fmt.Errorf("encode P-256 public key: %v", err)
	}
	return JWK{Kty: "EC", Use: "sig", Alg: AlgES256, Kid: kid, Crv: "P-256", X: b64(raw[1:33]), Y: b64(raw[33:])}, nil
}

// thumbprint is the RFC 7638 JWK thumbprint, used as kid: SHA-256 of the
// required members in lexicographic order, without white space.
func (j JWK) thumbprint() string {
	var canon string
	if j.Kty == "EC" {
		canon = `{"crv":"` + j.Crv + `","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`
	} else {
		canon = `{"e":"` + j.E + `","kty":"RSA","n":"` + j.N + `"}`
	}
	sum := sha256.Sum256([]byte(canon))
	return b64(sum[:])
}
