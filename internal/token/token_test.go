package token

import (
	"strings"
	"testing"
)

func TestNewShapes(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range []string{PrefixAPIKey, PrefixSession, PrefixAuthCode, PrefixAccessToken, PrefixRefreshToken, PrefixClientSecret} {
		tok := New(p)
		if !strings.HasPrefix(tok, p) || len(tok) != len(p)+43 || seen[tok] {
			t.Fatalf("New(%q) = %q", p, tok)
		}
		seen[tok] = true
		if !HasShape(tok, p) {
			t.Fatalf("HasShape(%q)", tok)
		}
		// Only plain API keys have the API-key shape.
		if IsAPIKey(tok) != (p == PrefixAPIKey) {
			t.Fatalf("IsAPIKey(%q) = %v", tok, IsAPIKey(tok))
		}
	}
	if IsAPIKey("hm_") || IsAPIKey("hm_abc def") || HasShape("hm_st_", PrefixSession) {
		t.Fatal("degenerate tokens accepted")
	}
}

func TestHashAndPrefix(t *testing.T) {
	if Hash("a") == Hash("b") || len(Hash("a")) != 64 {
		t.Fatal("hash")
	}
	if !Equal("x", "x") || Equal("x", "y") {
		t.Fatal("equal")
	}
	if KeyPrefix("hm_0123456789abc") != "hm_0123456…" {
		t.Fatalf("prefix %q", KeyPrefix("hm_0123456789abc"))
	}
}

// TestNewUniform draws 860,000 characters and checks that each of the 62
// comes up within 5 % of its share: the rejection sampling in New must not
// favour the first characters, as a plain byte modulo 62 would (by 25 %).
func TestNewUniform(t *testing.T) {
	count := map[rune]int{}
	const tokens = 20_000
	for range tokens {
		for _, c := range strings.TrimPrefix(New(PrefixAccessToken), PrefixAccessToken) {
			count[c]++
		}
	}
	want := float64(tokens*randomLen) / float64(len(base62))
	for _, c := range base62 {
		if got := float64(count[c]); got < want*0.95 || got > want*1.05 {
			t.Errorf("character %q: %v times, want about %.0f", c, got, want)
		}
	}
	if len(count) != len(base62) {
		t.Errorf("%d distinct characters, want %d", len(count), len(base62))
	}
}
