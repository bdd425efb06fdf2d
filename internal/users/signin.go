package users

import (
	"context"
	"database/sql"
	"errors"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
)

// Claim is an identity presented by a way in: a provider sign-in on the
// pages, or the front end's POST /v1/users/oauth. It names a platform
// account and what the provider says about its address.
type Claim struct {
	Platform       string // platform slug (discord, google, a generic provider's slug, …)
	PlatformUserID string // the provider's stable subject
	Name           string // the provider's user name: the wanted username and display name
	Email          string // lower-cased; "" when the provider gave none
	// EmailVerified is the provider's word that Email belongs to this
	// account. Only a verified address links or takes an address.
	EmailVerified bool
	AvatarURL     string
}

// Outcome is what SignIn or Connect decided.
type Outcome struct {
	UserID    string
	AccountID string // the platform account of the claim
	Created   bool   // a new user was created
	Linked    bool   // a new platform account was added to an existing user
	// Released are the other users whose unverified claim on the address the
	// sign-in verified was released (rule 3 of SignIn). The caller mails
	// them with NotifyReleased once its transaction has committed.
	Released []Released
}

// Released is a user whose unverified claim on an address another user
// just proved was released: their contact address was cleared, and their
// email login, if any, keeps working.
type Released struct {
	UserID   string
	Username string
	Locale   string
	Email    string // the address, where the mail goes
	Provider string // display name of the platform that verified it
}

// SignIn applies hmid's one linking rule to a sign-in, inside tx
// (docs/decisions.md, "One linking rule"):
//
//  1. The platform account exists: it is that user's (refreshed; a
//     soft-deleted user is refused with 403).
//  2. Else the address is verified by the provider and a user owns it (it is
//     verified on one of their platform accounts): the account is linked to
//     that user (spec 2, "linked to that user"). A soft-deleted owner keeps
//     the address through the grace period: 403.
//  3. Else a new user is created, when the platform allows registration
//     (403 otherwise). A verified address becomes theirs, and an unverified
//     claim on it by another user is released (see releaseAddress) without
//     taking away any way in: their email login keeps working. An
//     unverified address is kept only on the platform account when another
//     user holds it.
//
// An unverified address therefore never links and never takes an address
// someone else holds: this is the defence against account pre-hijacking,
// where an attacker registers a victim's address first and waits for the
// victim's provider sign-in to be merged into the attacker's account.
//
// A disabled platform refuses every sign-in (403). ev carries the request's
// address, user agent and source_service for the audit events
// (user_created, account_linked, account_unlinked); the caller records the
// login itself. Avatars are stored only while the user's avatars_enabled is on.
func (s *Service) SignIn(ctx context.Context, tx *db.Tx, c Claim, ev audit.Event) (Outcome, error) {
	pl, err := platformForLogin(ctx, tx, c.Platform)
	if err != nil {
		return Outcome{}, err
	}
	ts := db.TS(s.Clock.Now())
	var out Outcome
	err = tx.QueryRowContext(ctx, `SELECT id, user_id FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2`,
		pl.id, c.PlatformUserID).Scan(&out.AccountID, &out.UserID)
	switch {
	case err == nil:
		return out, s.refreshAccount(ctx, tx, c, out.UserID, out.AccountID, ts)
	case !errors.Is(err, sql.ErrNoRows):
		return out, err
	}
	if c.Email != "" && c.EmailVerified {
		if err := LockAddress(ctx, tx, c.Email); err != nil {
			return out, err
		}
		owner, deleted, err := EmailOwner(ctx, tx, c.Email)
		if err != nil {
			return out, err
		}
		if owner != "" {
			if deleted {
				return out, apperr.Forbiddenf("the account with this email address is scheduled for deletion")
			}
			out.UserID, out.Linked = owner, true
			out.AccountID, err = s.addAccount(ctx, tx, owner, c, pl, true, ts, ev, pl.name+" account linked by its verified email address")
			return out, err
		}
	}
	if !pl.registration {
		return out, apperr.Forbiddenf("registration with %s is closed", pl.name)
	}
	return s.create(ctx, tx, c, pl, ts, ev)
}

