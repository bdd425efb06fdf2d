package oauth

import (
	"strings"
	"testing"
)

// FuzzVerifier checks the RFC 7636 §4.1 verifier rule against its definition.
func FuzzVerifier(f *testing.F) {
	f.Add(strings.Repeat("a", 43))
	f.Add(strings.Repeat("~", 129))
	f.Fuzz(func(t *testing.T, v string) {
		want := len(v) >= 43 && len(v) <= 128 && strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") == ""
		if validVerifier(v) != want {
			t.Fatalf("validVerifier(%q) = %v", v, !want)
		}
		if want && !validChallenge(s256(v)) {
			t.Fatalf("challenge of %q is not valid", v)
		}
	})
}

// FuzzScope checks that parsed scopes are sorted, unique and never empty strings.
func FuzzScope(f *testing.F) {
	f.Add("openid  profile openid")
	f.Fuzz(func(t *testing.T, s string) {
		out := parseScope(s)
		for i, x := range out {
			if x == "" || strings.Contains(x, " ") || (i > 0 && out[i-1] >= x) {
				t.Fatalf("parseScope(%q) = %q", s, out)
			}
		}
	})
}
