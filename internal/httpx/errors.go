package httpx

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"hmid/internal/apperr"
)

// ErrorBody is the REST error body {error, message}.
type ErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

var statusOf = map[apperr.Kind]int{
	apperr.BadRequest:         http.StatusBadRequest,
	apperr.Validation:         http.StatusBadRequest,
	apperr.Unauthorized:       http.StatusUnauthorized,
	apperr.Forbidden:          http.StatusForbidden,
	apperr.NotFound:           http.StatusNotFound,
	apperr.Conflict:           http.StatusConflict,
	apperr.TooManyRequests:    http.StatusTooManyRequests,
	apperr.Internal:           http.StatusInternalServerError,
	apperr.ServiceUnavailable: http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status for an error kind.
func StatusOf(k apperr.Kind) int {
	if s, ok := statusOf[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// unavailableRetry is the Retry-After of a 503 that names no other: long
// enough not to hammer a dependency while it restarts.
const unavailableRetry = 5 * time.Second

// Error writes err as a REST error. Errors that say a dependency is
// unreachable or out of time (apperr.IsUnavailable) are answered 503
// ServiceUnavailable with Retry-After, whatever route they surface in; other
// errors without a kind are logged with their detail and answered as a bare
// 500; a cancelled request is not logged as a failure.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	e := asAppErr(err)
	switch {
	case e.Kind == apperr.Internal && e.Err != nil:
		Logger(r.Context()).Error("internal error", slog.String("error", e.Err.Error()))
	case e.Kind == apperr.ServiceUnavailable && e.Err != nil:
		// An unreachable dependency, or an area's 503 with its cause
		// (apperr.Unavailable): the fault is outside hmid, so a warning, but
		// its reason belongs in the log.
		Logger(r.Context()).Warn("dependency unavailable", slog.String("error", e.Err.Error()))
	}
	if e.Kind == apperr.ServiceUnavailable {
		// Every 503 says when to come back (RFC 9110 §10.2.3).
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(cmp.Or(e.RetryAfter, unavailableRetry).Seconds()))))
	}
	if e.Kind == apperr.TooManyRequests && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Kind == apperr.Unauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hmid"`)
	}
	JSON(w, StatusOf(e.Kind), ErrorBody{Error: string(e.Kind), Message: e.Message})
}

// asAppErr returns the *apperr.Error to answer err with: its own, a
// ServiceUnavailable one for an unreachable dependency, or an Internal one,
// each keeping err as the cause for the log.
func asAppErr(err error) *apperr.Error {
	var e *apperr.Error
	known := errors.As(err, &e)
	if known && e.Kind != apperr.Internal {
		return e
	}
	if apperr.IsUnavailable(err) {
		msg := "a service this request depends on is unavailable; try again later"
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "the request did not complete within its time limit; try again later"
		}
		return &apperr.Error{Kind: apperr.ServiceUnavailable, Message: msg, Err: err}
	}
	if known {
		return e
	}
	return &apperr.Error{Kind: apperr.Internal, Message: "an internal error occurred", Err: err}
}

// NotFoundHandler answers unknown routes with a 404 JSON body.
func NotFoundHandler(w http.ResponseWriter, r *http.Request) {
	JSON(w, http.StatusNotFound, ErrorBody{Error: string(apperr.NotFound), Message: "no route for " + r.Method + " " + r.URL.Path})
}

// MethodNotAllowedHandler answers a known path with the wrong method with a 405 JSON body.
func MethodNotAllowedHandler(w http.ResponseWriter, r *http.Request) {
	JSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: "MethodNotAllowed", Message: "method " + r.Method + " is not allowed on " + r.URL.Path})
}
