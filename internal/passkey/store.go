package passkey

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/db"
)

var b64 = base64.RawURLEncoding

// record is a stored credential with what a ceremony needs.
type record struct {
	Passkey
	userID       string
	credentialID []byte
	publicKey    []byte
	signCount    uint32
	userVerified bool
	format       string
	attachment   string
}

const recordColumns = `id, user_id, credential_id, public_key, sign_count, aaguid, transports, backup_eligible, backup_state,
	user_verified, attestation_format, attachment, name, created_at, last_used_at`

func scanRecord(row db.Scanner) (record, error) {
	var (
		r          record
		cid, pk    string
		count      int64
		transports db.Strings
		created    int64
		used       db.NullTime
	)
	err := row.Scan(&r.ID, &r.userID, &cid, &pk, &count, &r.AAGUID, &transports, &r.BackupEligible, &r.BackupState,
		&r.userVerified, &r.format, &r.attachment, &r.Name, &created, &used)
	if err != nil {
		return r, err
	}
	if r.credentialID, err = b64.DecodeString(cid); err != nil {
		return r, err
	}
	if r.publicKey, err = b64.DecodeString(pk); err != nil {
		return r, err
	}
	r.signCount = uint32(count)
	r.Transports = []string(transports)
	r.CreatedAt = db.FromTS(created)
	r.LastUsedAt = used.Ptr()
	return r, nil
}

// credential is r as the library verifies assertions against it.
func (r record) credential() webauthn.Credential {
	c := webauthn.Credential{
		ID: r.credentialID, PublicKey: r.publicKey, AttestationFormat: r.format,
		Flags:         webauthn.CredentialFlags{UserPresent: true, UserVerified: r.userVerified, BackupEligible: r.BackupEligible, BackupState: r.BackupState},
		Authenticator: webauthn.Authenticator{SignCount: r.signCount, Attachment: protocol.AuthenticatorAttachment(r.attachment)},
	}
	if id, err := uuid.Parse(r.AAGUID); err == nil {
		c.Authenticator.AAGUID = id[:]
	}
	for _, t := range r.Transports {
		c.Transport = append(c.Transport, protocol.AuthenticatorTransport(t))
	}
	return c
}

// records returns the passkeys of userID, oldest first.
func records(ctx context.Context, q db.Querier, userID string) ([]record, error) {
	return db.All(ctx, q, scanRecord, `SELECT `+recordColumns+` FROM passkeys WHERE user_id = $1 ORDER BY created_at, id`, userID)
}

// byCredential returns the passkey with the credential id, or NotFound.
func byCredential(ctx context.Context, q db.Querier, credentialID []byte) (record, error) {
	r, err := scanRecord(q.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM passkeys WHERE credential_id = $1`, b64.EncodeToString(credentialID)))
	if errors.Is(err, sql.ErrNoRows) {
		return r, apperr.NotFoundf("passkey not found")
	}
	return r, err
}

// List returns the passkeys of userID, oldest first (no key material).
func (s *Service) List(ctx context.Context, userID string) ([]Passkey, error) {
	rs, err := records(ctx, s.DB, userID)
	if err != nil {
		return nil, err
	}
	out := make([]Passkey, len(rs))
	for i, r := range rs {
		out[i] = r.Passkey
	}
	return out, nil
}

// Count returns how many passkeys userID holds; synced counts the
// backup-eligible ones among them.
func Count(ctx context.Context, q db.Querier, userID string) (all, synced int, err error) {
	err = q.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN backup_eligible THEN 1 ELSE 0 END), 0) FROM passkeys WHERE user_id = $1`, userID).
		Scan(&all, &synced)
	return all, synced, err
}

// get returns passkey id of userID; another user's is NotFound like an
// unknown one.
func get(ctx context.Context, q db.Querier, userID, id string) (record, error) {
	r, err := scanRecord(q.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM passkeys WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, apperr.NotFoundf("passkey not found")
	}
	return r, err
}

// RemoveAll deletes every passkey of userID through q (an administrator's
// reset of the second factor, inside its transaction) and returns how many.
func RemoveAll(ctx context.Context, q db.Querier, userID string) (int64, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM passkeys WHERE user_id = $1`, userID)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// cleanName trims a passkey name and checks it.
func cleanName(name string) (string, error) {
	name = strings.Join(strings.Fields(name), " ")
	switch {
	case name == "":
		return "", apperr.OnField("name", apperr.Invalid("name is required"))
	case len(name) > MaxName:
		return "", apperr.OnField("name", apperr.Invalid("name must be at most %d bytes", MaxName))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", apperr.OnField("name", apperr.Invalid("name must not contain control characters"))
		}
	}
	return name, nil
}
