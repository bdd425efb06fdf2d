package db

import "testing"

type row struct{ p *int }

func (r row) Clone() row { return row{p: ClonePtr(r.p)} }

// TestRowCache: a row is served only at the version it was loaded at, and
// as a copy, so neither the caller of Put nor of Get can change the cache.
func TestRowCache(t *testing.T) {
	var c RowCache[row]
	if _, ok := c.Get("a", 0); ok {
		t.Fatal("empty cache served a row")
	}
	n := 1
	c.Put("a", row{p: &n}, 7)
	n = 2
	got, ok := c.Get("a", 7)
	if !ok || *got.p != 1 {
		t.Fatalf("Get at the version: %v %v", ok, got.p)
	}
	*got.p = 3
	if again, _ := c.Get("a", 7); *again.p != 1 {
		t.Fatal("a caller changed the cached row")
	}
	if _, ok := c.Get("a", 8); ok {
		t.Fatal("a row served after its tables changed")
	}
}
