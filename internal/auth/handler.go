package auth

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/httpx"
	"hmid/internal/sessions"
)

// Handler serves the JSON extension endpoints under /v1/auth.
type Handler struct {
	S *Service
	// SecureCookies sets the Secure attribute on cookies (HMID_PUBLIC_URL is https).
	SecureCookies bool
}

// SessionAnswer is the answer of a successful login or registration.
type SessionAnswer struct {
	SessionToken           string      `json:"session_token"`
	SessionID              string      `json:"session_id"`
	ExpiresAt              time.Time   `json:"expires_at"`
	User                   UserSummary `json:"user"`
	TwoFactorSetupRequired bool        `json:"two_factor_setup_required,omitempty"`
}

// TwoFactorAnswer asks the client to repeat the login with a code.
type TwoFactorAnswer struct {
	TwoFactorRequired bool   `json:"two_factor_required"`
	Message           string `json:"message"`
}

// MessageAnswer is a plain confirmation.
type MessageAnswer struct {
	Message string `json:"message"`
}

type loginBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Code     string `json:"code"`
}

// Login is POST /v1/auth/login.
func (h *Handler) Login(w http.ResponseWriter, r *http.Request) {
	var b loginBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	res, err := h.S.Login(r.Context(), LoginInput(b), h.meta(w, r))
	h.answer(w, r, http.StatusOK, res, err)
}

type registerBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Username string `json:"username"`
}

// Register is POST /v1/auth/register.
func (h *Handler) Register(w http.ResponseWriter, r *http.Request) {
	var b registerBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	res, err := h.S.Register(r.Context(), RegisterInput(b), h.meta(w, r))
	h.answer(w, r, http.StatusCreated, res, err)
}

// TwoFactorMessage explains the second login step.
const TwoFactorMessage = "Two-factor authentication is enabled: repeat the login with the code from your authenticator app or a backup code."

// answer writes the outcome of a login or registration: err, the request
// for the second factor, or the new session with its cookies.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, status int, res Result, err error) {
	var passkey *PasskeyRequiredError
	switch {
	case errors.As(err, &passkey):
		h.writePasskeyRequired(w, r, passkey.Locale)
		return
	case err != nil:
		httpx.Error(w, r, err)
		return
	case res.PasskeyRequired:
		h.writePasskeyRequired(w, r, res.Locale)
		return
	}
	if res.TwoFactorRequired {
		httpx.JSON(w, http.StatusOK, TwoFactorAnswer{TwoFactorRequired: true, Message: TwoFactorMessage})
		return
	}
	SetSessionCookie(w, res.Session, h.S.now(), h.SecureCookies)
	SetDeviceCookie(w, res.Device, h.SecureCookies)
	httpx.JSON(w, status, SessionAnswer{
		SessionToken: res.Session.Token, SessionID: res.Session.ID, ExpiresAt: res.Session.ExpiresAt.UTC(),
		User: res.User, TwoFactorSetupRequired: res.SetupRequired,
	})
}

// Logout is POST /v1/auth/logout: the session of the bearer token, or else
// of the hmid_session cookie, is revoked and the cookie cleared.
func (h *Handler) Logout(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	if p == nil {
		c, err := r.Cookie(CookieName)
		if err != nil || c.Value == "" {
			httpx.Error(w, r, apperr.Unauthorizedf("authentication required: send a session token as bearer or the %s cookie", CookieName))
			return
		}
		if p, err = h.S.Session(r.Context(), c.Value); err != nil {
			ClearSessionCookie(w, h.SecureCookies)
			httpx.Error(w, r, err)
			return
		}
	} else if p.Kind != authn.KindSession {
		httpx.Error(w, r, apperr.Forbiddenf("this endpoint needs a user session token"))
		return
	}
	if err := h.S.Logout(r.Context(), p, h.meta(w, r)); err != nil {
		httpx.Error(w, r, err)
		return
	}
	ClearSessionCookie(w, h.SecureCookies)
	httpx.NoContent(w)
}

// ResetRequest is POST /v1/auth/password-reset/request.
func (h *Handler) ResetRequest(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Email string `json:"email"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	err := h.S.RequestReset(r.Context(), b.Email, h.meta(w, r))
	httpx.RespondJSON(w, r, http.StatusOK, MessageAnswer{Message: ResetRequestedMessage}, err)
}

// ResetDoneMessage confirms a password reset.
const ResetDoneMessage = "Your password has been changed and every session was signed out. Log in with the new password."

// ResetConfirm is POST /v1/auth/password-reset/confirm.
func (h *Handler) ResetConfirm(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Token    string `json:"token"`
		Password string `json:"password"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	err := h.S.ConfirmReset(r.Context(), strings.TrimSpace(b.Token), b.Password, h.meta(w, r))
	httpx.RespondJSON(w, r, http.StatusOK, MessageAnswer{Message: ResetDoneMessage}, err)
}

// meta is the Meta of a JSON request; throttle states become the RateLimit-*
// headers (DECISIONS.md, REST conventions).
func (h *Handler) meta(w http.ResponseWriter, r *http.Request) Meta {
	m := MetaFrom(r, "api")
	m.RateLimit = func(d cache.Decision) { httpx.SetRateLimit(w, d.Limit, d.Remaining, d.Reset) }
	return m
}

// SetSessionCookie stores the session token in the browser: HttpOnly (no
// script reads it), SameSite=Lax (sent on top-level navigations such as the
// OAuth authorize redirect, not on cross-site subrequests or POSTs), Secure
// on https, for the whole site, expiring with the session.
func SetSessionCookie(w http.ResponseWriter, c sessions.Created, now time.Time, secure bool) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: c.Token, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(c.ExpiresAt.Sub(now).Seconds()),
	})
}

// ClearSessionCookie removes the session cookie.
func ClearSessionCookie(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// PasswordChangedMessage confirms a password change.
const PasswordChangedMessage = "Your password has been changed and every other session was signed out."

// PasswordChangeAnswer is the answer of a password change.
type PasswordChangeAnswer struct {
	Message         string `json:"message"`
	RevokedSessions int64  `json:"revoked_sessions"`
}

// ChangePassword is POST /v1/users/me/password, for the user of the session
// (the route admits session tokens only).
func (h *Handler) ChangePassword(w http.ResponseWriter, r *http.Request) {
	var b struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	res, err := h.S.ChangePassword(r.Context(), authn.From(r.Context()), PasswordChange{Current: b.CurrentPassword, New: b.NewPassword}, h.meta(w, r))
	httpx.RespondJSON(w, r, http.StatusOK, PasswordChangeAnswer{Message: PasswordChangedMessage, RevokedSessions: res.RevokedSessions}, err)
}
