package oauth

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
	"hmid/internal/oauth/redirecturi"
)

// OAuth error codes (RFC 6749 §4.1.2.1, §5.2; OpenID Connect Core §3.1.2.6).
const (
	ErrInvalidRequest         = "invalid_request"
	ErrInvalidClient          = "invalid_client"
	ErrInvalidGrant           = "invalid_grant"
	ErrUnsupportedGrantType   = "unsupported_grant_type"
	ErrInvalidScope           = "invalid_scope"
	ErrAccessDenied           = "access_denied"
	ErrServerError            = "server_error"
	ErrTemporarilyUnavailable = "temporarily_unavailable"
	ErrLoginRequired          = "login_required"
	ErrConsentRequired        = "consent_required"
	ErrInteractionRequired    = "interaction_required"
	ErrRequestNotSupported    = "request_not_supported"
	ErrRequestURINotSupported = "request_uri_not_supported"
	ErrInvalidToken           = "invalid_token"
	ErrInsufficientScope      = "insufficient_scope"
)

// Error is an OAuth protocol error: written as {error, error_description}
// with Status, or as query parameters on a redirect.
type Error struct {
	Code        string
	Description string
	Status      int
	basic       bool          // the client authenticated with HTTP Basic: answer with WWW-Authenticate (RFC 6749 §5.2)
	cause       error         // the internal error behind a server_error or temporarily_unavailable, logged, never shown
	retryAfter  time.Duration // a 429's wait, sent as Retry-After
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oerr(code, desc string) *Error {
	st := http.StatusBadRequest
	if code == ErrInvalidClient {
		st = http.StatusUnauthorized
	}
	switch code {
	case ErrServerError:
		st = http.StatusInternalServerError
	case ErrTemporarilyUnavailable:
		st = http.StatusServiceUnavailable
	}
	return &Error{Code: code, Description: desc, Status: st}
}

// writeOAuthError writes e as JSON with the no-store headers of RFC 6749 §5.2.
func writeOAuthError(w http.ResponseWriter, e *Error) {
	securityHeaders(w)
	if e.Status == http.StatusUnauthorized && e.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="hmid", charset="UTF-8"`)
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	if e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.retryAfter.Seconds()))))
	}
	httpx.JSON(w, e.Status, map[string]string{"error": e.Code, "error_description": e.Description})
}

// writeJSON writes a successful OAuth JSON response (never cached).
func writeJSON(w http.ResponseWriter, status int, v any) {
	securityHeaders(w)
	httpx.JSON(w, status, v)
}

// respondOAuth writes err as an OAuth error (asOAuth) when it is not nil,
// else v as a 200 JSON answer.
func respondOAuth(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		writeOAuthError(w, asOAuth(r, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// asOAuth turns any error into an OAuth error, logging internal ones.
func asOAuth(r *http.Request, err error) *Error {
	if e, ok := err.(*Error); ok {
		return logged(r, e)
	}
	return logged(r, asOAuthErr(err))
}

// retryAfterSeconds is the Retry-After of a temporarily_unavailable answer.
const retryAfterSeconds = "5"

// asOAuthErr wraps an error that is not an OAuth error, keeping it for the
// log: temporarily_unavailable (503) when a dependency is unreachable or out
// of time (apperr.IsUnavailable, RFC 6749 §4.1.2.1: "temporarily unable to
// handle the request"), the same answer on the token endpoint; server_error
// (500) otherwise.
func asOAuthErr(err error) *Error {
	e := oerr(ErrServerError, "the server could not complete the request")
	if apperr.IsUnavailable(err) {
		e = oerr(ErrTemporarilyUnavailable, "a service this request depends on is unavailable; try again later")
	}
	e.cause = err
	return e
}

// logged logs the cause of a server_error and returns e.
func logged(r *http.Request, e *Error) *Error {
	if e.cause != nil {
		if e.Code == ErrTemporarilyUnavailable {
			httpx.Logger(r.Context()).Warn("oauth: dependency unavailable", "err", e.cause)
		} else {
			httpx.Logger(r.Context()).Error("oauth: internal error", "err", e.cause)
		}
	}
	return e
}

// redirectTo answers 302 to base with params added to its query (which may
// have a query of its own, RFC 6749 §3.1.2).
func redirectTo(w http.ResponseWriter, base string, params url.Values) {
	securityHeaders(w)
	w.Header().Set("Location", redirecturi.Build(base, params))
	w.WriteHeader(http.StatusFound)
}
