package accounts

import (
	"strings"
	"testing"

	"hmid/internal/apperr"
)

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"a@example.test":            "a@example.test",
		" Mixed.Case@Example.TEST ": "mixed.case@example.test",
		"first+tag@sub.example.org": "first+tag@sub.example.org",
	} {
		got, err := normalizeEmail(in)
		if err != nil || got != want {
			t.Errorf("normalizeEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "plain", "@example.test", "a@", "a@b", "a@b.", "Name <a@b.test>", "a b@c.test",
		"a@b.test, c@d.test", strings.Repeat("x", 250) + "@b.test"} {
		if _, err := normalizeEmail(in); !apperr.Is(err, apperr.Validation) {
			t.Errorf("normalizeEmail(%q) = %v, want a validation error", in, err)
		}
	}
}

// FuzzNormalizeEmail checks that any input gives a validation error or a
// lower-case address that normalizes to itself.
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"a@example.test", "Name <a@b.test>", "\"q u\"@x.test", "a@[127.0.0.1]", "\x00@x.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := normalizeEmail(in)
		if err != nil {
			if !apperr.Is(err, apperr.Validation) {
				t.Fatalf("error of wrong kind: %v", err)
			}
			return
		}
		if out != strings.ToLower(out) || len(out) > 254 {
			t.Fatalf("normalizeEmail(%q) = %q", in, out)
		}
		if again, err := normalizeEmail(out); err != nil || again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
	})
}
