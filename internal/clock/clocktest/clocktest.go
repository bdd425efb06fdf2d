// Package clocktest provides a manually driven clock.Clock for tests.
//
// It lives apart from package clock so that only tests link it: the server
// reads the wall clock and has no use for a clock that can be moved.
package clocktest

import (
	"sync"
	"time"

	"hmid/internal/clock"
)

// Fake is a manually driven clock. Its zero value is not usable; build one
// with NewFake.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

var _ clock.Clock = (*Fake)(nil)

// NewFake returns a Fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t.UTC()} }

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t.UTC()
	f.mu.Unlock()
}
