// Package bans implements user bans (spec 2, Bans): banning a user
// permanently or for a duration, lifting a ban, and the ban history.
//
// A ban is active while it has not been lifted (unbanned_at is NULL) and, for
// a timed ban, while expires_at lies in the future. Expiry needs no job: the
// authentication resolver and this package compare expires_at with the
// clock, and the history reports such a ban with status "expired". Banning
// revokes the user's sessions and OAuth tokens and bumps the authentication
// epoch, so every instance drops the user's cached credentials at once.
package bans

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/sessions"
	"hmid/internal/users"
)

// TokenRevoker revokes every OAuth token of a user. The OAuth area implements
// it; bans calls it, when set, after a ban is stored.
type TokenRevoker interface {
	RevokeUserTokens(ctx context.Context, userID string) error
}

// Ban statuses reported in responses.
const (
	StatusActive  = "active"
	StatusExpired = "expired" // a timed ban whose expires_at has passed
	StatusLifted  = "lifted"  // ended early by DELETE /v1/users/{id}/ban
)

// Audit event types of bans. The spec's event list has none for bans; these
// extend it (audit.EventTypes lists them).
const (
	EventBanned   = audit.UserBanned
	EventUnbanned = audit.UserUnbanned
)

// MaxDuration bounds duration_seconds (100 years): longer is a permanent ban.
const MaxDuration = 100 * 365 * 24 * time.Hour

// MaxReason is the longest reason accepted, in bytes.
const MaxReason = 1000

// Service holds the dependencies of the bans area.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	Epoch authn.Epoch
	Log   *slog.Logger
	// Tokens revokes the user's OAuth tokens on a ban; nil until the OAuth
	// area is wired.
	Tokens TokenRevoker
}

