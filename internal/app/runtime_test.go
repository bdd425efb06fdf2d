package app

import "testing"

func TestGCPercentCapsTheHeadroom(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{20 * mib, 400},  // small heap: 80 MiB of headroom at 400%
		{32 * mib, 400},  // exactly the cap
		{64 * mib, 200},  // 128 MiB of headroom
		{128 * mib, 100}, // Go's default from here on
		{1024 * mib, 100},
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}
