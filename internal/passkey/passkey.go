// Package passkey implements passkeys (WebAuthn Level 3, on
// github.com/go-webauthn/webauthn): registration of discoverable
// credentials on the account console, sign-in with a passkey as the whole
// login (passwordless, discoverable credentials and conditional mediation)
// or as the second factor after a password, the listing, renaming and
// removal of a user's passkeys (REST, GraphQL and the pages), and the
// policy an operator sets in the system config.
//
// The ceremonies' challenges are kept in the shared cache (Redis when
// configured), so an instance can verify what another began; each is bound
// to the browser that asked for it (its CSRF cookie), lives five minutes
// and is accepted once. A stored credential records the authenticator's
// signature counter; an assertion whose counter does not advance is
// refused and audited as a possible clone (WebAuthn §6.1.1, §7.2 step 21).
package passkey

import (
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/mail"
)

// CeremonyTTL is how long a begun registration or login may be finished.
const CeremonyTTL = 5 * time.Minute

// MaxName is the longest passkey name, in bytes.
const MaxName = 100

// MaxPerUser bounds the passkeys one user may hold.
const MaxPerUser = 20

// Audit event types of passkeys (extensions of spec 2, Events).
const (
	EventAdded   = audit.PasskeyAdded
	EventRemoved = audit.PasskeyRemoved
	EventLogin   = audit.PasskeyLogin
)

// Passkey is a stored credential as the API shows it (no key material).
type Passkey struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	AAGUID         string     `json:"aaguid"`
	CreatedAt      time.Time  `json:"created_at"`
	LastUsedAt     *time.Time `json:"last_used_at"`
	BackupEligible bool       `json:"backup_eligible"`
	BackupState    bool       `json:"backup_state"`
	Transports     []string   `json:"transports"`
}

// Synced reports whether the passkey may live on several devices (backup
// eligible), as opposed to one bound to its device.
func (p Passkey) Synced() bool { return p.BackupEligible }

// Client is where a request came from, for the audit log.
type Client struct {
	IPAddress     string
	UserAgent     string
	SourceService string // "" means api
}

func (c Client) source() string {
	if c.SourceService == "" {
		return "api"
	}
	return c.SourceService
}

// Service holds the dependencies of passkeys.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	// Cache keeps the begun ceremonies (Redis across instances).
	Cache cache.Cache
	Mail  mail.Sender
	Log   *slog.Logger

	rp *webauthn.WebAuthn
	// rpID and origin are the relying party of HMID_PUBLIC_URL.
	rpID, origin string
}

// New returns the service for the relying party of publicURL: its host
// (without port) is the RP ID (WebAuthn §5.1.2: an effective domain;
// "localhost" is one) and its origin the one origin ceremonies are accepted
// from.
func New(s Service, publicURL string) (*Service, error) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Hostname() == "" {
		return nil, apperr.Invalid("passkeys: HMID_PUBLIC_URL has no host")
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	s.rpID, s.origin = u.Hostname(), u.Scheme+"://"+u.Host
	if net.ParseIP(s.rpID) != nil {
		// An RP ID is a domain (WebAuthn §5.1.2); browsers refuse an IP
		// address. The server still starts, with passkeys unavailable.
		s.Log.Warn("passkeys are unavailable: HMID_PUBLIC_URL names an IP address, not a domain", "host", s.rpID)
		return &s, nil
	}
	timeout := webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL}
	s.rp, err = webauthn.New(&webauthn.Config{
		RPID:          s.rpID,
		RPDisplayName: "hmid",
		RPOrigins:     []string{s.origin},
		// Passkeys are accepted without attestation: hmid trusts the
		// person who registers one, not a vendor (WebAuthn §5.4.7 "none").
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts:              webauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
	})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// RPID is the relying-party id passkeys are bound to.
func (s *Service) RPID() string { return s.rpID }

// Origin is the origin ceremonies must come from.
func (s *Service) Origin() string { return s.origin }

func (s *Service) now() time.Time { return s.Clock.Now() }

// Available reports whether passkeys can work at all here (HMID_PUBLIC_URL
// names a domain).
func (s *Service) Available() bool { return s.rp != nil }
