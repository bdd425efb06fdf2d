// Package apperr defines the error values areas return, independent of HTTP.
//
// An area returns *Error with a Kind; internal/httpx maps the kind to a status
// and the REST body {error: KIND, message: TEXT}. Any other error is treated as
// internal: logged with its detail, answered as 500 InternalError without it.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind is the error kind, also the "error" field of the REST body.
type Kind string

// The error kinds (DECISIONS.md, REST conventions).
const (
	BadRequest         Kind = "BadRequest"
	Validation         Kind = "ValidationError"
	Unauthorized       Kind = "Unauthorized"
	Forbidden          Kind = "Forbidden"
	NotFound           Kind = "NotFound"
	Conflict           Kind = "Conflict"
	TooManyRequests    Kind = "TooManyRequests"
	Internal           Kind = "InternalError"
	ServiceUnavailable Kind = "ServiceUnavailable"
)

// Error is an error with a kind and a message safe to show to the caller.
type Error struct {
	Kind       Kind
	Message    string
	RetryAfter time.Duration // for TooManyRequests
	Err        error         // optional cause, never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a 400 ValidationError: the input is well-formed but breaks a rule.
func Invalid(format string, args ...any) *Error { return newf(Validation, format, args...) }

// Bad returns a 400 BadRequest: the input cannot be understood or the request cannot be done as asked.
func Bad(format string, args ...any) *Error { return newf(BadRequest, format, args...) }

// NotFoundf returns a 404 NotFound.
func NotFoundf(format string, args ...any) *Error { return newf(NotFound, format, args...) }

// Conflictf returns a 409 Conflict.
func Conflictf(format string, args ...any) *Error { return newf(Conflict, format, args...) }

// Forbiddenf returns a 403 Forbidden.
func Forbiddenf(format string, args ...any) *Error { return newf(Forbidden, format, args...) }

// Unauthorizedf returns a 401 Unauthorized.
func Unauthorizedf(format string, args ...any) *Error { return newf(Unauthorized, format, args...) }

// Unavailablef returns a 503 ServiceUnavailable.
func Unavailablef(format string, args ...any) *Error {
	return newf(ServiceUnavailable, format, args...)
}

// RateLimited returns a 429 TooManyRequests telling when to retry.
func RateLimited(retryAfter time.Duration, format string, args ...any) *Error {
	e := newf(TooManyRequests, format, args...)
	e.RetryAfter = retryAfter
	return e
}

// KindOf returns the kind of err, or Internal when err carries none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err has kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
