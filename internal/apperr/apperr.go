// Package apperr defines the error values areas return, independent of HTTP.
//
// An area returns *Error with a Kind; internal/httpx maps the kind to a status
// and the REST body {error: KIND, message: TEXT}. Any other error is treated as
// internal: logged with its detail, answered as 500 InternalError without it,
// unless it says that a dependency is unreachable, out of time or out of
// space (IsUnavailable): that is ServiceUnavailable, so one outage gets one
// answer, 503, whichever store and route it surfaces in.
package apperr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
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
	Kind    Kind
	Message string
	// Field names the input field the error is about ("" for none), so a
	// page can show the message next to that field; the REST body does not
	// carry it.
	Field      string
	RetryAfter time.Duration // for TooManyRequests and ServiceUnavailable
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

// Unavailable returns a 503 ServiceUnavailable for cause, the failure of a
// dependency the request cannot do without (the database on the
// authentication path), with msg as the answer. The cause is kept, never
// shown, and logged where the error is answered (httpx.Error), so an outage
// is answered the same way everywhere and its reason is still found in the
// log.
func Unavailable(cause error, msg string) *Error {
	return &Error{Kind: ServiceUnavailable, Message: msg, Err: cause}
}

// RateLimited returns a 429 TooManyRequests telling when to retry.
func RateLimited(retryAfter time.Duration, format string, args ...any) *Error {
	e := newf(TooManyRequests, format, args...)
	e.RetryAfter = retryAfter
	return e
}

// OnField returns err naming field as the input it is about (see
// Error.Field); an error that is not an *Error is returned as it is.
func OnField(field string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Field = field
	return &c
}

// FieldOf returns the input field err is about, "" for none.
func FieldOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// KindOf returns the kind of err: the kind it carries, ServiceUnavailable
// when it is (or an Internal error is caused by) an unavailable dependency,
// and Internal otherwise.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Kind
	}
	if unreachable(err) {
		return ServiceUnavailable
	}
	return Internal
}

// IsUnavailable reports whether err means that a dependency (database,
// cache, another service) cannot answer now rather than that the request or
// the code is wrong: a ServiceUnavailable error, a deadline that passed, a
// network failure, or a store error its package registered as such.
func IsUnavailable(err error) bool { return err != nil && KindOf(err) == ServiceUnavailable }

// classifiers are the stores' own tests for "unreachable" errors (driver
// error codes that only the store's package knows), added by RegisterUnavailable.
var classifiers struct {
	sync.RWMutex
	fs []func(error) bool
}

// RegisterUnavailable adds f to the tests of IsUnavailable. The packages
// that own a driver (internal/db, internal/cache) register theirs at init,
// so the classification stays in one place without apperr importing drivers.
func RegisterUnavailable(f func(error) bool) {
	classifiers.Lock()
	defer classifiers.Unlock()
	classifiers.fs = append(classifiers.fs, f)
}

// unreachable is IsUnavailable without the kind check: the generic causes
// (deadline, network, out of disk space) and the registered ones.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) {
		return true
	}
	classifiers.RLock()
	defer classifiers.RUnlock()
	for _, f := range classifiers.fs {
		if f(err) {
			return true
		}
	}
	return false
}

// Is reports whether err has kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
