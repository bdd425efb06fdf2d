package claims

import (
	"slices"
	"testing"
)

// scopeNames are the OpenID Connect scopes hmid knows (oauth.ScopeNames).
var scopeNames = []string{"openid", "profile", "email", "roles", "permissions", "offline_access"}

// FuzzClaimsRequest checks that the claims parameter (OpenID Connect Core
// §5.5) parses into members of claim specs or is refused, never panics, and
// that what it yields is safe to query.
func FuzzClaimsRequest(f *testing.F) {
	for _, s := range []string{`{"userinfo":{"name":{"essential":true}}}`, `{"id_token":{"acr":{"essential":true,"values":["2",1]},"sub":{"value":"u"}}}`,
		`{"id_token":null}`, `{"userinfo":[]}`, `[]`, `null`, `{`, `{"id_token":{"x":5}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cr, err := ParseRequest(s)
		if err != nil {
			if cr != nil {
				t.Fatalf("ParseRequest(%q) refused but returned %v", s, cr)
			}
			return
		}
		_ = cr.EssentialACR()
		_ = cr.SubValue()
		for _, sc := range cr.Scopes(nil, scopeNames) {
			if !slices.Contains(scopeNames, sc) || sc == "openid" {
				t.Fatalf("claims request %q implies scope %q", s, sc)
			}
		}
	})
}
