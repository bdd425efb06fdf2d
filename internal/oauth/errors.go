package oauth

import (
	"net/http"
	"net/url"

	"hmid/internal/httpx"
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
	ErrLoginRequired          = "login_required"
	ErrConsentRequired        = "consent_required"
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
	basic       bool  // the client authenticated with HTTP Basic: answer with WWW-Authenticate (RFC 6749 §5.2)
	cause       error // the internal error behind a server_error, logged, never shown
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oerr(code, desc string) *Error {
	st := http.StatusBadRequest
	if code == ErrInvalidClient {
		st = http.StatusUnauthorized
	}
	if code == ErrServerError {
		st = http.StatusInternalServerError
	}
	return &Error{Code: code, Description: desc, Status: st}
}

// writeOAuthError writes e as JSON with the no-store headers of RFC 6749 §5.2.
func writeOAuthError(w http.ResponseWriter, e *Error) {
	securityHeaders(w)
	if e.Status == http.StatusUnauthorized && e.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="hmid", charset="UTF-8"`)
	}
	httpx.JSON(w, e.Status, map[string]string{"error": e.Code, "error_description": e.Description})
}

// writeJSON writes a successful OAuth JSON response (never cached).
func writeJSON(w http.ResponseWriter, status int, v any) {
	securityHeaders(w)
	httpx.JSON(w, status, v)
}

// asOAuth turns any error into an OAuth error, logging internal ones.
func asOAuth(r *http.Request, err error) *Error {
	if e, ok := err.(*Error); ok {
		return logged(r, e)
	}
	return logged(r, asOAuthErr(err))
}

// logged logs the cause of a server_error and returns e.
func logged(r *http.Request, e *Error) *Error {
	if e.cause != nil {
		httpx.Logger(r.Context()).Error("oauth: internal error", "err", e.cause)
	}
	return e
}

// redirectTo answers 302 to base with params added to its query (which may
// have a query of its own, RFC 6749 §3.1.2).
func redirectTo(w http.ResponseWriter, base string, params url.Values) {
	securityHeaders(w)
	w.Header().Set("Location", buildRedirect(base, params))
	w.WriteHeader(http.StatusFound)
}
