package httpx

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

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

// Error writes err as a REST error. Errors without a kind are logged with
// their detail and answered as a bare 500; a cancelled request is not logged
// as a failure.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	var e *apperr.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return
		}
		Logger(r.Context()).Error("internal error", slog.String("error", err.Error()))
		JSON(w, http.StatusInternalServerError, ErrorBody{Error: string(apperr.Internal), Message: "an internal error occurred"})
		return
	}
	if e.Kind == apperr.Internal && e.Err != nil {
		Logger(r.Context()).Error("internal error", slog.String("error", e.Err.Error()))
	}
	if e.Kind == apperr.TooManyRequests && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Kind == apperr.Unauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hmid"`)
	}
	JSON(w, StatusOf(e.Kind), ErrorBody{Error: string(e.Kind), Message: e.Message})
}

// NotFoundHandler answers unknown routes with a 404 JSON body.
func NotFoundHandler(w http.ResponseWriter, r *http.Request) {
	JSON(w, http.StatusNotFound, ErrorBody{Error: string(apperr.NotFound), Message: "no route for " + r.Method + " " + r.URL.Path})
}

// MethodNotAllowedHandler answers a known path with the wrong method with a 405 JSON body.
func MethodNotAllowedHandler(w http.ResponseWriter, r *http.Request) {
	JSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: "MethodNotAllowed", Message: "method " + r.Method + " is not allowed on " + r.URL.Path})
}
