package passkey

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
)

// Assertion is a verified passkey sign-in.
type Assertion struct {
	UserID  string
	Passkey Passkey
	// UserVerified: the authenticator verified the user (PIN, biometrics;
	// the UV flag of this assertion's authenticator data, WebAuthn §6.1).
	UserVerified bool
	// AMR are the RFC 8176 authentication method references of the
	// passkey (see AMR).
	AMR []string
}

// AMR maps a passkey assertion to RFC 8176 §2 values: "hwk" for a key bound
// to its device (proof of possession of a hardware-secured key), "swk" for a
// synced one (its private key is held in software that syncs it), "user"
// for the test of user presence every assertion carries, and "mfa" when the
// authenticator also verified the user: possession plus a PIN or a
// biometric are two factors. WebAuthn does not tell which verification
// method was used, so "pin" or "fpt" are not claimed (docs/decisions.md).
func AMR(synced, userVerified bool) []string {
	out := []string{"hwk", "user"}
	if synced {
		out[0] = "swk"
	}
	if userVerified {
		out = append(out, "mfa")
	}
	return out
}

// BeginLogin starts a sign-in in the browser identified by binding and
// returns the options of navigator.credentials.get (WebAuthn §5.5). With
// userID "" it is a passwordless sign-in with a discoverable credential
// (empty allowCredentials, §5.5.3; also the conditional-mediation request of
// the email field's autofill); with a userID it is the second factor after
// a first login step, and allowCredentials lists that user's passkeys.
func (s *Service) BeginLogin(ctx context.Context, binding, userID string) (json.RawMessage, error) {
	p, err := s.enabled(ctx)
	if err != nil {
		return nil, err
	}
	uv := webauthn.WithUserVerification(uvRequirement(p))
	if userID == "" {
		if !p.Passwordless {
			return nil, apperr.Forbiddenf("signing in with a passkey alone is turned off on this server")
		}
		opts, session, err := s.rp.BeginDiscoverableLogin(uv)
		if err != nil {
			return nil, err
		}
		return s.begin(ctx, kindLogin, "", binding, session, opts)
	}
	u, _, err := s.loadUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	if len(u.creds) == 0 {
		return nil, apperr.Invalid("this account has no passkey")
	}
	opts, session, err := s.rp.BeginLogin(u, uv)
	if err != nil {
		return nil, err
	}
	return s.begin(ctx, kindSecond, userID, binding, session, opts)
}

