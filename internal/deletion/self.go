package deletion

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/twofactor"
)

// Self-requested deletion is an extension: spec 2 (Account deletion) leaves
// "the endpoint for a user to request their own deletion" open. The user
// confirms with their password, or, for an account without one, with a
// second factor; the purge is scheduled GracePeriod later. Unlike an
// administrator's soft deletion the account stays usable until then
// (deleted_at stays NULL, sessions and API keys stay valid), so the user
// can sign in and cancel; the purge job removes it when the time is up.

// OperationSelfDeletion names the confirmation of a self-requested deletion
// in the audit log (the operation of the 2fa_verified event).
const OperationSelfDeletion = "account_deletion"

// PasswordChecker checks the password of a signed-in user (auth.Service).
type PasswordChecker interface {
	// HasPassword reports whether the user has a password.
	HasPassword(ctx context.Context, userID string) (bool, error)
	// ConfirmPassword reports whether the user has a password and, when
	// they have, whether pw is it (a validation error when it is missing or
	// wrong); attempts are throttled per account and per ip.
	ConfirmPassword(ctx context.Context, userID, pw, ip string) (has bool, err error)
}

// CodeChecker checks a second factor of a user (twofactor.Service).
type CodeChecker interface {
	Enabled(ctx context.Context, userID string) (bool, error)
	ConfirmCode(ctx context.Context, userID, code, operation string, c twofactor.Client) error
}

// Confirmation is what a user sends to confirm the deletion of their own
// account: the password, or a TOTP or backup code when they have no password.
type Confirmation struct {
	Password string `json:"password"`
	Code     string `json:"code"`
}

// What a user confirms the deletion of their own account with (ConfirmWith).
const (
	ConfirmPassword  = "password"
	ConfirmTwoFactor = "two_factor"
)

// ConfirmWith tells what the user must confirm the deletion of their own
// account with: ConfirmPassword, ConfirmTwoFactor (no password), or "" when
// they have neither and cannot request it yet.
func (s *Service) ConfirmWith(ctx context.Context, userID string) (string, error) {
	if s.Passwords != nil {
		if has, err := s.Passwords.HasPassword(ctx, userID); err != nil {
			return "", err
		} else if has {
			return ConfirmPassword, nil
		}
	}
	if s.SecondFactor != nil {
		if on, err := s.SecondFactor.Enabled(ctx, userID); err != nil {
			return "", err
		} else if on {
			return ConfirmTwoFactor, nil
		}
	}
	return "", nil
}