// create makes a new user from the claim (rule 3 of SignIn).
func (s *Service) create(ctx context.Context, tx *db.Tx, c Claim, pl loginPlatform, ts int64, ev audit.Event) (Outcome, error) {
	out := Outcome{Created: true}
	userEmail := c.Email
	if c.Email != "" && !c.EmailVerified {
		held, err := emailHeld(ctx, tx, c.Email)
		if err != nil {
			return out, err
		}
		if held {
			userEmail = ""
		}
	}
	var err error
	out.UserID, out.AccountID, err = Create(ctx, tx, ts, NewAccount{
		PlatformSlug: c.Platform, PlatformUserID: c.PlatformUserID, Username: c.Name, Name: c.Name,
		Email: userEmail, AccountEmail: c.Email, AvatarURL: c.AvatarURL, EmailVerified: c.EmailVerified && c.Email != "",
	})
	if err != nil {
		return out, err
	}
	e := ev
	e.UserID, e.EventType, e.ResourceType, e.ResourceID = out.UserID, audit.UserCreated, "user", out.UserID
	e.Description, e.Metadata = "user created by "+pl.name+" sign-in", map[string]any{"provider": c.Platform}
	if _, err = s.Audit.Record(ctx, tx, e); err != nil {
		return out, err
	}
	if c.Email != "" && c.EmailVerified {
		out.Released, err = s.releaseAddress(ctx, tx, c, pl, out.UserID, ev, ts)
	}
	return out, err
}

// Connect adds the claim's platform account to userID, who is signed in and
// asked to connect another provider. The same account already on userID is
// no change; on another user it is a 409 (an account signs in to one user
// only), and so is a second account of a platform the user already has one
// of. The address is recorded verified only when no other user owns it,
// so connecting never makes an address belong to two users. A disabled
// platform refuses (403).
func (s *Service) Connect(ctx context.Context, tx *db.Tx, userID string, c Claim, ev audit.Event) (Outcome, error) {
	pl, err := platformForLogin(ctx, tx, c.Platform)
	if err != nil {
		return Outcome{}, err
	}
	if _, err := s.active(ctx, tx, userID); err != nil {
		return Outcome{}, err
	}
	out := Outcome{UserID: userID}
	var holder string
	err = tx.QueryRowContext(ctx, `SELECT id, user_id FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2`,
		pl.id, c.PlatformUserID).Scan(&out.AccountID, &holder)
	switch {
	case err == nil && holder == userID:
		return out, nil
	case err == nil:
		return out, apperr.Conflictf("this %s account is already linked to another user", pl.name)
	case !errors.Is(err, sql.ErrNoRows):
		return out, err
	}
	// One account per platform and user, as Keycloak and Zitadel link one
	// identity per provider: which of two Discord accounts signs in would
	// otherwise be a guess for everything keyed by the platform.
	var has bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM platform_accounts WHERE user_id = $1 AND platform_id = $2)`,
		userID, pl.id).Scan(&has); err != nil {
		return out, err
	}
	if has {
		return out, apperr.Conflictf("another %s account is already connected to yours; unlink it first", pl.name)
	}
	verified := c.EmailVerified && c.Email != ""
	if verified {
		if err := LockAddress(ctx, tx, c.Email); err != nil {
			return out, err
		}
		owner, _, err := EmailOwner(ctx, tx, c.Email)
		if err != nil {
			return out, err
		}
		verified = owner == "" || owner == userID
	}
	out.Linked = true
	out.AccountID, err = s.addAccount(ctx, tx, userID, c, pl, verified, db.TS(s.Clock.Now()), ev, pl.name+" account connected")
	return out, err
}

// refreshAccount updates the known platform account accountID of userID
// with the sign-in's details; a soft-deleted user is refused (403). The
// user's avatar follows the image when this is the primary account.
func (s *Service) refreshAccount(ctx context.Context, tx *db.Tx, c Claim, userID, accountID string, ts int64) error {
	u, err := s.Get(ctx, tx, userID)
	if err != nil {
		return err
	}
	if u.DeletedAt != nil {
		return apperr.Forbiddenf("this account is scheduled for deletion")
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET username = $1, email = COALESCE($2, email), avatar_url = $3, updated_at = $4 WHERE id = $5`,
		c.Name, nullable(c.Email), nullable(avatarIf(u.AvatarsEnabled, c.AvatarURL)), ts, accountID); err != nil {
		return err
	}
	if u.PrimaryPlatformAccountID != nil && *u.PrimaryPlatformAccountID == accountID && u.AvatarsEnabled && c.AvatarURL != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE users SET avatar_url = $1 WHERE id = $2`, c.AvatarURL, userID); err != nil {
			return err
		}
	}
	return nil
}

// addAccount inserts the claim's platform account for userID and records
// account_linked with the provider.
func (s *Service) addAccount(ctx context.Context, tx *db.Tx, userID string, c Claim, pl loginPlatform, verified bool, ts int64, ev audit.Event, why string) (string, error) {
	u, err := s.Get(ctx, tx, userID)
	if err != nil {
		return "", err
	}
	accountID := uuid.NewString()
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, avatar_url, email_verified, is_primary, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, FALSE, $9, $9)`,
		accountID, userID, pl.id, c.PlatformUserID, c.Name, nullable(c.Email), nullable(avatarIf(u.AvatarsEnabled, c.AvatarURL)), verified, ts); err != nil {
		return "", err
	}
	e := ev
	e.UserID, e.EventType, e.ResourceType, e.ResourceID = userID, audit.AccountLinked, "platform_account", accountID
	e.Description, e.Metadata = why, map[string]any{"provider": c.Platform}
	_, err = s.Audit.Record(ctx, tx, e)
	return accountID, err
}

