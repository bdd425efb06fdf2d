package claims

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
)

// reference encodes v as httpx.JSON does, through encoding/json.
func reference(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWriteClaimsMatchesEncodingJSON holds the UserInfo encoder to the
// bytes encoding/json writes for the same claims as a map, for every kind
// of value, every claim slot and every character class JSON escapes.
func TestWriteClaimsMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr\bback\fform", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "äöü ß 日本 🙂", "bad \xff\xfe utf8 \xc3", "line\u2028para\u2029end", "\u00e9\u0301"}
	for i, str := range strs {
		var set Set
		for c := range numClaims {
			// Every slot takes every kind in turn, and some stay empty.
			switch (int(c) + i) % 6 {
			case 0:
				set.setString(c, str)
			case 1:
				set.setBool(c, i%2 == 0)
			case 2:
				set.setInt(c, int64(1_700_000_000+i))
			case 3:
				set.setList(c, []string{str, "admin"})
			case 4:
				set.setList(c, []string{})
			}
		}
		set.setList(claimRoleIDs, nil)
		w := httptest.NewRecorder()
		set.Write(w)
		if want := reference(t, set.ToMap()); !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("for %q:\n got %s\nwant %s", str, w.Body.Bytes(), want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// TestClaimNamesSorted holds the claim constants to the byte order of their
// names, which appendJSON relies on for sorted keys.
func TestClaimNamesSorted(t *testing.T) {
	if !slices.IsSorted(claimNames[:]) {
		t.Fatalf("claimNames are not sorted: %q", claimNames)
	}
	for c, name := range claimNames {
		if name == "" || scopeOf(name) == "" && claim(c) != claimSub {
			t.Errorf("claim %d (%q) has no scope that releases it", c, name)
		}
	}
}

// FuzzAppendJSONString compares the string encoder with encoding/json on
// arbitrary bytes.
func FuzzAppendJSONString(f *testing.F) {
	// The longer seeds put each byte the word test must catch at each
	// place of an eight-byte word.
	for _, s := range []string{"a", "\"\\", "\xff", "\u2028", "\x00", "abcdefgh\"ijklmno", "0123456789\x1fabcdef",
		"abcdefg\\hijklmnop", "abcd\x7fefgh", "https://example.com/ü/avatar.png", "user@example.org\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString(nil, s)
		want := bytes.TrimSuffix(reference(t, s), []byte("\n"))
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	})
}
