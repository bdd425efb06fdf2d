package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret (Standard Webhooks, "Signature
// scheme": the secret is whsec_ followed by base64 of its bytes).
const SecretPrefix = "whsec_"

// secretBytes is the length of a new secret: 32 random bytes, the 256 bits
// hmid gives every secret (the specification asks for 24 to 64).
const secretBytes = 32

// NewSecret returns a new signing secret, whsec_ + base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// secretKey is the HMAC key of a secret: its base64 part decoded
// (Standard Webhooks: "the secret is base64 encoded, prefixed with whsec_";
// the key is the decoded bytes).
func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("webhooks: a signing secret starts with " + SecretPrefix)
	}
	return base64.StdEncoding.DecodeString(b64)
}

// Sign returns the signature of one message under secret: "v1," followed by
// base64 of HMAC-SHA256 over "id.timestamp.body" (Standard Webhooks,
// "Signature scheme"; timestamp in seconds since the Unix epoch).
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// SignatureHeader is the webhook-signature header of one message: one
// signature per secret, space-separated (the specification's form for the
// old and new secret of a rotation).
func SignatureHeader(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, id, ts, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}
