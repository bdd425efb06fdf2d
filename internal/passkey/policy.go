package passkey

import (
	"context"
	"encoding/json"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/settings"
)

// Policy is what an operator decides about passkeys in the system config
// (typed on /admin/config; the keys are settings.KeyPasskey*).
type Policy struct {
	// Enabled: passkeys may be added and used at all.
	Enabled bool
	// Passwordless: a passkey alone signs in; without it a passkey serves
	// only as the second factor after a password or provider.
	Passwordless bool
	// RefuseSynced: a synced (backup-eligible) passkey is refused for users
	// of whom two-factor authentication is required, and does not count as
	// their second factor (only a device-bound key does).
	RefuseSynced bool
	// UserVerification is "required", "preferred" or "discouraged"
	// (WebAuthn §5.8.6).
	UserVerification string
}

// DefaultPolicy holds when no entry is set.
var DefaultPolicy = Policy{Enabled: true, Passwordless: true, UserVerification: "preferred"}

// Policy reads the passkey policy in one query; an unset or unreadable
// entry keeps its default.
func (s *Service) Policy(ctx context.Context) (Policy, error) {
	return ReadPolicy(ctx, s.DB)
}

// ReadPolicy is Service.Policy through q.
func ReadPolicy(ctx context.Context, q db.Querier) (Policy, error) {
	p := DefaultPolicy
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM system_config WHERE key IN ($1, $2, $3, $4)`,
		settings.KeyPasskeyEnabled, settings.KeyPasskeyPasswordless, settings.KeyPasskeyRefuseSynced, settings.KeyPasskeyUserVerification)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return p, err
		}
		switch k {
		case settings.KeyPasskeyEnabled:
			_ = json.Unmarshal([]byte(v), &p.Enabled)
		case settings.KeyPasskeyPasswordless:
			_ = json.Unmarshal([]byte(v), &p.Passwordless)
		case settings.KeyPasskeyRefuseSynced:
			_ = json.Unmarshal([]byte(v), &p.RefuseSynced)
		case settings.KeyPasskeyUserVerification:
			_ = json.Unmarshal([]byte(v), &p.UserVerification)
		}
	}
	return p, rows.Err()
}

// enabled returns the policy, or Forbidden when passkeys are off.
func (s *Service) enabled(ctx context.Context) (Policy, error) {
	if s.rp == nil {
		return Policy{}, apperr.Forbiddenf("passkeys need HMID_PUBLIC_URL with a domain name, not an IP address")
	}
	p, err := s.Policy(ctx)
	if err != nil {
		return p, err
	}
	if !p.Enabled {
		return p, apperr.Forbiddenf("passkeys are turned off on this server")
	}
	return p, nil
}

// refusesSynced reports whether a synced passkey is refused for userID: the
// policy says so and a role of theirs requires two-factor authentication.
func (s *Service) refusesSynced(ctx context.Context, p Policy, userID string) (bool, error) {
	if !p.RefuseSynced {
		return false, nil
	}
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_roles ur JOIN roles r ON r.id = ur.role_id
		WHERE ur.user_id = $1 AND r.requires_two_factor`, userID).Scan(&n)
	return n > 0, err
}
