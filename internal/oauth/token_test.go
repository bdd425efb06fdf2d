package oauth

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/oauth/store"
)

// TestCheckCode holds the binding of a code to its client, redirect URI and
// PKCE challenge (RFC 6749 §4.1.3, RFC 7636 §4.6), one rule a row.
func TestCheckCode(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	verifier := strings.Repeat("a", 43)
	base := store.RedeemedCode{Code: store.Code{ClientID: "c1", RedirectURI: "https://app.example/cb", Challenge: s256(verifier), Expires: now.Add(time.Minute)}, Usable: true}
	for _, tc := range []struct {
		name     string
		mod      func(*store.RedeemedCode)
		verifier string
		client   string
		redirect string
		want     string // "" for accepted
	}{
		{name: "bound", verifier: verifier},
		{name: "expired", mod: func(c *store.RedeemedCode) { c.Expires = now }, verifier: verifier, want: ErrInvalidGrant},
		{name: "another client", client: "c2", verifier: verifier, want: ErrInvalidGrant},
		{name: "another redirect URI", redirect: "https://app.example/other", verifier: verifier, want: ErrInvalidGrant},
		{name: "PKCE downgrade", mod: func(c *store.RedeemedCode) { c.Challenge = "" }, verifier: verifier, want: ErrInvalidGrant},
		{name: "no PKCE", mod: func(c *store.RedeemedCode) { c.Challenge = "" }},
		{name: "verifier missing", want: ErrInvalidGrant},
		{name: "verifier malformed", verifier: "short", want: ErrInvalidRequest},
		{name: "verifier wrong", verifier: strings.Repeat("b", 43), want: ErrInvalidGrant},
		{name: "user banned or deleted", mod: func(c *store.RedeemedCode) { c.Usable = false }, verifier: verifier, want: ErrInvalidGrant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := base
			if tc.mod != nil {
				tc.mod(&code)
			}
			tr := &tokenRequest{client: Client{ID: "c1"}, now: now,
				form: url.Values{"redirect_uri": {"https://app.example/cb"}, "code_verifier": {tc.verifier}}}
			if tc.client != "" {
				tr.client.ID = tc.client
			}
			if tc.redirect != "" {
				tr.form.Set("redirect_uri", tc.redirect)
			}
			oe := checkCode(code, tr)
			if (oe == nil) != (tc.want == "") || (oe != nil && oe.Code != tc.want) {
				t.Fatalf("checkCode = %v, want %q", oe, tc.want)
			}
		})
	}
}

// TestNarrowScope: a refresh's scope parameter may only narrow the scope
// granted (RFC 6749 §6).
func TestNarrowScope(t *testing.T) {
	granted := []string{"offline_access", "openid", "profile"}
	for _, tc := range []struct {
		form url.Values
		want []string // nil: invalid_scope
	}{
		{url.Values{}, granted},
		{url.Values{"scope": {"openid"}}, []string{"openid"}},
		{url.Values{"scope": {"profile  openid"}}, []string{"openid", "profile"}},
		{url.Values{"scope": {"openid email"}}, nil},
		{url.Values{"scope": {""}}, nil},
	} {
		got, oe := narrowScope(granted, tc.form)
		if tc.want == nil && (oe == nil || oe.Code != ErrInvalidScope) || tc.want != nil && (oe != nil || !slices.Equal(got, tc.want)) {
			t.Errorf("narrowScope(%v) = %v, %v; want %v", tc.form, got, oe, tc.want)
		}
	}
}

// TestAudience: a token request names resources the client may ask for
// (RFC 8707 §2), within what the authorization granted (§2.2); without one
// the token is for everything granted, or for the client.
func TestAudience(t *testing.T) {
	const api, files, other = "https://api.example/", "https://files.example/", "https://other.example/"
	c := Client{Resources: []string{api, files}}
	for _, tc := range []struct {
		name      string
		requested []string
		granted   []string
		want      []string
		refused   bool
	}{
		{name: "none asked, none granted"},
		{name: "none asked", granted: []string{api, files}, want: []string{api, files}},
		{name: "narrowed", requested: []string{api}, granted: []string{api, files}, want: []string{api}},
		{name: "not granted", requested: []string{files}, granted: []string{api}, refused: true},
		{name: "nothing granted: any allowed", requested: []string{files}, want: []string{files}},
		{name: "not allowed", requested: []string{other}, refused: true},
		{name: "not a resource", requested: []string{"not a uri"}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, oe := requestedResources(c, url.Values{"resource": tc.requested})
			var got []string
			if oe == nil {
				got, oe = grantedAudience(req, tc.granted)
			}
			if tc.refused {
				if oe == nil || oe.Code != ErrInvalidTarget {
					t.Fatalf("got %v, %v; want invalid_target", got, oe)
				}
				return
			}
			if oe != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, oe, tc.want)
			}
		})
	}
}

// TestReady: each grant asks for its own parameters before anything is
// read, and the client credentials grant for a confidential client.
func TestReady(t *testing.T) {
	for _, tc := range []struct {
		grant grantType
		form  url.Values
		ctype string
		want  string
	}{
		{&codeGrant{}, url.Values{"redirect_uri": {"x"}}, Confidential, ErrInvalidRequest},
		{&codeGrant{}, url.Values{"code": {"x"}}, Confidential, ErrInvalidRequest},
		{&codeGrant{}, url.Values{"code": {"x"}, "redirect_uri": {"x"}}, Public, ""},
		{&refreshGrant{}, url.Values{}, Confidential, ErrInvalidRequest},
		{&refreshGrant{}, url.Values{"refresh_token": {"x"}}, Public, ""},
		{&deviceGrant{}, url.Values{}, Public, ErrInvalidRequest},
		{&deviceGrant{}, url.Values{"device_code": {"hm_at_x"}}, Public, ErrInvalidGrant},
		{&clientGrant{}, url.Values{}, Public, ErrUnauthorizedClient},
		{&clientGrant{}, url.Values{}, Confidential, ""},
	} {
		oe := tc.grant.ready(&tokenRequest{form: tc.form, client: Client{ClientType: tc.ctype}})
		if (oe == nil) != (tc.want == "") || (oe != nil && oe.Code != tc.want) {
			t.Errorf("%T.ready(%v) for a %s client = %v, want %q", tc.grant, tc.form, tc.ctype, oe, tc.want)
		}
	}
}
