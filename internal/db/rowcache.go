package db

import "sync"

// Cloner is a row type that can copy itself deeply, so that a cached row
// and the copies handed out share nothing a caller could change.
type Cloner[T any] interface {
	Clone() T
}

// RowCache keeps rows read outside transactions on SQLite, each with the
// version of its tables (DB.Version) read before it was loaded: a row is
// served only while no write to those tables has ended since, so it is
// never older than the last committed change. SQLite's database belongs to
// one process, which sees every write; on PostgreSQL other instances write
// too, and rows are always read. The zero RowCache is ready to use.
type RowCache[T Cloner[T]] struct {
	mu sync.RWMutex
	m  map[string]cachedRow[T] // rows are never changed once stored
}

type cachedRow[T any] struct {
	row     T
	version uint64
}

// maxCachedRows bounds a RowCache; on overflow it starts again empty.
const maxCachedRows = 50_000

// Get returns a copy of the row cached under key if it was loaded at
// version.
func (c *RowCache[T]) Get(key string, version uint64) (T, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || e.version != version {
		var zero T
		return zero, false
	}
	return e.row.Clone(), true
}

// Put caches a copy of row under key, loaded at version.
func (c *RowCache[T]) Put(key string, row T, version uint64) {
	e := cachedRow[T]{row: row.Clone(), version: version}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRows {
		c.m = map[string]cachedRow[T]{}
	}
	c.m[key] = e
}

// ClonePtr returns a pointer to a copy of *p, nil for nil: the pointer
// fields of a Clone.
func ClonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
