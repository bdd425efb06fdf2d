// Package deletion implements account deletion (spec 2, Account deletion):
// the deletion status of a user, cancelling a scheduled deletion within the
// 7-day grace period, forcing the deletion at once, the background job that
// purges accounts whose grace period has ended, and a user's request for the
// deletion of their own account (self.go).
//
// Soft deletion itself (DELETE /v1/users/{id}) belongs to the users area; it
// sets deleted_at and scheduled_deletion_at. A self-requested deletion sets
// only scheduled_deletion_at: the account stays usable until the purge.
// Purging removes every row of the user: the users row (its ON DELETE
// CASCADE covers sessions, platform accounts, roles, API keys, bans and
// pending email requests), rows of other tables that refer to the user
// without a cascade, directly or through rows removed with the user (found
// in the database catalogue, so tables added by other areas do not make a
// purge fail), and the personal data of audit events, which stay as
// anonymous records of what happened and when.
package deletion

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
)

// MaxReason is the longest force-delete reason accepted, in bytes.
const MaxReason = 1000

// GracePeriod is the time between soft deletion and purge (spec 2, Limits).
const GracePeriod = 7 * 24 * time.Hour

// LockName is the TryLock name that keeps the purge job on one instance.
const LockName = "hmid.deletion.purge"

// ErrBusy is returned by Purge when another instance holds the purge lock.
var ErrBusy = errors.New("deletion: another purge is running")

// Service holds the dependencies of the deletion area.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	Epoch authn.Epoch
	Log   *slog.Logger
	// Passwords and SecondFactor confirm a self-requested deletion; nil
	// means the user has no password, or no second factor, to confirm with.
	Passwords    PasswordChecker
	SecondFactor CodeChecker
}

// Status is the deletion state of a user.
type Status struct {
	IsScheduledForDeletion bool       `json:"is_scheduled_for_deletion"`
	ScheduledDeletionAt    *time.Time `json:"scheduled_deletion_at"`
	IsDeleted              bool       `json:"is_deleted"`
	DeletedAt              *time.Time `json:"deleted_at"`
}

// GetStatus returns the deletion state of a user, or NotFound.
func (s *Service) GetStatus(ctx context.Context, q db.Querier, userID string) (Status, error) {
	var del, sched db.NullTime
	err := q.QueryRowContext(ctx, `SELECT deleted_at, scheduled_deletion_at FROM users WHERE id = $1`, userID).Scan(&del, &sched)
	if errors.Is(err, sql.ErrNoRows) {
		return Status{}, apperr.NotFoundf("user not found")
	}
	if err != nil {
		return Status{}, err
	}
	return Status{
		IsScheduledForDeletion: sched.Valid, ScheduledDeletionAt: sched.Ptr(),
		IsDeleted: del.Valid, DeletedAt: del.Ptr(),
	}, nil
}

