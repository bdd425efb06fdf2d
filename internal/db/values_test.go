package db

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestStringsScan: the fast path and encoding/json read every stored form
// alike, and whatever the fast path declines encoding/json still reads.
func TestStringsScan(t *testing.T) {
	for _, raw := range []string{`[]`, ` [ ] `, `["openid"]`, `["openid","profile","email"]`, `["a", "b"]`,
		"[\n\t\"a\" ,\r\n\"b\"\n]", `["caf\u00e9"]`, `["a\"b"]`, `["é"]`, `[""]`, `["a",""]`} {
		var got Strings
		if err := got.Scan(raw); err != nil {
			t.Fatalf("Scan(%s): %v", raw, err)
		}
		var want []string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Scan(%s) = %q, want %q", raw, got, want)
		}
	}
	for _, raw := range []string{`[`, `["a"`, `["a",]`, `[,"a"]`, `["a"]x`, `{}`, `["a" "b"]`, `[1]`, `null x`} {
		var got Strings
		if err := got.Scan(raw); err == nil {
			t.Errorf("Scan(%s) = %q, want an error", raw, got)
		}
	}
}

// FuzzPlainStrings holds the fast path to encoding/json: where it accepts
// an input, encoding/json reads the same strings from it.
func FuzzPlainStrings(f *testing.F) {
	for _, s := range []string{`[]`, `["openid","profile"]`, `["a", "b"]`, `["a\"b"]`, `[ "x" ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainStrings(raw)
		if !ok {
			return
		}
		var want []string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("plainStrings accepted %q, which encoding/json refuses: %v", raw, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("plainStrings(%q) = %q, encoding/json %q", raw, got, want)
		}
	})
}
