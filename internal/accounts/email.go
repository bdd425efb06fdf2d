package accounts

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	hmail "hmid/internal/mail"
	"hmid/internal/users"
)

// Handler serves the endpoints of this package.
type Handler struct {
	S *Service
}

type requested struct {
	Message   string    `json:"message"`
	ExpiresAt time.Time `json:"expires_at"`
}

type result struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

func (s *Service) link(page, tok string) string {
	return strings.TrimRight(s.PublicURL, "/") + page + "?token=" + url.QueryEscape(tok)
}

// RequestEmailChange starts an email change of userID to addr: it stores a
// pending request (replacing an earlier one) and mails the token to addr.
// Errors: NotFound (user), Invalid (address, or the user has no email
// account, or addr is already theirs), Conflict (addr in use), TooManyRequests.
func (s *Service) RequestEmailChange(ctx context.Context, userID, addr string) (time.Time, error) {
	u, err := loadUser(ctx, s.DB, userID)
	if err != nil {
		return time.Time{}, err
	}
	cur, err := emailAccount(ctx, s.DB, userID)
	if err != nil {
		return time.Time{}, err
	}
	if cur == "" {
		return time.Time{}, apperr.Invalid("this account was not created with email; only email accounts can change their address (link an email account instead)")
	}
	if addr, err = normalizeEmail(addr); err != nil {
		return time.Time{}, err
	}
	if addr == cur {
		return time.Time{}, apperr.Invalid("%s is already the email address of this account", addr)
	}
	if err := checkEmailFree(ctx, s.DB, addr, userID); err != nil {
		return time.Time{}, err
	}
	if err := s.limitMail(ctx, userID); err != nil {
		return time.Time{}, err
	}
	return s.startRequest(ctx, userID, mailRequest{table: "email_change_requests", cols: "new_email", vals: []any{addr},
		kind: hmail.KindEmailChangeVerify, page: EmailChangePage, to: addr, locale: u.Locale, data: hmail.Data{Name: u.Name, NewEmail: addr}})
}

// VerifyEmailChange completes the email change that tok confirms: the user's
// email and the login of their email platform account become the new
// address. The token is used up. Errors: Invalid (unknown, expired or
// foreign token), Conflict (address taken since the request).
func (s *Service) VerifyEmailChange(ctx context.Context, r *http.Request, tok string) error {
	p := authn.From(ctx)
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		var addr string
		id, u, err := readRequest(ctx, tx, "email_change_requests", "new_email", tok, now, &addr)
		if err != nil {
			return err
		}
		userID := u.ID
		cur, err := emailAccount(ctx, tx, userID)
		if err != nil {
			return err
		} else if cur == "" {
			return apperr.Invalid("this account no longer has an email account")
		}
		if err := useRequest(ctx, tx, "email_change_requests", id, addr, userID); err != nil {
			return err
		}
		ts := db.TS(now)
		if err := users.SetEmail(ctx, tx, userID, addr, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET platform_user_id = $1, email = $1, email_verified = TRUE, updated_at = $2
			WHERE user_id = $3 AND platform_id = $4`, addr, ts, userID, emailPlatformID); err != nil {
			if db.IsUniqueViolation(err) {
				return errEmailInUse
			}
			return err
		}
		_, err = s.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: userID, ActorID: actor(p, userID), EventType: audit.UserUpdated, ResourceType: "user", ResourceID: userID,
			Description: "Email address changed", Metadata: map[string]any{"field": "email", "old_email": cur, "new_email": addr},
		}))
		return err
	})
}

// actor is the ActorID of an audit event: the caller when acting on someone else.
func actor(p *authn.Principal, userID string) string {
	if p == nil || p.UserID == userID {
		return ""
	}
	return p.Actor()
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Pending is a pending email change or link: the address it waits to have
// confirmed, and when its token expires.
type Pending struct {
	Email     string
	ExpiresAt time.Time
}

// pendingRequest returns the unexpired request in table of an existing user,
// or nil. Errors: NotFound (user).
func (s *Service) pendingRequest(ctx context.Context, table, column, userID string) (*Pending, error) {
	if _, err := loadUser(ctx, s.DB, userID); err != nil {
		return nil, err
	}
	var p Pending
	var exp int64
	err := s.DB.QueryRowContext(ctx, `SELECT `+column+`, expires_at FROM `+table+` WHERE user_id = $1 AND expires_at > $2`, userID, db.TS(s.Clock.Now())).Scan(&p.Email, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.ExpiresAt = db.FromTS(exp)
	return &p, nil
}

// PendingEmailChange returns the user's unconfirmed email change, or nil.
// Errors: NotFound (user).
func (s *Service) PendingEmailChange(ctx context.Context, userID string) (*Pending, error) {
	return s.pendingRequest(ctx, "email_change_requests", "new_email", userID)
}

// CancelEmailChange drops the user's unconfirmed email change; its token
// stops working. Errors: NotFound (user, or no change pending).
func (s *Service) CancelEmailChange(ctx context.Context, userID string) error {
	return s.cancelRequest(ctx, "email_change_requests", userID, "email change")
}

// cancelRequest removes the user's request in table; NotFound when there was
// no unexpired one (an expired row is removed as well).
func (s *Service) cancelRequest(ctx context.Context, table, userID, what string) error {
	if _, err := loadUser(ctx, s.DB, userID); err != nil {
		return err
	}
	res, err := s.DB.ExecContext(ctx, `DELETE FROM `+table+` WHERE user_id = $1 AND expires_at > $2`, userID, db.TS(s.Clock.Now()))
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM `+table+` WHERE user_id = $1`, userID); err != nil {
		return err
	}
	if n == 0 {
		return apperr.NotFoundf("no pending %s", what)
	}
	return nil
}

