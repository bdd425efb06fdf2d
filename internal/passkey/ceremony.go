package passkey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"hmid/internal/apperr"
	"hmid/internal/cache"
)

// Kinds of ceremony: a registration, a passwordless sign-in with a
// discoverable credential, and a second factor after a first login step.
const (
	kindRegister = "register"
	kindLogin    = "login"
	kindSecond   = "second"
)

// ceremony is a begun registration or login as the shared cache keeps it,
// under the hash of its challenge (the challenge comes back inside the
// signed client data, so the browser needs no other handle).
type ceremony struct {
	Kind    string               `json:"kind"`
	UserID  string               `json:"user_id,omitempty"`
	Binding string               `json:"binding"` // SHA-256 of the browser's binding value
	Expires time.Time            `json:"expires"`
	Session webauthn.SessionData `json:"session"`
}

// errCeremony is the one answer for a challenge that is unknown, expired,
// used, or begun by another browser or for another purpose: telling them
// apart would help nobody but someone replaying.
var errCeremony = apperr.Invalid("the passkey request expired or was already used; start again")

func ceremonyKey(challenge string) string { return "passkey:ceremony:" + digest(challenge) }
func usedKey(challenge string) string     { return "passkey:used:" + digest(challenge) }

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// begin stores a ceremony and returns the options the browser passes to
// navigator.credentials (the JSON of WebAuthn §5.4 and §5.5).
func (s *Service) begin(ctx context.Context, kind, userID, binding string, session *webauthn.SessionData, options any) (json.RawMessage, error) {
	if binding == "" {
		return nil, apperr.Bad("the browser has no sign-in cookie; reload the page")
	}
	c := ceremony{Kind: kind, UserID: userID, Binding: digest(binding), Expires: s.now().Add(CeremonyTTL), Session: *session}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if err := s.Cache.Set(ctx, ceremonyKey(session.Challenge), raw, CeremonyTTL); err != nil {
		return nil, apperr.Unavailablef("passkeys are unavailable right now; try again later")
	}
	return json.Marshal(options)
}

// take returns the ceremony of challenge once: it must be of kind, begun by
// the same browser (binding) and not expired; a second take of the same
// challenge, on any instance, fails (the used marker is set atomically in
// the shared cache).
func (s *Service) take(ctx context.Context, challenge, kind, binding string) (ceremony, error) {
	var c ceremony
	if challenge == "" {
		return c, errCeremony
	}
	raw, err := s.Cache.Get(ctx, ceremonyKey(challenge))
	if errors.Is(err, cache.ErrMiss) {
		return c, errCeremony
	}
	if err != nil {
		return c, apperr.Unavailablef("passkeys are unavailable right now; try again later")
	}
	if json.Unmarshal(raw, &c) != nil || c.Kind != kind || !s.now().Before(c.Expires) ||
		subtle.ConstantTimeCompare([]byte(c.Binding), []byte(digest(binding))) != 1 {
		return ceremony{}, errCeremony
	}
	first, err := s.Cache.SetNX(ctx, usedKey(challenge), []byte("1"), CeremonyTTL)
	if err != nil {
		return ceremony{}, apperr.Unavailablef("passkeys are unavailable right now; try again later")
	}
	if !first {
		return ceremony{}, errCeremony
	}
	_ = s.Cache.Delete(ctx, ceremonyKey(challenge))
	return c, nil
}

// webUser is a user as the library sees it. The user handle is the user id
// (a random UUID, no personal data; WebAuthn §14.6.1).
type webUser struct {
	id, name string
	creds    []webauthn.Credential
}

func (u *webUser) WebAuthnID() []byte                         { return []byte(u.id) }
func (u *webUser) WebAuthnName() string                       { return u.name }
func (u *webUser) WebAuthnDisplayName() string                { return u.name }
func (u *webUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// loadUser returns userID with their credentials; a deleted or unknown
// user is NotFound.
func (s *Service) loadUser(ctx context.Context, userID string) (*webUser, []record, error) {
	var name string
	var deleted bool
	err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(NULLIF(email, ''), username), deleted_at IS NOT NULL FROM users WHERE id = $1`, userID).Scan(&name, &deleted)
	if err != nil || deleted {
		return nil, nil, apperr.NotFoundf("user not found")
	}
	rs, err := records(ctx, s.DB, userID)
	if err != nil {
		return nil, nil, err
	}
	u := &webUser{id: userID, name: name}
	for _, r := range rs {
		u.creds = append(u.creds, r.credential())
	}
	return u, rs, nil
}

// uvRequirement is the user-verification requirement of the policy.
func uvRequirement(p Policy) protocol.UserVerificationRequirement {
	switch p.UserVerification {
	case "required":
		return protocol.VerificationRequired
	case "discouraged":
		return protocol.VerificationDiscouraged
	}
	return protocol.VerificationPreferred
}
