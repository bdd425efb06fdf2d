// Package passkeytest is a software WebAuthn authenticator for tests and
// benchmarks: it answers the options hmid sends for
// navigator.credentials.create and .get with the JSON a browser would post
// (WebAuthn Level 3 §5.1, §6.1, §6.5), signing with an ES256 key (RFC 9053
// §2.1), with "none" attestation.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

var b64 = base64.RawURLEncoding

// Authenticator holds one credential.
type Authenticator struct {
	RPID   string
	Origin string
	// AAGUID names the authenticator model (zero: hidden).
	AAGUID [16]byte
	// Synced sets the backup-eligible and backup-state flags.
	Synced bool
	// SkipUV leaves the user-verified flag off.
	SkipUV bool
	// Count is the signature counter; each assertion adds one first.
	Count uint32

	key        *ecdsa.PrivateKey
	credID     []byte
	userHandle []byte
}

// New returns an authenticator for the relying party rpID at origin.
func New(rpID, origin string) *Authenticator {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	return &Authenticator{RPID: rpID, Origin: origin, key: k, credID: id}
}

// Clone returns a copy of a with the same key and credential, as a copied
// private key would be; its counter starts again at start.
func (a *Authenticator) Clone(start uint32) *Authenticator {
	c := *a
	c.Count = start
	return &c
}

// CredentialID is the credential's id.
func (a *Authenticator) CredentialID() []byte { return a.credID }

type publicKeyOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		User      struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"publicKey"`
}

func challengeOf(options []byte) (publicKeyOptions, error) {
	var o publicKeyOptions
	if err := json.Unmarshal(options, &o); err != nil || o.PublicKey.Challenge == "" {
		return o, fmt.Errorf("passkeytest: options without a challenge: %s", options)
	}
	return o, nil
}

// ClientData is the client data JSON of a ceremony (§5.8.1).
func (a *Authenticator) ClientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	return b
}

func (a *Authenticator) flags(attested bool) byte {
	f := byte(0x01) // UP
	if !a.SkipUV {
		f |= 0x04
	}
	if a.Synced {
		f |= 0x08 | 0x10
	}
	if attested {
		f |= 0x40
	}
	return f
}

func (a *Authenticator) authData(attested bool) []byte {
	h := sha256.Sum256([]byte(a.RPID))
	out := append([]byte{}, h[:]...)
	out = append(out, a.flags(attested))
	out = binary.BigEndian.AppendUint32(out, a.Count)
	if attested {
		out = append(out, a.AAGUID[:]...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(a.credID)))
		out = append(out, a.credID...)
		out = append(out, a.coseKey()...)
	}
	return out
}

// coseKey is the public key as a COSE_Key (RFC 9053 §7.1.1: EC2, P-256, ES256).
func (a *Authenticator) coseKey() []byte {
	x := a.key.PublicKey.X.FillBytes(make([]byte, 32))
	y := a.key.PublicKey.Y.FillBytes(make([]byte, 32))
	em, _ := cbor.CTAP2EncOptions().EncMode()
	b, err := em.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		panic(err)
	}
	return b
}

// Create answers creation options with a registration (§5.1.3).
func (a *Authenticator) Create(options []byte) ([]byte, error) {
	o, err := challengeOf(options)
	if err != nil {
		return nil, err
	}
	if a.userHandle, err = b64.DecodeString(o.PublicKey.User.ID); err != nil {
		return nil, fmt.Errorf("passkeytest: user id: %w", err)
	}
	em, _ := cbor.CTAP2EncOptions().EncMode()
	att, err := em.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(true)})
	if err != nil {
		return nil, err
	}
	return a.credential(map[string]any{
		"clientDataJSON":    b64.EncodeToString(a.ClientData("webauthn.create", o.PublicKey.Challenge)),
		"attestationObject": b64.EncodeToString(att),
		"transports":        []string{"internal"},
	}, map[string]any{"credProps": map[string]any{"rk": true}})
}

// credential is the PublicKeyCredential (§5.1) the browser hands the page:
// this authenticator's credential with response and the client extension
// results.
func (a *Authenticator) credential(response, extensions map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"authenticatorAttachment": "platform", "response": response, "clientExtensionResults": extensions,
	})
}

// Get answers request options with an assertion (§5.1.4), after adding one
// to the counter.
func (a *Authenticator) Get(options []byte) ([]byte, error) {
	o, err := challengeOf(options)
	if err != nil {
		return nil, err
	}
	return a.Assert(a.ClientData("webauthn.get", o.PublicKey.Challenge))
}

// Assert signs clientData (which a test may have altered) as an assertion.
func (a *Authenticator) Assert(clientData []byte) ([]byte, error) {
	a.Count++
	ad := a.authData(false)
	h := sha256.Sum256(clientData)
	// ES256 signs the SHA-256 of authenticatorData || hash(clientData) (§6.3.3).
	signed := sha256.Sum256(append(append([]byte{}, ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, signed[:])
	if err != nil {
		return nil, err
	}
	return a.credential(map[string]any{
		"clientDataJSON":    b64.EncodeToString(clientData),
		"authenticatorData": b64.EncodeToString(ad),
		"signature":         b64.EncodeToString(sig),
		"userHandle":        b64.EncodeToString(a.userHandle),
	}, map[string]any{})
}

// SetUserHandle replaces the user handle assertions carry (a test of a
// handle naming another user).
func (a *Authenticator) SetUserHandle(h []byte) { a.userHandle = h }