// LockAddress makes the transactions that may give addr an owner (a
// provider sign-in or connect, a followed verification link, a password
// reset) run one after the other until tx ends, so two of them cannot each
// see the address free and both verify it. No unique index can say "at most
// one user owns an address" (ownership is a verified platform account among
// several), so PostgreSQL takes an advisory transaction lock keyed by the
// address; SQLite has a single writer, which already serializes them.
func LockAddress(ctx context.Context, tx *db.Tx, addr string) error {
	if tx.Flavor() != db.Postgres || addr == "" {
		return nil
	}
	var one int
	return tx.QueryRowContext(ctx, `SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtext('hmid.email:' || $1))) AS locked`, addr).Scan(&one)
}

// EmailOwner returns the oldest user (soft-deleted ones included: they keep
// their address through the grace period) who owns addr: it is verified on
// one of their platform accounts. "" when nobody does. Inside a transaction
// that may give addr an owner, call LockAddress first.
func EmailOwner(ctx context.Context, q db.Querier, addr string) (id string, deleted bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT u.id, u.deleted_at IS NOT NULL FROM users u
		WHERE EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND LOWER(pa.email) = $1 AND pa.email_verified)
		ORDER BY u.created_at, u.id LIMIT 1`, addr).Scan(&id, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, deleted, err
}

// emailHeld reports whether any user has addr as their address or their
// email login, verified or not.
func emailHeld(ctx context.Context, q db.Querier, addr string) (bool, error) {
	var held bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE LOWER(email) = $1)
		OR EXISTS (SELECT 1 FROM platform_accounts WHERE platform_id = $2 AND platform_user_id = $1)`,
		addr, PlatformID("email")).Scan(&held)
	return held, err
}

// releaseAddress ends every unverified claim of other users on the
// claim's address, now that owner has proven it, without taking away a way
// in: a user's contact address (users.email) is cleared, so lookups by
// address and mails find the owner, but an email login for the address that
// was never verified stays, with its password, primary status and sessions
// (a user must never be left without a platform account: spec 2). Such a
// login can no longer become verified (verify.go refuses an address owned
// elsewhere) nor be taken over by a password reset mailed to the address
// (reset.go), so whoever registered it first keeps only what they had, and
// the owner of the address is never led into it. Each released user gets a
// user_updated event, the owner one saying an unverified registration was
// not linked, and the returned users are mailed after commit
// (NotifyReleased).
func (s *Service) releaseAddress(ctx context.Context, tx *db.Tx, c Claim, pl loginPlatform, owner string, ev audit.Event, ts int64) ([]Released, error) {
	addr := c.Email
	held, err := db.All(ctx, tx, func(row db.Scanner) (Released, error) {
		r := Released{Email: addr, Provider: pl.name}
		err := row.Scan(&r.UserID, &r.Username, &r.Locale)
		return r, err
	}, `SELECT u.id, u.username, COALESCE(u.preferred_locale, '') FROM users u
		WHERE u.id <> $3 AND (LOWER(u.email) = $2 OR EXISTS (SELECT 1 FROM platform_accounts pa
			WHERE pa.user_id = u.id AND pa.platform_id = $1 AND pa.platform_user_id = $2 AND NOT pa.email_verified))
		ORDER BY u.created_at, u.id`, PlatformID("email"), addr, owner)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET email = NULL, updated_at = $1 WHERE LOWER(email) = $2 AND id <> $3`, ts, addr, owner); err != nil {
		return nil, err
	}
	for _, r := range held {
		e := ev
		e.UserID, e.EventType, e.ResourceType, e.ResourceID = r.UserID, audit.UserUpdated, "user", r.UserID
		e.Description = ReleasedDescription
		e.Metadata = map[string]any{"change": "email_released", "provider": c.Platform, "reason": "address_verified_elsewhere"}
		if _, err := s.Audit.Record(ctx, tx, e); err != nil {
			return nil, err
		}
	}
	e := ev
	e.UserID, e.EventType, e.ResourceType, e.ResourceID = owner, audit.UserUpdated, "user", owner
	e.Description = NotLinkedDescription
	e.Metadata = map[string]any{"change": "unverified_registration_not_linked", "provider": c.Platform, "count": len(held)}
	if _, err := s.Audit.Record(ctx, tx, e); err != nil {
		return nil, err
	}
	return held, nil
}

// The audit descriptions of a released address (releaseAddress), fixed so
// the pages can show them translated.
const (
	ReleasedDescription  = "email address released: another account verified it at a provider sign-in; the email login keeps working"
	NotLinkedDescription = "an earlier registration with this email address was not linked: the address was never verified on it"
)
