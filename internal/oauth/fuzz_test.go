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

// FuzzClaimsRequest checks that the claims parameter (OpenID Connect Core
// §5.5) parses into members of claim specs or is refused, never panics, and
// that what it yields is safe to query.
func FuzzClaimsRequest(f *testing.F) {
	for _, s := range []string{`{"userinfo":{"name":{"essential":true}}}`, `{"id_token":{"acr":{"essential":true,"values":["2",1]},"sub":{"value":"u"}}}`,
		`{"id_token":null}`, `{"userinfo":[]}`, `[]`, `null`, `{`, `{"id_token":{"x":5}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cr, err := parseClaimsRequest(s)
		if err != nil {
			if cr != nil {
				t.Fatalf("parseClaimsRequest(%q) refused but returned %v", s, cr)
			}
			return
		}
		_ = cr.essentialACR()
		_ = cr.subValue()
		for _, sc := range cr.claimScopes(nil, ScopeNames()) {
			if _, ok := knownScope(sc); !ok || sc == "openid" {
				t.Fatalf("claims request %q implies scope %q", s, sc)
			}
		}
	})
}
