// Package deadline bounds many short-lived operations with one timer for
// each short window of start times, instead of one timer each.
//
// context.WithTimeout arms a runtime timer per call, and arming a timer that
// is due before the others of its processor wakes the network poller or
// another thread. At thousands of requests per second on two cores those
// wake-ups were the largest cost hmid's handling deadline added to a
// request (issue 19; docs/decisions.md, "A handling deadline without a
// timer per request"). A Bounds instead lets every operation that starts
// within the same Window share one context made by context.WithDeadline:
// one timer per window, however many operations start in it. Each
// operation's deadline is then between its timeout and its timeout plus
// Window after it starts, a precision the callers (a 30-second handling
// deadline, a 2-second dependency bound) do not need to be finer than.
//
// What a caller sees is the standard library's: Err is
// context.DeadlineExceeded once the deadline passes, for the context and
// everything derived from it; Deadline reports it; the parent's values and
// cancellation carry through.
package deadline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxWindow is the widest window of start times that share a deadline: the
// most a deadline can come later than asked.
const maxWindow = 100 * time.Millisecond

// Bounds gives contexts that end a fixed timeout after they start. The zero
// value is not usable; make one with New. It is safe for concurrent use.
type Bounds struct {
	timeout time.Duration
	window  time.Duration

	cur atomic.Pointer[slot] // the window now open, nil before the first
	mu  sync.Mutex           // held to open the next window
}

// slot is one window's shared deadline context.
type slot struct {
	until time.Time       // operations starting before this share ctx
	ctx   context.Context // ends at until plus the timeout
}

// New returns Bounds whose contexts end timeout after they start, or up to
// a twentieth of it (at most maxWindow) later.
func New(timeout time.Duration) *Bounds {
	return &Bounds{timeout: timeout, window: min(timeout/20, maxWindow)}
}

// Timeout is the least time a context from Start runs before its deadline.
func (b *Bounds) Timeout() time.Duration { return b.timeout }

// Start returns a context derived from parent that also ends at this
// window's deadline. The caller must call its End when done, as with the
// cancel function of context.WithTimeout.
func (b *Bounds) Start(parent context.Context) *Context {
	now := time.Now()
	s := b.cur.Load()
	if s == nil || !now.Before(s.until) {
		s = b.open(now)
	}
	shared, _ := s.ctx.Deadline()
	if own, ok := parent.Deadline(); ok && own.Before(shared) {
		// The parent ends sooner: its own deadline is the one that counts,
		// and a plain derived context keeps it.
		ctx, cancel := context.WithCancel(parent)
		return &Context{Context: ctx, values: context.Background(), cancel: cancel, stop: noStop}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	// The parent ending (a client gone) ends the context too. AfterFunc
	// registers with the parent's own cancellation, without a goroutine.
	stop := context.AfterFunc(parent, cancel)
	return &Context{Context: ctx, values: parent, cancel: cancel, stop: stop}
}

// open starts the window beginning at now, unless another caller did since
// the window in place was read.
func (b *Bounds) open(now time.Time) *slot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.cur.Load(); s != nil && now.Before(s.until) {
		return s
	}
	until := now.Add(b.window)
	ctx, cancel := context.WithDeadline(context.Background(), until.Add(b.timeout))
	// The context cancels itself when its deadline passes, which releases
	// its timer; nothing needs to end it sooner, since every context
	// derived from it is ended by its own End. So cancel is not called.
	_ = cancel
	s := &slot{until: until, ctx: ctx}
	b.cur.Store(s)
	return s
}

// noStop is the stop function of a context that registered nothing with its
// parent.
func noStop() bool { return false }

// Context is a context from Bounds.Start: the cancellation and deadline of
// its own derived context, and the values of the parent it was started
// from.
type Context struct {
	context.Context // derived from the window's deadline context
	values          context.Context
	cancel          context.CancelFunc
	stop            func() bool
}

// Value looks in the derived context first, which holds only the standard
// library's own cancellation key, so that contexts derived from this one
// attach to its cancellation directly, and then in the parent's values.
func (c *Context) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// End releases the context's resources and ends it, as a context's cancel
// function does.
func (c *Context) End() {
	c.stop()
	c.cancel()
}
