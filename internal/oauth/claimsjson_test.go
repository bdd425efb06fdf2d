package oauth

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
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
// bytes encoding/json writes, for every kind of value and every character
// class JSON escapes.
func TestWriteClaimsMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr\bback\fform", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "äöü ß 日本 🙂", "bad \xff\xfe utf8 \xc3", "line\u2028para\u2029end", "\u00e9\u0301"}
	for _, s := range strs {
		claims := map[string]any{
			"sub": "u1", "name": s, "s" + s: true, "updated_at": int64(1_700_000_000), "n": 42,
			"roles": []string{s, "admin"}, "empty_roles": []string{}, "nil_roles": []string(nil),
			"address":        map[string]any{"formatted": s, "zip": 5},
			"email_verified": false, "nothing": nil, "f": 1.5,
		}
		w := httptest.NewRecorder()
		writeClaims(w, claims)
		if want := reference(t, claims); !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("for %q:\n got %s\nwant %s", s, w.Body.Bytes(), want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

// FuzzAppendJSONString compares the string encoder with encoding/json on
// arbitrary bytes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"a", "\"\\", "\xff", "\u2028", "\x00"} {
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
