package passkey

import (
	"context"
	"encoding/json"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/mail"
)

// BeginRegistration starts adding a passkey for userID in the browser
// identified by binding, and returns the options of
// navigator.credentials.create (WebAuthn §5.4): a discoverable credential
// (residentKey preferred, so security keys without room still work as a
// second factor), user verification as the policy says, the user's
// existing credentials excluded (§5.4.3 excludeCredentials) and the
// credProps extension (§10.1.3) to learn whether it is discoverable.
// The caller has checked that the user authenticated recently.
func (s *Service) BeginRegistration(ctx context.Context, userID, binding string) (json.RawMessage, error) {
	p, err := s.enabled(ctx)
	if err != nil {
		return nil, err
	}
	u, rs, err := s.loadUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	if len(rs) >= MaxPerUser {
		return nil, apperr.Invalid("you already have %d passkeys; remove one first", MaxPerUser)
	}
	exclude := make([]protocol.CredentialDescriptor, len(u.creds))
	for i, c := range u.creds {
		exclude[i] = c.Descriptor()
	}
	opts, session, err := s.rp.BeginRegistration(u,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementPreferred, UserVerification: uvRequirement(p),
		}),
		webauthn.WithExclusions(exclude),
		webauthn.WithExtensions(webauthn.WithExtensionCredProps()),
	)
	if err != nil {
		return nil, err
	}
	return s.begin(ctx, kindRegister, userID, binding, session, opts)
}

// FinishRegistration verifies the browser's answer (the
// PublicKeyCredential JSON of §5.1) to a registration begun for userID in
// the same browser, stores the passkey with name (or, when empty, the name
// of its authenticator model), audits passkey_added and mails the user.
// Errors: 400 for a malformed, replayed or expired answer or one that does
// not verify (wrong origin, RP ID, challenge), 409 for a credential already
// registered.
func (s *Service) FinishRegistration(ctx context.Context, userID, binding string, body []byte, name string, c Client) (Passkey, error) {
	if _, err := s.enabled(ctx); err != nil {
		return Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(body)
	if err != nil {
		return Passkey{}, apperr.Invalid("the passkey answer is malformed")
	}
	cer, err := s.take(ctx, parsed.Response.CollectedClientData.Challenge, kindRegister, binding)
	if err != nil {
		return Passkey{}, err
	}
	if cer.UserID != userID {
		return Passkey{}, errCeremony
	}
	u, _, err := s.loadUser(ctx, userID)
	if err != nil {
		return Passkey{}, err
	}
	cred, err := s.rp.CreateCredential(u, cer.Session, parsed)
	if err != nil {
		return Passkey{}, apperr.Invalid("the passkey could not be verified: %s", details(err))
	}
	return s.store(ctx, userID, cred, name, c)
}

// store inserts a verified new credential and reports it.
func (s *Service) store(ctx context.Context, userID string, cred *webauthn.Credential, name string, c Client) (Passkey, error) {
	now := s.now()
	aaguid := uuid.Nil.String()
	if id, err := uuid.FromBytes(cred.Authenticator.AAGUID); err == nil {
		aaguid = id.String()
	}
	transports := make([]string, 0, len(cred.Transport))
	for _, t := range cred.Transport {
		transports = append(transports, string(t))
	}
	if name == "" {
		name = DefaultName(aaguid, transports)
	}
	name, err := cleanName(name)
	if err != nil {
		return Passkey{}, err
	}
	pk := Passkey{ID: db.NewID(), Name: name, AAGUID: aaguid, CreatedAt: now, BackupEligible: cred.Flags.BackupEligible,
		BackupState: cred.Flags.BackupState, Transports: transports}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO passkeys (id, user_id, credential_id, public_key, sign_count, aaguid, transports,
			backup_eligible, backup_state, user_verified, attestation_format, attachment, name, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			pk.ID, userID, b64.EncodeToString(cred.ID), b64.EncodeToString(cred.PublicKey), int64(cred.Authenticator.SignCount), aaguid,
			db.JSON(transports), pk.BackupEligible, pk.BackupState, cred.Flags.UserVerified, cred.AttestationFormat,
			string(cred.Authenticator.Attachment), pk.Name, db.TS(now)); err != nil {
			return err
		}
		_, err := s.Audit.Record(ctx, tx, audit.Event{
			UserID: userID, EventType: EventAdded, ResourceType: "passkey", ResourceID: pk.ID,
			IPAddress: c.IPAddress, UserAgent: c.UserAgent, SourceService: c.source(),
			Description: "Passkey added: " + pk.Name,
			Metadata:    map[string]any{"passkey_id": pk.ID, "aaguid": aaguid, "backup_eligible": pk.BackupEligible},
		})
		return err
	})
	if db.IsUniqueViolation(err) {
		return Passkey{}, apperr.Conflictf("this passkey is already registered")
	}
	if err != nil {
		return Passkey{}, err
	}
	s.notify(ctx, userID, mail.KindPasskeyAdded, pk.Name)
	return pk, nil
}
