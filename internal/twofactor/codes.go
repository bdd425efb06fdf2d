package twofactor

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/password"
)

// TOTP parameters (RFC 6238 §4: time step X = 30 s, T0 = 0; RFC 4226 §5.3
// 6-digit truncation; HMAC-SHA1, the algorithm every authenticator app supports).
const (
	period = 30 * time.Second
	digits = otp.DigitsSix
)

var totpOpts = totp.ValidateOpts{Period: uint(period / time.Second), Skew: 0, Digits: digits, Algorithm: otp.AlgorithmSHA1}

// step returns the RFC 6238 §4.2 time counter T of t.
func step(t time.Time) int64 { return t.Unix() / int64(period/time.Second) }

// matchTOTP reports whether code is the TOTP of secret at now or one step
// either side (RFC 6238 §5.2 recommends at most one step of network delay),
// and for which time step. Each step is checked on its own (Skew 0) so the
// matching step is known and can be recorded against replay.
func matchTOTP(code, secret string, now time.Time) (int64, bool) {
	for _, off := range []int{0, -1, 1} {
		t := now.Add(time.Duration(off) * period)
		ok, err := totp.ValidateCustom(code, secret, t, totpOpts)
		if err == nil && ok {
			return step(t), true
		}
	}
	return 0, false
}

