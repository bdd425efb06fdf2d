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