// Cancel restores a user scheduled for deletion (deleted_at and
// scheduled_deletion_at become NULL). Sessions and API keys revoked by the
// soft deletion stay revoked. It returns NotFound for an unknown user and
// Invalid when the user is not scheduled for deletion.
func (s *Service) Cancel(ctx context.Context, ev audit.Event, userID string) error {
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		st, err := s.GetStatus(ctx, tx, userID)
		if err != nil {
			return err
		}
		if !st.IsScheduledForDeletion && !st.IsDeleted {
			return apperr.Invalid("user is not scheduled for deletion")
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET deleted_at = NULL, scheduled_deletion_at = NULL, updated_at = $2
			WHERE id = $1 AND (deleted_at IS NOT NULL OR scheduled_deletion_at IS NOT NULL)`, userID, db.TS(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.Invalid("user is not scheduled for deletion")
		}
		return s.recordSchedule(ctx, tx, userID, "Scheduled account deletion cancelled", "deletion_cancelled", st.ScheduledDeletionAt, ev)
	})
}

// recordSchedule writes the user_updated event of a change to userID's
// scheduled deletion: action names it, at is the deletion time concerned.
func (s *Service) recordSchedule(ctx context.Context, tx *db.Tx, userID, description, action string, at any, ev audit.Event) error {
	ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, audit.UserUpdated, "user", userID
	ev.Description = description
	ev.Metadata = map[string]any{"action": action, "scheduled_deletion_at": at}
	_, err := s.Audit.Record(ctx, tx, ev)
	return err
}

// ForceDelete purges userID at once on behalf of p, skipping the grace
// period: irreversible. Nobody force-deletes themselves, and only a super
// admin (or system key) deletes a super admin. reason (trimmed, at most
// MaxReason bytes) is kept in the user_deleted event, which is recorded
// without the user's id (it no longer names anyone); ev carries the actor's
// address, user agent and source. Errors: Validation, NotFound, Forbidden.
func (s *Service) ForceDelete(ctx context.Context, p *authn.Principal, ev audit.Event, userID, reason string) error {
	reason = strings.TrimSpace(reason)
	if len(reason) > MaxReason {
		return apperr.OnField("reason", apperr.Invalid("reason must be at most %d bytes", MaxReason))
	}
	if p.IsSelf(userID) {
		return apperr.Invalid("you cannot force-delete your own account")
	}
	var super bool
	err := s.DB.QueryRowContext(ctx, `SELECT is_super_admin FROM users WHERE id = $1`, userID).Scan(&super)
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.NotFoundf("user not found")
	}
	if err != nil {
		return err
	}
	if super && !p.IsAdmin() {
		return apperr.Forbiddenf("only a super admin can delete a super admin")
	}
	if _, err := s.GetStatus(ctx, s.DB, userID); err != nil {
		return err
	}
	ev.ActorID = p.UserID
	ev.Metadata = map[string]any{"mode": "forced", "reason": reason}
	if err := s.purgeOne(ctx, userID, ev); err != nil {
		return err
	}
	return s.Epoch.Bump(ctx)
}

// Purge removes every user whose scheduled_deletion_at has passed. Only one
// instance purges at a time (DB.TryLock); when another holds the lock it
// returns ErrBusy. A user whose purge fails is logged and retried on the next
// run; the others are still purged. It returns how many users were purged.
func (s *Service) Purge(ctx context.Context) (int, error) {
	release, ok, err := s.DB.TryLock(ctx, LockName)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrBusy
	}
	defer release()
	now := s.Clock.Now()
	// Soft-deleted accounts and self-requested deletions (deleted_at still
	// NULL) alike: scheduled_deletion_at is set only by the two.
	ids, err := db.All(ctx, s.DB, db.ScanString, `SELECT id FROM users WHERE scheduled_deletion_at IS NOT NULL AND scheduled_deletion_at <= $1 ORDER BY scheduled_deletion_at, id`, db.TS(now))
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range ids {
		ev := audit.Event{SourceService: "api", Metadata: map[string]any{"mode": "scheduled"}}
		if err := s.purgeOne(ctx, id, ev); err != nil {
			errs = append(errs, fmt.Errorf("purge user %s: %w", id, err))
			continue
		}
		n++
	}
	if n > 0 {
		if err := s.Epoch.Bump(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// purgeOne removes one user and everything that names them, in one
// transaction, and records ev as a user_deleted event without the user's id.
func (s *Service) purgeOne(ctx context.Context, userID string, ev audit.Event) error {
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		// Rows of other tables that hang off the user (directly or through
		// rows deleted with the user) and would block the delete.
		if err := s.clearReferences(ctx, tx, userID); err != nil {
			return err
		}
		// Mails kept in the outbox for the user's addresses, pending ones included.
		if _, err := tx.ExecContext(ctx, `DELETE FROM mail_outbox WHERE LOWER(to_addr) IN (
				SELECT LOWER(email) FROM users WHERE id = $1 AND email IS NOT NULL
				UNION SELECT LOWER(email) FROM platform_accounts WHERE user_id = $1 AND email IS NOT NULL
				UNION SELECT new_email FROM email_change_requests WHERE user_id = $1
				UNION SELECT email FROM email_link_requests WHERE user_id = $1)`, userID); err != nil {
			return err
		}
		// Audit events stay as anonymous records: event type, status,
		// resource type, source and time are kept; everything that could
		// identify the person goes.
		if _, err := tx.ExecContext(ctx, `UPDATE audit_events SET user_id = NULL, ip_address = NULL, user_agent = NULL,
				country_code = NULL, country_name = NULL, city = NULL, region = NULL, description = NULL, metadata = '{}', error_message = NULL,
				resource_id = CASE WHEN resource_id = $1 THEN NULL ELSE resource_id END,
				actor_id = CASE WHEN actor_id = $1 THEN NULL ELSE actor_id END
			WHERE user_id = $1`, userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE audit_events SET actor_id = NULL, ip_address = NULL, user_agent = NULL,
				country_code = NULL, country_name = NULL, city = NULL, region = NULL WHERE actor_id = $1`, userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE audit_events SET resource_id = NULL WHERE resource_id = $1`, userID); err != nil {
			return err
		}
		// Bans the user imposed on or lifted for others keep their dates.
		if _, err := tx.ExecContext(ctx, `UPDATE bans SET banned_by = NULL WHERE banned_by = $1`, userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE bans SET unbanned_by = NULL WHERE unbanned_by = $1`, userID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("user not found")
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = "", audit.UserDeleted, "user", ""
		ev.Description = "Account permanently deleted"
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
	return err
}

// Job runs Purge now and then every interval until stopped.
type Job struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start runs the purge job in a goroutine: once at start, then every
// interval. Stop ends it and waits for a running purge to finish.
func (s *Service) Start(interval time.Duration) *Job {
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.runLogged(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return j
}

func (s *Service) runLogged(ctx context.Context) {
	n, err := s.Purge(ctx)
	switch {
	case errors.Is(err, ErrBusy), ctx.Err() != nil:
	case err != nil:
		s.Log.ErrorContext(ctx, "account purge", slog.String("error", err.Error()), slog.Int("purged", n))
	case n > 0:
		s.Log.InfoContext(ctx, "account purge", slog.Int("purged", n))
	}
}

// Stop ends the job and waits for it; it is safe to call more than once.
func (j *Job) Stop() error {
	j.once.Do(func() {
		j.cancel()
		<-j.done
	})
	return nil
}