// Ban is a ban, as answered by every endpoint; UnbannedAt and UnbannedBy are
// set when the ban was lifted, Status tells how it ended.
type Ban struct {
	ID          string     `json:"id"`
	UserID      string     `json:"user_id"`
	Reason      *string    `json:"reason"`
	BannedBy    *string    `json:"banned_by"`
	BannedAt    time.Time  `json:"banned_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	IsPermanent bool       `json:"is_permanent"`
	IsActive    bool       `json:"is_active"`
	Status      string     `json:"status"`
	UnbannedAt  *time.Time `json:"unbanned_at"`
	UnbannedBy  *string    `json:"unbanned_by"`
}

const cols = `id, user_id, reason, banned_by, banned_at, expires_at, is_permanent, unbanned_at, unbanned_by`

func scan(row interface{ Scan(...any) error }, now time.Time) (Ban, error) {
	var b Ban
	var reason, by, unBy sql.NullString
	var exp, unAt db.NullTime
	var at int64
	if err := row.Scan(&b.ID, &b.UserID, &reason, &by, &at, &exp, &b.IsPermanent, &unAt, &unBy); err != nil {
		return b, err
	}
	b.Reason, b.BannedBy, b.UnbannedBy = db.StringPtr(reason), db.StringPtr(by), db.StringPtr(unBy)
	b.BannedAt, b.ExpiresAt, b.UnbannedAt = db.FromTS(at), exp.Ptr(), unAt.Ptr()
	switch {
	case b.UnbannedAt != nil:
		b.Status = StatusLifted
	case b.ExpiresAt != nil && !b.ExpiresAt.After(now):
		b.Status = StatusExpired
	default:
		b.Status, b.IsActive = StatusActive, true
	}
	return b, nil
}

// userExists returns NotFound unless the user exists and is not deleted.
func userExists(ctx context.Context, q db.Querier, id string) (superAdmin bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT is_super_admin FROM users WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&superAdmin)
	if errors.Is(err, sql.ErrNoRows) {
		return false, apperr.NotFoundf("user not found")
	}
	return superAdmin, err
}

// Active returns the user's active ban, or nil.
func (s *Service) Active(ctx context.Context, q db.Querier, userID string) (*Ban, error) {
	now := s.Clock.Now()
	b, err := scan(q.QueryRowContext(ctx, `SELECT `+cols+` FROM bans WHERE user_id = $1 AND `+db.ActiveBanSQL+` ORDER BY banned_at DESC LIMIT 1`, userID, db.TS(now)), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// History returns every ban of the user, newest first.
func (s *Service) History(ctx context.Context, userID string) ([]Ban, error) {
	now := s.Clock.Now()
	scanAt := func(row db.Scanner) (Ban, error) { return scan(row, now) }
	return db.All(ctx, s.DB, scanAt, `SELECT `+cols+` FROM bans WHERE user_id = $1 ORDER BY banned_at DESC, id`, userID)
}

// Input is what a ban is given: an optional reason and, for a timed ban,
// its length in seconds (nil: permanent).
type Input struct {
	Reason          string
	DurationSeconds *int64
}

// duration checks in and returns the ban's length (0: permanent). Errors:
// Validation, naming the field.
func (in Input) duration() (time.Duration, error) {
	if len(in.Reason) > MaxReason {
		return 0, apperr.OnField("reason", apperr.Invalid("reason must be at most %d bytes", MaxReason))
	}
	v := in.DurationSeconds
	if v == nil {
		return 0, nil
	}
	if *v <= 0 {
		return 0, apperr.OnField("duration_seconds", apperr.Invalid("duration_seconds must be a positive number of seconds, or null for a permanent ban"))
	}
	if *v > int64(MaxDuration/time.Second) {
		return 0, apperr.OnField("duration_seconds", apperr.Invalid("duration_seconds must be at most %d (100 years); use null for a permanent ban", int64(MaxDuration/time.Second)))
	}
	return time.Duration(*v) * time.Second, nil
}

// Create bans userID on behalf of the caller of ctx, for in.DurationSeconds
// or permanently, with in.Reason (trimmed). ev carries the request's
// address, user agent and source for the user_banned event. It returns
// Invalid for a bad reason or duration and for a self-ban, Forbidden when
// a caller who is not a super admin (or system key) bans a super admin,
// NotFound for an unknown user and Conflict when the user is already
// banned. The user's sessions are revoked in the same transaction; OAuth
// tokens right after.
func (s *Service) Create(ctx context.Context, ev audit.Event, userID string, in Input) (Ban, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	duration, err := in.duration()
	if err != nil {
		return Ban{}, err
	}
	reason := in.Reason
	p := authn.From(ctx)
	if p.IsSelf(userID) {
		return Ban{}, apperr.Invalid("you cannot ban yourself")
	}
	now := s.Clock.Now()
	id := uuid.NewString()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		// Two racing bans of one user serialize: the second sees the first.
		if err := users.LockActive(ctx, tx, userID); err != nil {
			return err
		}
		super, err := userExists(ctx, tx, userID)
		if err != nil {
			return err
		}
		if super && !p.IsAdmin() {
			return apperr.Forbiddenf("only a super admin can ban a super admin")
		}
		if cur, err := s.Active(ctx, tx, userID); err != nil {
			return err
		} else if cur != nil {
			return apperr.Conflictf("user is already banned (ban %s)", cur.ID)
		}
		var exp any
		if duration > 0 {
			exp = db.TS(now.Add(duration))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bans (id, user_id, reason, banned_by, banned_at, expires_at, is_permanent) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, userID, nullable(reason), nullable(p.UserID), db.TS(now), exp, duration == 0); err != nil {
			return err
		}
		if _, err := sessions.EndAll(ctx, tx, s.Epoch, userID, "", now); err != nil {
			return err
		}
		meta := map[string]any{"ban_id": id, "reason": reason, "permanent": duration == 0}
		if duration > 0 {
			meta["duration_seconds"] = int64(duration / time.Second)
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, p.Actor(), EventBanned, "ban", id
		ev.Description, ev.Metadata = "User banned", meta
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		return Ban{}, err
	}
	if s.Tokens != nil {
		if err := s.Tokens.RevokeUserTokens(ctx, userID); err != nil && s.Log != nil {
			// The ban holds anyway: the OAuth resolver refuses tokens of a
			// banned user, so a failed revocation only leaves dead rows.
			s.Log.ErrorContext(ctx, "revoke OAuth tokens of banned user", slog.String("user_id", userID), slog.String("error", err.Error()))
		}
	}
	// API keys and OAuth tokens of a banned user are refused too: their
	// cached principals must die on every instance, sessions or not.
	if err := s.Epoch.Bump(ctx); err != nil {
		return Ban{}, err
	}
	b, err := scan(s.DB.QueryRowContext(ctx, `SELECT `+cols+` FROM bans WHERE id = $1`, id), now)
	return b, err
}

// Lift ends the user's active ban on behalf of the caller of ctx, recording
// who lifted it and when (ev carries the request's address, user agent and
// source). It returns NotFound when the user is unknown or not banned.
func (s *Service) Lift(ctx context.Context, ev audit.Event, userID string) error {
	p := authn.From(ctx)
	now := s.Clock.Now()
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := userExists(ctx, tx, userID); err != nil {
			return err
		}
		// Conditional UPDATE: of two racing unbans only one changes a row.
		res, err := tx.ExecContext(ctx, `UPDATE bans SET unbanned_at = $3, unbanned_by = $4 WHERE user_id = $1 AND `+db.ActiveBanSQL,
			userID, db.TS(now), db.TS(now), nullable(p.UserID))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("user is not banned")
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType = userID, p.Actor(), EventUnbanned, "ban"
		ev.Description = "User unbanned"
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		return err
	}
	return s.Epoch.Bump(ctx)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Handler serves the ban endpoints.
type Handler struct {
	S *Service
}

type statusBody struct {
	IsBanned  bool `json:"is_banned"`
	ActiveBan *Ban `json:"active_ban"`
}

// existingUser reads the path's user {id} and checks the user exists; on
// false the error is written and the handler returns.
func (h *Handler) existingUser(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := chi.URLParam(r, "id")
	if _, err := userExists(r.Context(), h.S.DB, id); err != nil {
		httpx.Error(w, r, err)
		return "", false
	}
	return id, true
}

// Status serves GET /v1/users/{id}/ban.
func (h *Handler) Status(w http.ResponseWriter, r *http.Request) {
	id, ok := h.existingUser(w, r)
	if !ok {
		return
	}
	b, err := h.S.Active(r.Context(), h.S.DB, id)
	httpx.RespondJSON(w, r, http.StatusOK, statusBody{IsBanned: b != nil, ActiveBan: b}, err)
}

type banBody struct {
	Reason          httpx.Opt[string] `json:"reason"`
	DurationSeconds httpx.Opt[int64]  `json:"duration_seconds"`
}

// Create serves POST /v1/users/{id}/ban with optional {reason,
// duration_seconds}; an empty body bans permanently without a reason.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	var b banBody
	if err := httpx.DecodeOptional(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	ban, err := h.S.Create(r.Context(), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"),
		Input{Reason: b.Reason.Value, DurationSeconds: b.DurationSeconds.Ptr()})
	httpx.Respond(w, r, http.StatusCreated, ban, err)
}

type resultBody struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// Lift serves DELETE /v1/users/{id}/ban.
func (h *Handler) Lift(w http.ResponseWriter, r *http.Request) {
	err := h.S.Lift(r.Context(), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, resultBody{Success: true, Message: "User unbanned"}, err)
}

type historyBody struct {
	Data  []Ban       `json:"data"`
	Links httpx.Links `json:"_links"`
}

// History serves GET /v1/users/{id}/bans, newest first.
func (h *Handler) History(w http.ResponseWriter, r *http.Request) {
	id, ok := h.existingUser(w, r)
	if !ok {
		return
	}
	out, err := h.S.History(r.Context(), id)
	httpx.RespondJSON(w, r, http.StatusOK, historyBody{Data: out, Links: httpx.Links{Self: httpx.SelfURL(r)}}, err)
}