// Request schedules the deletion of the user's own account GracePeriod from
// now, after the confirmation, and returns when the account will be
// purged. ev carries the request data for the audit events. Errors: 400 a
// missing or wrong password or code, 403 an account with neither a password
// nor two-factor authentication to confirm with, 409 already scheduled, 429
// too many wrong attempts.
func (s *Service) Request(ctx context.Context, ev audit.Event, userID string, c Confirmation) (time.Time, error) {
	st, err := s.GetStatus(ctx, s.DB, userID)
	if err != nil {
		return time.Time{}, err
	}
	if st.IsDeleted {
		return time.Time{}, apperr.NotFoundf("user not found")
	}
	if st.IsScheduledForDeletion {
		return time.Time{}, apperr.Conflictf("the account is already scheduled for deletion on %s", st.ScheduledDeletionAt.UTC().Format(time.RFC3339))
	}
	if err := s.confirm(ctx, ev, userID, c); err != nil {
		return time.Time{}, err
	}
	now := s.Clock.Now()
	at := now.Add(GracePeriod)
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET scheduled_deletion_at = $1, updated_at = $2
			WHERE id = $3 AND deleted_at IS NULL AND scheduled_deletion_at IS NULL`, db.TS(at), db.TS(now), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// A parallel request scheduled it first.
			return apperr.Conflictf("the account is already scheduled for deletion")
		}
		return s.recordSchedule(ctx, tx, userID, "Account deletion requested by the user; permanent deletion scheduled", "deletion_requested", at, ev)
	})
	if err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// confirm checks c for the user: the password when they have one, else a
// second factor. A refused confirmation is audited as a failed request.
func (s *Service) confirm(ctx context.Context, ev audit.Event, userID string, c Confirmation) error {
	has, method := false, ConfirmPassword
	var err error
	if s.Passwords != nil {
		has, err = s.Passwords.ConfirmPassword(ctx, userID, c.Password, ev.IPAddress)
	}
	if !has && err == nil {
		method = ConfirmTwoFactor
		err = s.confirmCode(ctx, ev, userID, c.Code)
	}
	if k := apperr.KindOf(err); k == apperr.Validation || k == apperr.TooManyRequests {
		fail := ev
		fail.UserID, fail.EventType, fail.ResourceType, fail.ResourceID = userID, audit.UserUpdated, "user", userID
		fail.Description, fail.Failed = "Account deletion request refused", true
		var e *apperr.Error
		if errors.As(err, &e) {
			fail.ErrorMessage = e.Message
		}
		fail.Metadata = map[string]any{"action": "deletion_requested", "method": method}
		if _, aerr := s.Audit.Record(ctx, s.DB, fail); aerr != nil {
			return aerr
		}
	}
	return err
}

// confirmCode checks the second factor of a user without a password.
func (s *Service) confirmCode(ctx context.Context, ev audit.Event, userID, code string) error {
	on := false
	if s.SecondFactor != nil {
		var err error
		if on, err = s.SecondFactor.Enabled(ctx, userID); err != nil {
			return err
		}
	}
	if !on {
		return apperr.Forbiddenf("this account has no password and no two-factor authentication to confirm the deletion with; turn on two-factor authentication first")
	}
	if strings.TrimSpace(code) == "" {
		return apperr.Invalid("code is required: a code from your authenticator app or a backup code")
	}
	return s.SecondFactor.ConfirmCode(ctx, userID, code, OperationSelfDeletion,
		twofactor.Client{IPAddress: ev.IPAddress, UserAgent: ev.UserAgent, SourceService: ev.SourceService})
}

// ownResult is the answer of POST /v1/users/me/deletion.
type ownResult struct {
	Success             bool      `json:"success"`
	Message             string    `json:"message"`
	ScheduledDeletionAt time.Time `json:"scheduled_deletion_at"`
}

// MyStatus serves GET /v1/users/me/deletion: the caller's deletion state.
func (h *Handler) MyStatus(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	st, err := h.S.GetStatus(r.Context(), h.S.DB, p.UserID)
	httpx.RespondJSON(w, r, http.StatusOK, st, err)
}

// RequestMine serves POST /v1/users/me/deletion with {password} or, for an
// account without a password, {code}: the caller's account is purged
// GracePeriod later unless they cancel.
func (h *Handler) RequestMine(w http.ResponseWriter, r *http.Request) {
	var c Confirmation
	if !httpx.Bind(w, r, &c) {
		return
	}
	p := authn.From(r.Context())
	at, err := h.S.Request(r.Context(), audit.FromRequest(r, audit.Event{}), p.UserID, c)
	httpx.RespondJSON(w, r, http.StatusOK, ownResult{Success: true, ScheduledDeletionAt: at,
		Message: "Your account will be deleted permanently at the scheduled time; until then you can cancel"}, err)
}

// CancelMine serves DELETE /v1/users/me/deletion: the caller's scheduled
// deletion is cancelled (400 when none is scheduled).
func (h *Handler) CancelMine(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	err := h.S.Cancel(r.Context(), audit.FromRequest(r, audit.Event{}), p.UserID)
	httpx.RespondJSON(w, r, http.StatusOK, resultBody{Success: true, Message: "Scheduled deletion cancelled; your account stays"}, err)
}
