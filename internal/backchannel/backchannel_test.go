package backchannel

import (
	"testing"
	"time"
)

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	for attempts, want := range map[int]time.Duration{
		1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 9: 2560 * time.Second,
		10: time.Hour, MaxAttempts: time.Hour, 1000: time.Hour,
	} {
		if got := Backoff(attempts); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", attempts, got, want)
		}
	}
}
