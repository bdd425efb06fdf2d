package accounts

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/users"
)

// PlatformAccount is a login account of a user on one platform.
type PlatformAccount struct {
	ID             string    `json:"id"`
	PlatformID     string    `json:"platform_id"`
	PlatformName   string    `json:"platform_name"`
	PlatformSlug   string    `json:"platform_slug"`
	PlatformUserID string    `json:"platform_user_id"`
	IsOAuth        bool      `json:"is_oauth"`
	IsPrimary      bool      `json:"is_primary"`
	Username       *string   `json:"username"`
	Email          *string   `json:"email"`
	AvatarURL      *string   `json:"avatar_url"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// accountSQL selects platform accounts with their platform; the primary
// account is the one users.primary_platform_account_id names (the column
// is_primary is the fallback for users without one).
const accountSQL = `SELECT pa.id, pa.platform_id, p.name, p.slug, pa.platform_user_id, p.is_oauth,
	CASE WHEN u.primary_platform_account_id IS NULL THEN pa.is_primary ELSE pa.id = u.primary_platform_account_id END,
	pa.username, pa.email, pa.avatar_url, pa.created_at, pa.updated_at
	FROM platform_accounts pa JOIN platforms p ON p.id = pa.platform_id JOIN users u ON u.id = pa.user_id`

func scanAccount(row db.Scanner) (PlatformAccount, error) {
	var a PlatformAccount
	var name, email, avatar sql.NullString
	var c, u int64
	err := row.Scan(&a.ID, &a.PlatformID, &a.PlatformName, &a.PlatformSlug, &a.PlatformUserID, &a.IsOAuth, &a.IsPrimary, &name, &email, &avatar, &c, &u)
	a.Username, a.Email, a.AvatarURL = db.StringPtr(name), db.StringPtr(email), db.StringPtr(avatar)
	a.CreatedAt, a.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return a, err
}

// Accounts lists the platform accounts of a user, primary first, then by age.
func (s *Service) Accounts(ctx context.Context, userID string) ([]PlatformAccount, error) {
	if _, err := loadUser(ctx, s.DB, userID); err != nil {
		return nil, err
	}
	return db.All(ctx, s.DB, scanAccount, accountSQL+` WHERE pa.user_id = $1 ORDER BY pa.created_at, pa.id`, userID)
}

// account returns one account of the user, or NotFound (also when the
// account belongs to someone else, so account ids cannot be probed).
func account(ctx context.Context, q db.Querier, userID, accountID string) (PlatformAccount, error) {
	a, err := scanAccount(q.QueryRowContext(ctx, accountSQL+` WHERE pa.user_id = $1 AND pa.id = $2`, userID, accountID))
	return a, db.NotFoundOr(err, "platform account")
}

// SetPrimary makes accountID the primary account of userID; ev carries the
// request's address, user agent and source for the user_updated event.
func (s *Service) SetPrimary(ctx context.Context, userID, accountID string, ev audit.Event) (PlatformAccount, error) {
	p := authn.From(ctx)
	var out PlatformAccount
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := loadUser(ctx, tx, userID); err != nil {
			return err
		}
		a, err := account(ctx, tx, userID, accountID)
		if err != nil {
			return err
		}
		if !a.IsPrimary {
			now := s.Clock.Now()
			if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET is_primary = (id = $2), updated_at = $3 WHERE user_id = $1`, userID, accountID, db.TS(now)); err != nil {
				return err
			}
			if err := users.SetPrimaryAccount(ctx, tx, userID, accountID, now); err != nil {
				return err
			}
			ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, actor(p, userID), audit.UserUpdated, "platform_account", accountID
			ev.Description = "Primary account changed to " + a.PlatformName
			ev.Metadata = map[string]any{"field": "primary_platform_account_id", "platform": a.PlatformSlug}
			if _, err := s.Audit.Record(ctx, tx, ev); err != nil {
				return err
			}
		}
		out, err = account(ctx, tx, userID, accountID)
		return err
	})
	return out, err
}

// The refusals of Unlink (spec 2, Platform accounts: DELETE is rejected for
// the email platform account, for the last remaining account and for the
// primary account). They are values, so a page can explain each in words.
var (
	ErrUnlinkEmail   = apperr.Invalid("the email account cannot be unlinked; it holds the account's email address and password")
	ErrUnlinkLast    = apperr.Invalid("the last remaining account cannot be unlinked; the user could no longer sign in")
	ErrUnlinkPrimary = apperr.Invalid("the primary account cannot be unlinked; make another account primary first")
)

// UnlinkRefusal returns why a, one of the n platform accounts of its user,
// cannot be unlinked (ErrUnlinkEmail, ErrUnlinkLast, ErrUnlinkPrimary), or
// nil when it can. Unlink applies it; the account console shows it beside
// each account before anyone tries.
func UnlinkRefusal(a PlatformAccount, n int) error {
	switch {
	case a.PlatformSlug == "email":
		return ErrUnlinkEmail
	case n <= 1:
		return ErrUnlinkLast
	case a.IsPrimary:
		return ErrUnlinkPrimary
	}
	return nil
}

// Unlink removes a platform account of the user, unless UnlinkRefusal
// refuses it; ev carries the request's address, user agent and source for
// the account_unlinked event.
func (s *Service) Unlink(ctx context.Context, userID, accountID string, ev audit.Event) error {
	p := authn.From(ctx)
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := loadUser(ctx, tx, userID); err != nil {
			return err
		}
		a, err := account(ctx, tx, userID, accountID)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1`, userID).Scan(&n); err != nil {
			return err
		}
		if err := UnlinkRefusal(a, n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_accounts WHERE id = $1 AND user_id = $2`, accountID, userID); err != nil {
			return err
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, actor(p, userID), audit.AccountUnlinked, "platform_account", accountID
		ev.Description, ev.Metadata = a.PlatformName+" account unlinked", map[string]any{"platform": a.PlatformSlug}
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
}

type accountList struct {
	Data  []PlatformAccount `json:"data"`
	Links httpx.Links       `json:"_links"`
}

// ListAccounts serves GET /v1/users/{id}/accounts.
func (h *Handler) ListAccounts(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.Accounts(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, accountList{Data: out, Links: httpx.Links{Self: httpx.SelfURL(r)}}, err)
}

// SetPrimary serves PUT /v1/users/{id}/accounts/{account_id}/primary.
func (h *Handler) SetPrimary(w http.ResponseWriter, r *http.Request) {
	a, err := h.S.SetPrimary(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "account_id"), audit.FromRequest(r, audit.Event{}))
	httpx.Respond(w, r, http.StatusOK, a, err)
}

// Unlink serves DELETE /v1/users/{id}/accounts/{account_id}.
func (h *Handler) Unlink(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.Unlink(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "account_id"), audit.FromRequest(r, audit.Event{})))
}
