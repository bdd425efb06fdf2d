package app

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/deadline"
	"hmid/internal/httpx"
)

// writeGrace is how long past the request timeout a response may still be
// written: a handler that ran out of time needs a moment to send its 503.
const writeGrace = 5 * time.Second

// requestLimits bounds what one request may take from the server (issue:
// slow clients must not exhaust it), in two stages.
//
// Receiving (wrap, before routing): the body is read whole, up to
// httpx.MaxBodyBytes, under a read deadline of HMID_READ_TIMEOUT, into a
// buffer that grows only as bytes arrive; the deadline is then cleared. A
// client that drips its body holds a connection and a few bytes, nothing a
// handler needs, and is cut off with 408 when the deadline passes. Clearing
// the deadline matters: net/http watches a connection whose body was read
// for the client going away, and that watch ends the request's context when
// it meets a read deadline, so a deadline left in place cancels every
// handler that outlives it and breaks the keep-alive connection.
//
// Handling (handle, per route in routes.go, so it knows the route): a share
// of HMID_MAX_REQUESTS_IN_FLIGHT, taken only once the body is in, and a
// handling deadline, HMID_REQUEST_TIMEOUT or more for a route whose spec
// names a longer wait, as the request context's deadline and, plus
// writeGrace, the connection's write deadline (wrap sets it for the usual
// timeout once the body is in; handle moves it only for a longer one).
// Routes that stream for as long as the client wants (the WebSocket, the
// data export) and /livez are registered without it and with no write
// deadline (unbounded); HMID_MAX_CONNECTIONS bounds them.
type requestLimits struct {
	slots   chan struct{} // one token per request in flight
	read    time.Duration
	request time.Duration

	// bodyBudget bounds the bytes of request bodies held in memory at once,
	// received or being received, since a body no longer waits for a slot
	// before it is read; bodyHeld is what is held now.
	bodyBudget int64
	bodyHeld   atomic.Int64
}

func newRequestLimits(maxInFlight int, read, request time.Duration) *requestLimits {
	return &requestLimits{
		slots: make(chan struct{}, maxInFlight), read: read, request: request,
		bodyBudget: int64(maxInFlight) * httpx.MaxBodyBytes,
	}
}

// errBusy answers a request over the in-flight cap at once, without queueing
// it: a client retrying after a second costs less than a request waiting
// with its body in memory.
var errBusy = &apperr.Error{Kind: apperr.ServiceUnavailable, RetryAfter: time.Second,
	Message: "the server is handling as many requests as it allows; try again shortly"}

// errBodiesFull answers a body that would take the bodies held in memory
// past their budget.
var errBodiesFull = &apperr.Error{Kind: apperr.ServiceUnavailable, RetryAfter: time.Second,
	Message: "the server is receiving as many request bodies as it allows; try again shortly"}

// initialBodyBuffer is the buffer a body starts in (smaller when its
// Content-Length says so): the buffer then doubles as bytes arrive, so a
// client that announces a large body and drips it holds little memory.
const initialBodyBuffer = 4 << 10

// wrap returns next behind the receiving stage: it reads the body before
// routing, so that no handler, in-flight slot or database connection waits
// on a client's upload.
func (l *requestLimits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A server request without a body has ContentLength 0 (a chunked one
		// has -1): nothing to receive, and no read deadline to clear, since
		// net/http sets none past the headers (http.Server has no ReadTimeout).
		if r.ContentLength == 0 || r.Body == nil {
			l.writeBy(rc)
			next.ServeHTTP(w, r)
			return
		}
		_ = rc.SetReadDeadline(time.Now().Add(l.read))
		body, held, err := l.receive(r.Body, r.ContentLength)
		defer l.bodyHeld.Add(-held)
		if err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			// The rest of the body will not be read, and the connection is not
			// reused. An expired deadline makes net/http's attempt to drain the
			// body after the answer fail at once instead of waiting on a client
			// that drips it.
			_ = rc.SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
		}
		var ne net.Error
		switch {
		case errors.Is(err, errBodiesFull):
			httpx.Error(w, r, errBodiesFull)
			return
		case errors.As(err, &ne) && ne.Timeout():
			// RFC 9110 §15.5.9: the server would not wait longer for the
			// request; the connection is closed, as 408 implies.
			httpx.JSON(w, http.StatusRequestTimeout, httpx.ErrorBody{Error: "RequestTimeout",
				Message: "the request body did not arrive within the read timeout"})
			return
		}
		// Any other read error (a body over 1 MiB, a client gone midway)
		// reaches the handler after the bytes that came, as it would have
		// reading the connection itself, so it answers as it always did.
		r.Body = &receivedBody{data: body, err: err}
		l.writeBy(rc)
		next.ServeHTTP(w, r)
	})
}

