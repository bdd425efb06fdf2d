package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limit is a GCRA limit (the generic cell rate algorithm, as
// github.com/go-redis/redis_rate implements it): Burst events may happen at
// once, and the allowance comes back continuously at Rate events per Period,
// one event every Period/Rate. There are no windows, so there is no boundary
// at which a burst before it and a burst after it add up: however the
// requests are timed, no interval of length T admits more than
// Burst + T·Rate/Period of them.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// PerPeriod is n events per period with a burst of n: a full allowance at
// once, refilled at one event every period/n.
func PerPeriod(n int, period time.Duration) Limit {
	return Limit{Rate: n, Period: period, Burst: n}
}

// interval is the emission interval: how long one event's allowance takes
// to come back.
func (l Limit) interval() time.Duration { return l.Period / time.Duration(l.Rate) }

func (l Limit) valid() error {
	if l.Rate < 1 || l.Burst < 1 || l.Period <= 0 || l.interval() <= 0 {
		return fmt.Errorf("cache: invalid rate limit %+v", l)
	}
	return nil
}

// Decision is the outcome of a rate-limit check, in the terms of the
// RateLimit-* and Retry-After headers.
type Decision struct {
	Allowed bool
	// Limit is the burst (GCRA) or the window's Max: how many events the
	// key may have at once.
	Limit int
	// Remaining is how many more events would be allowed right now.
	Remaining int
	// Reset is the time until the whole burst is available again.
	Reset time.Duration
	// RetryAfter is, when refused, the time until the event would be
	// allowed; zero when allowed.
	RetryAfter time.Duration
}

// Limiter is a rate limiter keyed by string: GCRA limits (AllowN, Refund)
// and sliding windows (WindowLimiter). MemoryLimiter is the in-process one
// (one instance); RedisLimiter is shared by every instance. Both decide the
// same sequence of events the same way.
type Limiter interface {
	WindowLimiter
	// AllowN takes n events from key's allowance under l, or refuses them
	// all and takes nothing.
	AllowN(ctx context.Context, key string, l Limit, n int) (Decision, error)
	// Refund gives back n events taken earlier by AllowN (for example an
	// attempt that turned out not to count); the allowance never exceeds
	// the burst. It reports the state after the refund.
	Refund(ctx context.Context, key string, l Limit, n int) (Decision, error)
}

// Allow takes one event from key's allowance under l.
func Allow(ctx context.Context, lim Limiter, key string, l Limit) (Decision, error) {
	return lim.AllowN(ctx, key, l, 1)
}

// gcra decides n events at now for a key whose theoretical arrival time
// (TAT) is tat (zero when the key is unknown). It returns the decision and
// the key's new TAT. The arithmetic is redis_rate's allowN script, so the
// two implementations agree.
func gcra(tat, now time.Time, l Limit, n int) (Decision, time.Time) {
	e := l.interval()
	if tat.Before(now) {
		tat = now
	}
	newTAT := tat.Add(e * time.Duration(n))
	diff := now.Sub(newTAT.Add(-e * time.Duration(l.Burst)))
	if diff < 0 {
		return Decision{Limit: l.Burst, Reset: tat.Sub(now), RetryAfter: -diff}, tat
	}
	return Decision{Allowed: true, Limit: l.Burst, Remaining: int(diff / e), Reset: newTAT.Sub(now)}, newTAT
}

// gcraRefund moves tat back by n emission intervals, never before now.
func gcraRefund(tat, now time.Time, l Limit, n int) (Decision, time.Time) {
	e := l.interval()
	newTAT := tat.Add(-e * time.Duration(n))
	if newTAT.Before(now) {
		newTAT = now
	}
	reset := newTAT.Sub(now)
	return Decision{Allowed: true, Limit: l.Burst, Remaining: int((e*time.Duration(l.Burst) - reset) / e), Reset: reset}, newTAT
}

// MemoryLimiter is the in-process Limiter. It reads the injected clock, so
// tests move time to let the allowance come back.
type MemoryLimiter struct {
	mu  sync.Mutex
	tat map[string]time.Time
	now func() time.Time
	ops int

	win    map[string]*memWindow // sliding logs (see AllowWindow)
	winOps int
}

var _ Limiter = (*MemoryLimiter)(nil)

// NewMemoryLimiter returns an in-process limiter reading time from now.
func NewMemoryLimiter(now func() time.Time) *MemoryLimiter {
	return &MemoryLimiter{tat: map[string]time.Time{}, now: now}
}

// AllowN takes n events from key's allowance, or none.
func (m *MemoryLimiter) AllowN(_ context.Context, key string, l Limit, n int) (Decision, error) {
	if err := l.valid(); err != nil {
		return Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	d, tat := gcra(m.tat[key], now, l, n)
	if d.Allowed {
		m.storeLocked(key, tat, now)
	}
	return d, nil
}

// Refund gives back n events of key.
func (m *MemoryLimiter) Refund(_ context.Context, key string, l Limit, n int) (Decision, error) {
	if err := l.valid(); err != nil {
		return Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	d, tat := gcraRefund(m.tat[key], now, l, n)
	m.storeLocked(key, tat, now)
	return d, nil
}

// storeLocked keeps a TAT only while it is in the future (a past TAT means
// a full allowance, the same as no entry), and every few thousand writes
// drops the entries that have run out, so the map stays bounded by the keys
// active within one period.
func (m *MemoryLimiter) storeLocked(key string, tat, now time.Time) {
	if tat.After(now) {
		m.tat[key] = tat
	} else {
		delete(m.tat, key)
	}
	sweep(m.tat, &m.ops, func(t time.Time) bool { return !t.After(now) })
}

// sweep deletes from m, on every few thousandth call counted in ops, the
// entries that are gone: the in-process maps stay bounded by the keys in
// use without a sweep on every write.
func sweep[K comparable, V any](m map[K]V, ops *int, gone func(V) bool) {
	*ops++
	if *ops%4096 != 0 {
		return
	}
	for k, v := range m {
		if gone(v) {
			delete(m, k)
		}
	}
}

// Quota is one limit applied to one key.
type Quota struct {
	Key   string
	Limit Limit
}

// Reservation is one attempt taken from several quotas before the work it
// guards (a password or code check) is done. Counting after the check lets
// every concurrent request pass the check before any of them is counted;
// reserving first means that, however many requests arrive at once, no more
// than the allowance get checked. Release gives the attempt back when it
// turns out not to count (a right password, a check that did not happen).
type Reservation struct {
	lim   Limiter
	taken []Quota
}

// Reserve takes one event from every quota, in order. When one refuses, the
// events already taken are given back and the refusing decision is returned
// with a nil Reservation. When all allow, the decision is the tightest of
// them (fewest remaining). An error of the store gives back what was taken.
func Reserve(ctx context.Context, lim Limiter, quotas ...Quota) (*Reservation, Decision, error) {
	r := &Reservation{lim: lim}
	var tight Decision
	for _, q := range quotas {
		d, err := lim.AllowN(ctx, q.Key, q.Limit, 1)
		if err == nil && !d.Allowed {
			_, err = r.Release(ctx)
			return nil, d, err
		}
		if err != nil {
			_, rerr := r.Release(ctx)
			return nil, Decision{}, errors.Join(err, rerr)
		}
		if len(r.taken) == 0 || tighter(d, tight) {
			tight = d
		}
		r.taken = append(r.taken, q)
	}
	return r, tight, nil
}

// Release gives the reserved events back (at most once) and reports the
// tightest state after it.
func (r *Reservation) Release(ctx context.Context) (Decision, error) {
	var (
		tight Decision
		have  bool
		errs  []error
	)
	for _, q := range r.taken {
		d, err := r.lim.Refund(ctx, q.Key, q.Limit, 1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !have || tighter(d, tight) {
			tight, have = d, true
		}
	}
	r.taken = nil
	return tight, errors.Join(errs...)
}

// tighter reports whether a leaves less room than b.
func tighter(a, b Decision) bool {
	return a.Remaining < b.Remaining || a.Remaining == b.Remaining && a.Reset > b.Reset
}
