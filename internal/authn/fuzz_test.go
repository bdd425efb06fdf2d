package authn

import (
	"strings"
	"testing"
)

// FuzzParseBearer checks that no Authorization header makes ParseBearer
// panic, and that an accepted token is non-empty, at most MaxBearerLen bytes and made
// only of b64token characters (RFC 6750 §2.1), so never holds a space.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{
		"", "Bearer", "Bearer ", "Bearer hm_st_abc", "bearer hm_abc", "BEARER  hm_abc  ", "Basic dXNlcjpwYXNz",
		"Bearer a b", "Bearer\thm_abc", "Bearer " + strings.Repeat("a", 513), "Bearer abc==", "Bearer ä", "Bearer\x00x",
		" Bearer x", "Bearer hm_st_x\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := ParseBearer(header)
		if !ok {
			if tok != "" {
				t.Fatalf("rejected %q but returned %q", header, tok)
			}
			return
		}
		if tok == "" || len(tok) > MaxBearerLen || strings.ContainsAny(tok, " \t\r\n\x00") {
			t.Fatalf("accepted %q as %q", header, tok)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || strings.IndexByte("-._~+/=", c) >= 0) {
				t.Fatalf("accepted %q with byte %q", tok, c)
			}
		}
		if !strings.Contains(header, tok) {
			t.Fatalf("token %q is not in %q", tok, header)
		}
	})
}
