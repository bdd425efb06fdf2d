package outbox

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestBackoffDoublesToTheCapWithinItsJitter(t *testing.T) {
	exact := Backoff{First: 5 * time.Second, Max: time.Minute}
	for attempts, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 4: 40 * time.Second, 5: time.Minute, 30: time.Minute} {
		if got := exact.Delay(attempts); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempts, got, want)
		}
	}
	jittered := Backoff{First: 10 * time.Second, Max: time.Hour, Jitter: 0.2}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := jittered.Delay(1)
		if d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("Delay(1) = %v, outside ±20 %% of 10s", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("jitter gave only %d distinct waits", len(seen))
	}
}

func TestPolicyExhausted(t *testing.T) {
	p := Policy{MaxAttempts: 3, GiveUpAfter: time.Hour}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if p.Exhausted(2, now.Add(-time.Minute), now) {
		t.Fatal("exhausted early")
	}
	if !p.Exhausted(3, now, now) || !p.Exhausted(1, now.Add(-time.Hour), now) {
		t.Fatal("not exhausted at the limits")
	}
}

func TestEachBoundsParallelismAndCounts(t *testing.T) {
	var running, peak atomic.Int32
	sent, err := Each(20, 3, func(i int) (bool, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		if i%5 == 0 {
			return false, errors.New("boom")
		}
		return true, nil
	})
	if sent != 16 || err == nil || peak.Load() > 3 {
		t.Fatalf("sent %d, err %v, peak %d", sent, err, peak.Load())
	}
}
