package deadline

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

type key struct{}

func TestDeadlinePassesWithDeadlineExceeded(t *testing.T) {
	b := New(60 * time.Millisecond)
	start := time.Now()
	ctx := b.Start(context.WithValue(context.Background(), key{}, "v"))
	defer ctx.End()
	child, cancel := context.WithCancel(ctx)
	defer cancel()

	dl, ok := ctx.Deadline()
	if !ok || dl.Before(start.Add(b.timeout)) || dl.After(time.Now().Add(b.timeout+b.window)) {
		t.Fatalf("deadline %v, want between timeout and timeout+window (%v) from start", dl.Sub(start), b.window)
	}
	if ctx.Err() != nil {
		t.Fatalf("ended before its deadline: %v", ctx.Err())
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the derived context did not end at the deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("errors %v and %v, want context.DeadlineExceeded for both", ctx.Err(), child.Err())
	}
	if !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Fatalf("cause %v, want context.DeadlineExceeded", context.Cause(child))
	}
	if time.Since(start) < b.timeout {
		t.Fatalf("ended after %v, before the timeout %v", time.Since(start), b.timeout)
	}
}

func TestParentValuesAndCancellationCarryThrough(t *testing.T) {
	b := New(time.Minute)
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx := b.Start(parent)
	defer ctx.End()
	type other struct{}
	child := context.WithValue(ctx, other{}, "w")
	if child.Value(key{}) != "v" || child.Value(other{}) != "w" || ctx.Value(other{}) != nil {
		t.Fatalf("values: parent's %v, own %v, own seen from below %v", child.Value(key{}), child.Value(other{}), ctx.Value(other{}))
	}
	cancelParent()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's end did not reach the context")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", ctx.Err())
	}
}

func TestEndCancels(t *testing.T) {
	b := New(time.Minute)
	ctx := b.Start(context.Background())
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx.End()
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("errors %v and %v after End, want context.Canceled", ctx.Err(), child.Err())
	}
	ctx.End() // a second End, as with a cancel function, does nothing
}

func TestSoonerParentDeadlineWins(t *testing.T) {
	b := New(time.Minute)
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), 20*time.Millisecond)
	defer cancel()
	want, _ := parent.Deadline()
	ctx := b.Start(parent)
	defer ctx.End()
	if dl, _ := ctx.Deadline(); !dl.Equal(want) || ctx.Value(key{}) != "v" {
		t.Fatalf("deadline %v, value %v; want the parent's %v and its value", dl, ctx.Value(key{}), want)
	}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", ctx.Err())
	}
}

// TestDerivedContextsNeedNoGoroutine guards the Value lookup order: a
// context derived from one of ours must find the standard library's
// cancellation in it and register there, not start a goroutine to watch it,
// which it does when it cannot.
func TestDerivedContextsNeedNoGoroutine(t *testing.T) {
	b := New(time.Minute)
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	ctx := b.Start(parent)
	defer ctx.End()
	before := runtime.NumGoroutine()
	cancels := make([]context.CancelFunc, 0, 200)
	for range 200 {
		_, cancel := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, cancel)
	}
	if after := runtime.NumGoroutine(); after > before+10 {
		t.Fatalf("%d goroutines after deriving 200 contexts, %d before", after, before)
	}
	for _, c := range cancels {
		c()
	}
}

func TestOneWindowSharesOneDeadline(t *testing.T) {
	b := New(time.Hour) // a window of maxWindow
	first := b.Start(context.Background())
	defer first.End()
	s := b.cur.Load()
	second := b.Start(context.Background())
	defer second.End()
	if b.cur.Load() != s && time.Since(s.until.Add(-b.window)) < b.window/2 {
		t.Fatal("two starts within half a window opened two windows")
	}
	d1, _ := first.Deadline()
	d2, _ := second.Deadline()
	if b.cur.Load() == s && !d1.Equal(d2) {
		t.Fatalf("deadlines %v and %v in one window", d1, d2)
	}
	time.Sleep(b.window)
	third := b.Start(context.Background())
	defer third.End()
	if b.cur.Load() == s {
		t.Fatal("a start after the window reused it")
	}
	if d3, _ := third.Deadline(); !d3.After(d1) {
		t.Fatalf("the next window's deadline %v is not after %v", d3, d1)
	}
}

func TestConcurrentStarts(t *testing.T) {
	b := New(200 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				ctx := b.Start(context.Background())
				if ctx.Err() != nil {
					t.Error("a new context had ended")
				}
				ctx.End()
			}
		})
	}
	wg.Wait()
}

// BenchmarkStart compares a Bounds context with context.WithTimeout, the
// per-request timer it replaces.
func BenchmarkStart(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("Bounds", func(b *testing.B) {
		bounds := New(30 * time.Second)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bounds.Start(parent).End()
			}
		})
	})
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, c := context.WithTimeout(parent, 30*time.Second)
				c()
			}
		})
	})
}
