package app

import (
	"context"
	"net/http"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
)

// writeGrace is how long past the request timeout a response may still be
// written: a handler that ran out of time needs a moment to send its 503.
const writeGrace = 5 * time.Second

// requestLimits bounds what one request may take from the server (issue:
// slow clients must not exhaust it): the time to send its body
// (HMID_READ_TIMEOUT), the time to be handled and answered, the database
// included (HMID_REQUEST_TIMEOUT, as the request context's deadline and the
// connection's write deadline), and a share of HMID_MAX_REQUESTS_IN_FLIGHT.
// Routes that stream for as long as the client wants (the WebSocket, the
// data export) are exempt from all three; HMID_MAX_CONNECTIONS bounds them.
type requestLimits struct {
	slots   chan struct{} // one token per request in flight
	read    time.Duration
	request time.Duration
	streams map[string]bool // paths of streaming routes
}

func newRequestLimits(maxInFlight int, read, request time.Duration) *requestLimits {
	return &requestLimits{slots: make(chan struct{}, maxInFlight), read: read, request: request, streams: map[string]bool{}}
}

// errBusy answers a request over the in-flight cap at once, without queueing
// it: a client retrying after a second costs less than a request waiting
// with its body in memory.
var errBusy = &apperr.Error{Kind: apperr.ServiceUnavailable, RetryAfter: time.Second,
	Message: "the server is handling as many requests as it allows; try again shortly"}

// wrap returns next behind the limits.
func (l *requestLimits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if l.streams[r.URL.Path] {
			// A deadline set for an earlier request on this connection must
			// not cut the stream. Writers that cannot (tests' recorders) need not.
			_ = rc.SetReadDeadline(time.Time{})
			_ = rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(w, r)
			return
		}
		select {
		case l.slots <- struct{}{}:
			defer func() { <-l.slots }()
		default:
			httpx.Error(w, r, errBusy)
			return
		}
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(l.read))
		_ = rc.SetWriteDeadline(now.Add(l.request + writeGrace))
		ctx, cancel := context.WithTimeout(r.Context(), l.request)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