// FinishLogin verifies the browser's assertion (the PublicKeyCredential JSON
// of §5.1) to a sign-in begun in the same browser. userID is "" for a
// passwordless sign-in, else the user of the first login step, whose
// passkey it must be. On success the stored counter and backup state are
// updated and passkey_login is audited; every refusal is audited as a
// failed passkey_login and changes nothing. Errors: 400 for a malformed,
// replayed or expired answer; 401 for an unknown credential, another
// user's, one that does not verify (wrong origin, RP ID, signature) or a
// counter that did not advance (a possible clone); 403 when the policy
// refuses it.
func (s *Service) FinishLogin(ctx context.Context, binding, userID string, body []byte, c Client) (Assertion, error) {
	p, err := s.enabled(ctx)
	if err != nil {
		return Assertion{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return Assertion{}, apperr.Invalid("the passkey answer is malformed")
	}
	kind := kindLogin
	if userID != "" {
		kind = kindSecond
	}
	cer, err := s.take(ctx, parsed.Response.CollectedClientData.Challenge, kind, binding)
	if err != nil {
		return Assertion{}, err
	}
	a, rec, err := s.verify(ctx, cer, parsed)
	if err != nil {
		return Assertion{}, s.refuse(ctx, rec, c, err)
	}
	if a.Passkey.Synced() {
		if refuse, err := s.refusesSynced(ctx, p, a.UserID); err != nil {
			return Assertion{}, err
		} else if refuse {
			return Assertion{}, s.refuse(ctx, rec, c, apperr.Forbiddenf("synced passkeys are not accepted for your account; use a security key bound to its device"))
		}
	}
	_, err = s.Audit.Record(ctx, s.DB, audit.Event{
		UserID: a.UserID, EventType: EventLogin, ResourceType: "passkey", ResourceID: a.Passkey.ID,
		IPAddress: c.IPAddress, UserAgent: c.UserAgent, SourceService: c.source(),
		Description: "Signed in with passkey " + a.Passkey.Name,
		Metadata:    map[string]any{"passkey_id": a.Passkey.ID, "user_verified": a.UserVerified, "second_factor": kind == kindSecond, "amr": a.AMR},
	})
	return a, err
}

// errNoKey is the one answer for an assertion that names no passkey of
// the account it is for: unknown, removed, or another user's.
var errNoKey = apperr.Unauthorizedf("this passkey is not registered for this account")

// verify checks an assertion against its ceremony and the stored
// credential, and records the new counter. The record is returned (zero
// when unknown) so a refusal can be audited on its user.
func (s *Service) verify(ctx context.Context, cer ceremony, parsed *protocol.ParsedCredentialAssertionData) (Assertion, record, error) {
	rec, err := byCredential(ctx, s.DB, parsed.RawID)
	if apperr.Is(err, apperr.NotFound) {
		return Assertion{}, record{}, errNoKey
	}
	if err != nil {
		return Assertion{}, record{}, err
	}
	handle := parsed.Response.UserHandle
	if (len(handle) > 0 && string(handle) != rec.userID) || (cer.UserID != "" && cer.UserID != rec.userID) {
		return Assertion{}, rec, errNoKey
	}
	u, _, err := s.loadUser(ctx, rec.userID)
	if err != nil {
		return Assertion{}, rec, errNoKey
	}
	var cred *webauthn.Credential
	if cer.Kind == kindLogin {
		if len(handle) == 0 {
			return Assertion{}, rec, apperr.Invalid("the passkey answer has no user handle")
		}
		_, cred, err = s.rp.ValidatePasskeyLogin(func(_, _ []byte) (webauthn.User, error) { return u, nil }, cer.Session, parsed)
	} else {
		cred, err = s.rp.ValidateLogin(u, cer.Session, parsed)
	}
	if err != nil {
		return Assertion{}, rec, apperr.Unauthorizedf("the passkey could not be verified: %s", details(err))
	}
	if cred.Authenticator.CloneWarning {
		// §6.1.1: a counter that did not advance means two copies of the
		// private key may be in use. The sign-in is refused; the stored
		// counter stays, so the genuine authenticator still works.
		return Assertion{}, rec, errClone
	}
	if err := s.used(ctx, rec, cred); err != nil {
		return Assertion{}, rec, err
	}
	uv := parsed.Response.AuthenticatorData.Flags.HasUserVerified()
	rec.BackupState = cred.Flags.BackupState
	return Assertion{UserID: rec.userID, Passkey: rec.Passkey, UserVerified: uv, AMR: AMR(rec.BackupEligible, uv)}, rec, nil
}

// errClone refuses an assertion whose signature counter went backwards.
var errClone = apperr.Unauthorizedf("this passkey's signature counter went backwards, so it may have been copied; the sign-in is refused")

// used stores the assertion's counter, backup state and time. The UPDATE
// is conditional on the counter read before, so of two assertions racing
// with the same counter (a clone used at the same moment) only one wins.
func (s *Service) used(ctx context.Context, rec record, cred *webauthn.Credential) error {
	now := s.now()
	res, err := s.DB.ExecContext(ctx, `UPDATE passkeys SET sign_count = $1, backup_state = $2, last_used_at = $3
		WHERE id = $4 AND sign_count = $5`,
		int64(cred.Authenticator.SignCount), cred.Flags.BackupState, db.TS(now), rec.ID, int64(rec.signCount))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errClone
	}
	return nil
}

// refuse audits a refused assertion as a failed passkey_login (on the
// passkey's user when it is known) and returns answer.
func (s *Service) refuse(ctx context.Context, rec record, c Client, answer error) error {
	meta := map[string]any{}
	if rec.ID != "" {
		meta["passkey_id"] = rec.ID
	}
	reason := answer.Error()
	if errors.Is(answer, errClone) {
		meta["clone_suspected"] = true
	}
	_, err := s.Audit.Record(ctx, s.DB, audit.Event{
		UserID: rec.userID, EventType: EventLogin, ResourceType: "passkey", ResourceID: rec.ID,
		IPAddress: c.IPAddress, UserAgent: c.UserAgent, SourceService: c.source(),
		Description: "Passkey sign-in refused", Failed: true, ErrorMessage: reason, Metadata: meta,
	})
	if err != nil {
		return err
	}
	return answer
}

// details is the library's reason for a refusal, for the message.
func details(err error) string {
	var e *protocol.Error
	if errors.As(err, &e) && e.Details != "" {
		return e.Details
	}
	return "verification failed"
}

// countsAsSecondFactor reports whether the passkeys of a user make up a
// second factor under p: any passkey, or with RefuseSynced for a user of
// whom it is required only a device-bound one.
func countsAsSecondFactor(all, synced int, refuseSynced bool) bool {
	if refuseSynced {
		return all-synced > 0
	}
	return all > 0
}
