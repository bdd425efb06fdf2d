package accounts

import (
	"context"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	hmail "hmid/internal/mail"
	"hmid/internal/password"
	"hmid/internal/users"
)

// The password refusals of RequestEmailLink; values, so a page can put them
// under the password field.
var (
	ErrPasswordShort = apperr.Invalid("password must be at least %d characters", MinPassword)
	ErrPasswordLong  = apperr.Invalid("password must be at most %d bytes", MaxPassword)
)

// checkPassword applies the password rules in force (password.* policies)
// to the password of an email link: ErrPasswordShort (wrapped, with the
// minimum in force in its message), ErrPasswordLong or password.ErrCommon.
func (s *Service) checkPassword(pass string) error {
	rules := s.PasswordRules()
	if n := rules.MinLength; utf8.RuneCountInString(pass) < n {
		return &apperr.Error{Kind: apperr.Validation, Message: fmt.Sprintf("password must be at least %d characters", n), Err: ErrPasswordShort}
	}
	if len(pass) > MaxPassword {
		return ErrPasswordLong
	}
	if rules.RefuseCommon && password.IsCommon(pass) {
		return password.ErrCommon
	}
	return nil
}

// PasswordRules are the password rules in force, for the forms' hints.
func (s *Service) PasswordRules() password.Rules { return s.Policy.Current().Password }

// RequestEmailLink starts linking an email account (addr and password) to a
// user who has none: the password is hashed with Argon2id now, and the token
// is mailed to addr. Errors: NotFound, Invalid (address, password, or the
// user already has an email account), Conflict (addr in use), TooManyRequests.
func (s *Service) RequestEmailLink(ctx context.Context, userID, addr, pass string) (time.Time, error) {
	u, err := loadUser(ctx, s.DB, userID)
	if err != nil {
		return time.Time{}, err
	}
	if cur, err := emailAccount(ctx, s.DB, userID); err != nil {
		return time.Time{}, err
	} else if cur != "" {
		return time.Time{}, apperr.Invalid("this user already has an email account")
	}
	if addr, err = normalizeEmail(addr); err != nil {
		return time.Time{}, err
	}
	if err := s.checkPassword(pass); err != nil {
		return time.Time{}, err
	}
	if err := checkEmailFree(ctx, s.DB, addr, userID); err != nil {
		return time.Time{}, err
	}
	if err := s.limitMail(ctx, userID); err != nil {
		return time.Time{}, err
	}
	hash, err := s.HashPassword(pass)
	if err != nil {
		return time.Time{}, err
	}
	return s.startRequest(ctx, userID, mailRequest{table: "email_link_requests", cols: "email, password_hash", vals: []any{addr, hash},
		kind: hmail.KindEmailLinkVerify, page: EmailLinkPage, to: addr, locale: u.Locale, data: hmail.Data{Name: u.Name, Email: addr}})
}

// VerifyEmailLink completes the link that tok confirms: an email platform
// account is created with the address (lower-cased, also its login) and the
// password hash chosen at request time, and the user's email is set when it
// had none. It returns the new platform account id. Errors: Invalid
// (unknown, expired or foreign token; an email account exists by now),
// Conflict (address taken since the request).
func (s *Service) VerifyEmailLink(ctx context.Context, r *http.Request, tok string) (string, error) {
	p := authn.From(ctx)
	now := s.Clock.Now()
	accountID := uuid.NewString()
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var addr, hash string
		id, u, err := readRequest(ctx, tx, "email_link_requests", "email, password_hash", tok, now, &addr, &hash)
		if err != nil {
			return err
		}
		userID := u.ID
		if cur, err := emailAccount(ctx, tx, userID); err != nil {
			return err
		} else if cur != "" {
			return apperr.Invalid("this user already has an email account")
		}
		if err := useRequest(ctx, tx, "email_link_requests", id, addr, userID); err != nil {
			return err
		}
		ts := db.TS(now)
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, password_hash, email_verified, is_primary, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $4, $6, TRUE, FALSE, $7, $7)`, accountID, userID, emailPlatformID, addr, u.Username, hash, ts); err != nil {
			if db.IsUniqueViolation(err) {
				return errEmailInUse
			}
			return err
		}
		if err := users.FillEmail(ctx, tx, userID, addr, now); err != nil {
			return err
		}
		_, err = s.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: userID, ActorID: actor(p, userID), EventType: audit.AccountLinked, ResourceType: "platform_account", ResourceID: accountID,
			Description: "Email account linked", Metadata: map[string]any{"platform": "email", "email": addr},
		}))
		return err
	})
	if err != nil {
		return "", err
	}
	return accountID, nil
}

// RequestEmailLink serves POST /v1/users/{id}/email-link/request with {email, password}.
func (h *Handler) RequestEmailLink(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	exp, err := h.S.RequestEmailLink(r.Context(), chi.URLParam(r, "id"), b.Email, b.Password)
	httpx.RespondJSON(w, r, http.StatusOK, requested{Message: "A verification email was sent; the email account is linked once it is confirmed", ExpiresAt: exp}, err)
}

type linked struct {
	Message           string `json:"message"`
	PlatformAccountID string `json:"platform_account_id"`
}

// VerifyEmailLink serves POST /v1/users/email-link/verify with {token}.
func (h *Handler) VerifyEmailLink(w http.ResponseWriter, r *http.Request) {
	tok, ok := bindToken(w, r)
	if !ok {
		return
	}
	id, err := h.S.VerifyEmailLink(r.Context(), r, tok)
	httpx.RespondJSON(w, r, http.StatusOK, linked{Message: "Email account linked; you can now sign in with this email address and password", PlatformAccountID: id}, err)
}

type pendingLink struct {
	Pending   bool       `json:"pending"`
	Email     *string    `json:"email"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// PendingEmailLink returns the user's unconfirmed email link, or nil.
// Errors: NotFound (user).
func (s *Service) PendingEmailLink(ctx context.Context, userID string) (*Pending, error) {
	return s.pendingRequest(ctx, "email_link_requests", "email", userID)
}

// CancelEmailLink drops the user's unconfirmed email link; its token stops
// working. Errors: NotFound (user, or no link pending).
func (s *Service) CancelEmailLink(ctx context.Context, userID string) error {
	return s.cancelRequest(ctx, "email_link_requests", userID, "email link")
}

// PendingEmailLink serves GET /v1/users/{id}/email-link/pending.
func (h *Handler) PendingEmailLink(w http.ResponseWriter, r *http.Request) {
	p, err := h.S.PendingEmailLink(r.Context(), chi.URLParam(r, "id"))
	respondPending(w, r, p, err, func(p *Pending) pendingLink {
		return pendingLink{Pending: true, Email: &p.Email, ExpiresAt: &p.ExpiresAt}
	})
}

type message struct {
	Message string `json:"message"`
}

// CancelEmailLink serves DELETE /v1/users/{id}/email-link/pending.
func (h *Handler) CancelEmailLink(w http.ResponseWriter, r *http.Request) {
	err := h.S.CancelEmailLink(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, message{Message: "Pending email link cancelled"}, err)
}
