package cache

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Memory is the in-process Cache for a single instance.
type Memory struct {
	mu    sync.Mutex
	items map[string]memItem
	now   func() time.Time
	sets  int
}

type memItem struct {
	val []byte
	exp time.Time
}

var _ Cache = (*Memory)(nil)

// NewMemory returns an empty in-process cache reading time from now.
func NewMemory(now func() time.Time) *Memory {
	return &Memory{items: map[string]memItem{}, now: now}
}

// Name returns "memory".
func (m *Memory) Name() string { return "memory" }

// Ping always succeeds.
func (m *Memory) Ping(context.Context) error { return nil }

func (m *Memory) getLocked(key string, now time.Time) (memItem, bool) {
	it, ok := m.items[key]
	if !ok {
		return memItem{}, false
	}
	if it.expired(now) {
		delete(m.items, key)
		return memItem{}, false
	}
	return it, true
}

// sweepLocked drops expired items every few thousand writes so the map stays bounded.
func (m *Memory) sweepLocked(now time.Time) {
	sweep(m.items, &m.sets, func(it memItem) bool { return it.expired(now) })
}

// expired reports whether the item's time is up at now (a zero exp never is).
func (it memItem) expired(now time.Time) bool { return !it.exp.IsZero() && !now.Before(it.exp) }

// Get returns a copy of the value or ErrMiss.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.getLocked(key, m.now())
	if !ok {
		return nil, ErrMiss
	}
	return append([]byte(nil), it.val...), nil
}

// Set stores value for ttl (0 means no expiry).
func (m *Memory) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.items[key] = memItem{val: append([]byte(nil), value...), exp: expiry(now, ttl)}
	m.sweepLocked(now)
	return nil
}

// GetMany returns copies of the values of keys, nil for each miss.
func (m *Memory) GetMany(_ context.Context, keys []string) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if it, ok := m.getLocked(k, now); ok {
			out[i] = append([]byte(nil), it.val...)
		}
	}
	return out, nil
}

// SetMany stores every entry for ttl.
func (m *Memory) SetMany(_ context.Context, entries map[string][]byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, v := range entries {
		m.items[k] = memItem{val: append([]byte(nil), v...), exp: expiry(now, ttl)}
	}
	m.sweepLocked(now)
	return nil
}

// SetNX stores value only if key is absent.
func (m *Memory) SetNX(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if _, ok := m.getLocked(key, now); ok {
		return false, nil
	}
	m.items[key] = memItem{val: append([]byte(nil), value...), exp: expiry(now, ttl)}
	m.sweepLocked(now)
	return true, nil
}

// Delete removes keys.
func (m *Memory) Delete(_ context.Context, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.items, k)
	}
	return nil
}

// Incr adds delta to the counter at key.
func (m *Memory) Incr(_ context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	it, ok := m.getLocked(key, now)
	var n int64
	if ok {
		n, _ = strconv.ParseInt(string(it.val), 10, 64)
	} else {
		if delta == 0 {
			return 0, nil
		}
		it.exp = expiry(now, ttl)
	}
	n += delta
	it.val = strconv.AppendInt(it.val[:0], n, 10)
	m.items[key] = it
	m.sweepLocked(now)
	return n, nil
}

func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}