// writeBy sets the connection's write deadline for a request whose handling
// starts now: HMID_REQUEST_TIMEOUT plus writeGrace. net/http leaves the
// deadline of an earlier request on the connection in place, so every
// request sets its own, once; handle moves it for a route that may take
// longer, and stream clears it. Writers that cannot (tests' recorders) need
// not.
func (l *requestLimits) writeBy(rc *http.ResponseController) {
	_ = rc.SetWriteDeadline(time.Now().Add(l.request + writeGrace))
}

// unbounded clears the write deadline wrap set, for a route whose answer
// lasts as long as the client wants (routes.go, stream).
func (l *requestLimits) unbounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		next.ServeHTTP(w, r)
	})
}

// receive reads body until EOF or an error, growing its buffer as bytes
// arrive (hint is the announced Content-Length, -1 if none). held is the
// buffer capacity counted against the budget, to be given back by the caller.
// A nil error means the whole body was read; errBodiesFull that the budget
// ran out first.
func (l *requestLimits) receive(body io.Reader, hint int64) (data []byte, held int64, err error) {
	size := int64(initialBodyBuffer)
	if hint > 0 && hint < size {
		size = hint + 1 // room to see EOF without growing
	}
	for {
		if l.bodyHeld.Add(size-held) > l.bodyBudget {
			l.bodyHeld.Add(held - size)
			return data, held, errBodiesFull
		}
		held = size
		buf := make([]byte, len(data), size)
		copy(buf, data)
		data = buf
		for len(data) < cap(data) {
			n, err := body.Read(data[len(data):cap(data)])
			data = data[:len(data)+n]
			if err == io.EOF {
				return data, held, nil
			}
			if err != nil {
				return data, held, err
			}
		}
		// The body reader is an http.MaxBytesReader (httpx.Base), which
		// fails past httpx.MaxBodyBytes: the buffer need not outgrow that
		// by more than the byte that shows it.
		size = min(2*size, httpx.MaxBodyBytes+1)
		if int64(len(data)) >= size {
			return data, held, &http.MaxBytesError{Limit: httpx.MaxBodyBytes}
		}
	}
}

// receivedBody is a request body read ahead: its bytes, then the error
// that ended the reading (io.EOF when there was none).
type receivedBody struct {
	data []byte
	err  error
}

func (b *receivedBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// Close drops the bytes not read; the connection's body was consumed already.
func (b *receivedBody) Close() error {
	b.data = nil
	return nil
}

// handle returns the handling stage for a route whose handling may take
// timeout: the in-flight slot, the context deadline (timeout, or up to
// 100 ms more: package deadline) and the write deadline.
func (l *requestLimits) handle(timeout time.Duration) func(http.Handler) http.Handler {
	// One deadline timer per short window of requests, not one per request
	// (package deadline says why).
	bounds := deadline.New(timeout)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case l.slots <- struct{}{}:
				defer func() { <-l.slots }()
			default:
				httpx.Error(w, r, errBusy)
				return
			}
			if timeout != l.request {
				_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout + writeGrace))
			}
			ctx := bounds.Start(r.Context())
			defer ctx.End()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