// RequestEmailChange serves POST /v1/users/{id}/email/request-change with {email}.
func (h *Handler) RequestEmailChange(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Email string `json:"email"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	exp, err := h.S.RequestEmailChange(r.Context(), chi.URLParam(r, "id"), b.Email)
	httpx.RespondJSON(w, r, http.StatusOK, requested{Message: "A verification email was sent to the new address; the change takes effect once it is confirmed", ExpiresAt: exp}, err)
}

// VerifyEmailChange serves POST /v1/users/email/verify with {token}.
func (h *Handler) VerifyEmailChange(w http.ResponseWriter, r *http.Request) {
	tok, ok := bindToken(w, r)
	if !ok {
		return
	}
	err := h.S.VerifyEmailChange(r.Context(), r, tok)
	httpx.RespondJSON(w, r, http.StatusOK, result{Success: true, Message: "Email address changed"}, err)
}

type pendingChange struct {
	Pending   bool       `json:"pending"`
	NewEmail  *string    `json:"new_email"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// PendingEmailChange serves GET /v1/users/{id}/email/pending.
func (h *Handler) PendingEmailChange(w http.ResponseWriter, r *http.Request) {
	p, err := h.S.PendingEmailChange(r.Context(), chi.URLParam(r, "id"))
	respondPending(w, r, p, err, func(p *Pending) pendingChange {
		return pendingChange{Pending: true, NewEmail: &p.Email, ExpiresAt: &p.ExpiresAt}
	})
}

// respondPending answers GET …/pending: the body shown makes of the
// pending request p, or the zero body (pending false, nulls) when there is
// none.
func respondPending[T any](w http.ResponseWriter, r *http.Request, p *Pending, err error, shown func(*Pending) T) {
	var out T
	if p != nil {
		out = shown(p)
	}
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// CancelEmailChange serves DELETE /v1/users/{id}/email/pending.
func (h *Handler) CancelEmailChange(w http.ResponseWriter, r *http.Request) {
	err := h.S.CancelEmailChange(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, result{Success: true, Message: "Pending email change cancelled"}, err)
}