// isTOTP reports whether code has the shape of a TOTP code: 6 ASCII digits.
func isTOTP(code string) bool {
	if len(code) != digits.Length() {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// Backup codes (DECISIONS.md, Accounts): three hyphen-separated groups of four
// lowercase base32 characters (RFC 4648 §6 alphabet), 60 random bits each.
const (
	backupAlphabet = "abcdefghijklmnopqrstuvwxyz234567"
	backupLen      = 12
	backupGroup    = 4
)

// backupParams are the Argon2id parameters of backup-code hashes: 4 MiB, one
// pass, a few milliseconds per hash. The spec asks for Argon2; the password
// parameters (19 MiB, two passes) are tuned for secrets people choose. A
// backup code is 60 random bits, so even an attacker holding the table and
// the server key (see lookupTag) faces about 2^44 Argon2id computations per
// code, while every enable and regenerate hashes ten codes.
var backupParams = password.Params{Memory: 4 * 1024, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// newBackupCode returns a fresh code in its display form, xxxx-xxxx-xxxx.
func newBackupCode() string {
	var b [backupLen]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	var sb strings.Builder
	for i, c := range b {
		if i > 0 && i%backupGroup == 0 {
			sb.WriteByte('-')
		}
		// 256 is a multiple of 32, so the low five bits are uniform.
		sb.WriteByte(backupAlphabet[c&31])
	}
	return sb.String()
}

// normalizeBackup returns the canonical form of a typed backup code (lower
// case, without hyphens or spaces), and false when it cannot be one.
func normalizeBackup(code string) (string, bool) {
	code = strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
	if len(code) != backupLen {
		return "", false
	}
	for i := 0; i < len(code); i++ {
		if strings.IndexByte(backupAlphabet, code[i]) < 0 {
			return "", false
		}
	}
	return code, true
}

// lookupTag returns 16 bits (4 hex digits) of a MAC, under the server key, of
// a backup code in canonical form bound to its user. It lets a check pick the
// matching row and run Argon2id once instead of against every code, and makes
// most wrong guesses cost no Argon2id at all. Sixteen bits is on purpose: even
// with the server key and the table, the tag only rules out all but 1 in 65536
// guesses, leaving about 2^44 candidates per code that each need Argon2id.
func (s *Service) lookupTag(userID, canon string) string {
	return hex.EncodeToString(s.Box.MAC([]byte("2fa backup code"), []byte(userID), []byte(canon))[:2])
}

// backupRow is a backup code as stored.
type backupRow struct{ hash, tag string }

// newBackupCodes returns BackupCodeCount codes in display form and their
// rows: the Argon2id hash and lookup tag of each canonical form.
func (s *Service) newBackupCodes(userID string) (codes []string, rows []backupRow, err error) {
	for range BackupCodeCount {
		c := newBackupCode()
		canon, _ := normalizeBackup(c)
		h, err := password.HashWith(backupParams, canon)
		if err != nil {
			return nil, nil, err
		}
		codes = append(codes, c)
		rows = append(rows, backupRow{hash: h, tag: s.lookupTag(userID, canon)})
	}
	return codes, rows, nil
}

// replaceBackupCodes deletes every backup code of the user and stores rows
// instead, inside tx.
func replaceBackupCodes(ctx context.Context, tx *db.Tx, userID string, rows []backupRow, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM two_factor_backup_codes WHERE user_id = $1`, userID); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO two_factor_backup_codes (id, user_id, code_hash, lookup_tag, created_at) VALUES ($1, $2, $3, $4, $5)`,
			uuid.NewString(), userID, r.hash, r.tag, db.TS(now)); err != nil {
			return err
		}
	}
	return nil
}

// Methods of a second factor, as recorded in audit metadata.
const (
	methodTOTP   = "totp"
	methodBackup = "backup_code"
)

// proof is a code that checked out, not yet spent: the TOTP time step or the
// backup code row. spend makes it used.
type proof struct {
	method   string
	step     int64
	backupID string
}

// errReplay is returned by spend when the code was spent already, by an
// earlier request or a parallel one that won the conditional UPDATE.
var errReplay = errors.New("twofactor: code already used")

// spend marks the proof used inside tx with a conditional UPDATE, so two
// requests with the same code cannot both succeed: a TOTP step must be later
// than the last accepted one, a backup code must be unused.
func spend(ctx context.Context, tx *db.Tx, userID string, pr proof, now time.Time) error {
	var res sql.Result
	var err error
	if pr.method == methodTOTP {
		res, err = tx.ExecContext(ctx, `UPDATE two_factor SET last_totp_step = $1, updated_at = $2
			WHERE user_id = $3 AND status = $4 AND (last_totp_step IS NULL OR last_totp_step < $1)`,
			pr.step, db.TS(now), userID, stateEnabled)
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE two_factor_backup_codes SET used_at = $1 WHERE id = $2 AND user_id = $3 AND used_at IS NULL`,
			db.TS(now), pr.backupID, userID)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errReplay
	}
	return nil
}

// attempt describes a code check for throttling and the audit log.
type attempt struct {
	userID      string
	actorID     string // who acted, when not the user
	client      Client
	operation   string // verify, disable, regenerate, login
	allowBackup bool

	rsv *cache.Reservation // the attempt taken from the user's allowance (see reserve)
}

// attemptLimit is the user's allowance of code checks: a GCRA limit of
// MaxFailures per FailureWindow (MaxFailures at once, then one more every
// FailureWindow/MaxFailures).
var attemptLimit = cache.PerPeriod(MaxFailures, FailureWindow)

// reserve takes one attempt from the user's allowance before the code is
// checked, in the shared limiter (the same reservation the password login
// uses, cache.Reserve), so however many requests arrive at once, no more
// codes are checked than the allowance holds: the others are answered 429
// with Retry-After and audited, without checking. A code that turns out
// right, or is not checked at all, gives its attempt back (refund), so only
// failures (and the checks in flight) stay counted. With N wrong codes sent
// in parallel, MaxFailures of them are answered 400 and the rest 429.
func (s *Service) reserve(ctx context.Context, at *attempt) error {
	rsv, d, err := cache.Reserve(ctx, s.Limiter, cache.Quota{Key: "2fa:attempts:" + at.userID, Limit: attemptLimit})
	if err != nil {
		return apperr.Unavailablef("rate-limit state is unavailable")
	}
	if rsv != nil {
		at.rsv = rsv
		return nil
	}
	msg := "too many failed two-factor attempts; try again later"
	if err := s.auditFailure(ctx, *at, "", msg, true); err != nil {
		return err
	}
	return apperr.RateLimited(d.RetryAfter, "%s", msg)
}

// refund gives back a reserved attempt whose code was right or not checked.
func (s *Service) refund(ctx context.Context, at *attempt) {
	if at.rsv == nil {
		return
	}
	if _, err := at.rsv.Release(ctx); err != nil {
		s.Log.WarnContext(ctx, "two-factor attempt not refunded", "user_id", at.userID, "error", err)
	}
	at.rsv = nil
}

// failed audits a rejected code, whose attempt stays counted, and returns 400.
func (s *Service) failed(ctx context.Context, at *attempt, method string) error {
	msg := "invalid two-factor code"
	if err := s.auditFailure(ctx, *at, method, msg, false); err != nil {
		return err
	}
	return apperr.Invalid("%s", msg)
}

// settle finishes an attempt after the operation's transaction: success and
// errors other than a lost race give the attempt back; a code spent meanwhile
// (errReplay) is a failed attempt.
func (s *Service) settle(ctx context.Context, at *attempt, method string, err error) error {
	if errors.Is(err, errReplay) {
		return s.failed(ctx, at, method)
	}
	s.refund(ctx, at)
	return err
}

// verifiedType is the event type of a checked code: 2fa_backup_code_used
// for a backup code, 2fa_verified for a TOTP code.
func verifiedType(method string) string {
	if method == methodBackup {
		return audit.TwoFABackupCodeUsed
	}
	return audit.TwoFAVerified
}

// methodWords names the kind of code for an event's description.
func methodWords(method string) string {
	if method == methodBackup {
		return "Backup code"
	}
	return "Two-factor code"
}

// auditFailure records a rejected or refused code: 2fa_verified (or
// 2fa_backup_code_used for a backup code) with status failure for the REST
// operations, login_failed at the login step.
func (s *Service) auditFailure(ctx context.Context, at attempt, method, msg string, throttled bool) error {
	ev := audit.Event{
		UserID: at.userID, ActorID: at.actorID, EventType: verifiedType(method), ResourceType: "two_factor", ResourceID: at.userID,
		IPAddress: at.client.IPAddress, UserAgent: at.client.UserAgent, SourceService: at.client.SourceService,
		Description: methodWords(method) + " rejected", Failed: true, ErrorMessage: msg,
		Metadata: map[string]any{"operation": at.operation, "method": method, "throttled": throttled},
	}
	if at.operation == opLogin {
		ev.EventType = audit.LoginFailed
		ev.ResourceType, ev.ResourceID = "user", at.userID
		ev.Description = "Login failed at the two-factor step"
	}
	_, err := s.Audit.Record(ctx, s.DB, ev)
	return err
}

// Operations, as recorded in audit metadata.
const (
	opVerify     = "verify"
	opDisable    = "disable"
	opRegenerate = "regenerate_backup_codes"
	opLogin      = "login"
)

// check verifies code for the state st: a TOTP code, or (when
// at.allowBackup) a backup code in any case, with or without hyphens. The
// attempt is reserved first (see reserve); a wrong code stays counted and is
// audited. The proof it returns still has to be spent inside the operation's
// transaction, and the attempt settled afterwards (see settle).
func (s *Service) check(ctx context.Context, st *state, code string, at *attempt) (proof, error) {
	code = strings.TrimSpace(code)
	if code == "" {
		return proof{}, apperr.Invalid("code is required")
	}
	if err := s.reserve(ctx, at); err != nil {
		return proof{}, err
	}
	now := s.Clock.Now()
	if compact := strings.ReplaceAll(code, " ", ""); isTOTP(compact) {
		secret, err := s.secret(st)
		if err != nil {
			s.refund(ctx, at)
			return proof{}, err
		}
		stp, ok := matchTOTP(compact, secret, now)
		if !ok || st.LastStep != nil && stp <= *st.LastStep {
			return proof{}, s.failed(ctx, at, methodTOTP)
		}
		return proof{method: methodTOTP, step: stp}, nil
	}
	canon, ok := normalizeBackup(code)
	if !ok {
		return proof{}, s.failed(ctx, at, "")
	}
	if !at.allowBackup {
		// Not an attempt at the TOTP: refused without checking, not counted.
		s.refund(ctx, at)
		return proof{}, apperr.Invalid("backup codes are not accepted here; enter the code from your authenticator app")
	}
	id, err := s.matchBackup(ctx, st.UserID, canon)
	if err != nil {
		s.refund(ctx, at)
		return proof{}, err
	}
	if id == "" {
		return proof{}, s.failed(ctx, at, methodBackup)
	}
	return proof{method: methodBackup, backupID: id}, nil
}

// matchBackup returns the id of the unused backup code of the user matching
// canon, or "". Only rows with canon's lookup tag (normally one, usually none
// for a wrong guess) are checked with Argon2id.
func (s *Service) matchBackup(ctx context.Context, userID, canon string) (string, error) {
	type row struct{ id, hash string }
	all, err := db.All(ctx, s.DB, func(sc db.Scanner) (row, error) {
		var r row
		err := sc.Scan(&r.id, &r.hash)
		return r, err
	}, `SELECT id, code_hash FROM two_factor_backup_codes WHERE user_id = $1 AND lookup_tag = $2 AND used_at IS NULL ORDER BY id`,
		userID, s.lookupTag(userID, canon))
	if err != nil {
		return "", err
	}
	for _, r := range all {
		ok, err := password.Verify(canon, r.hash)
		if err != nil {
			return "", err
		}
		if ok {
			return r.id, nil
		}
	}
	return "", nil
}
