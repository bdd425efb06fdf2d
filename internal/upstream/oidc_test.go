package upstream

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"hmid/internal/clock/clocktest"
	"hmid/internal/upstream/upstreamtest"
)

// oidcEnv configures the generic provider slug, labelled "Acme SSO",
// against the fake o.
func oidcEnv(slug string, o *upstreamtest.OIDC) map[string]string {
	env := o.Env(slug)
	env[envPrefix(slug)+"NAME"] = "Acme SSO"
	return env
}

func TestOIDCSignIn(t *testing.T) {
	clk := clocktest.NewFake(time.Now())
	o := upstreamtest.NewOIDC(t, clk.Now)
	o.Set(func() {
		o.Claims = map[string]any{"email": "ada@acme.example", "email_verified": true, "name": "Ada Lovelace",
			"picture": "https://acme.example/ada.png", "preferred_username": "ada", "locale": "en"}
	})
	g := newRigWith(t, oidcEnv("acme", o), clk)
	p, _ := g.reg.Get("acme")
	if p.Name() != "Acme SSO" {
		t.Errorf("Name = %q", p.Name())
	}
	id, err := g.signIn(t, "acme")
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, id, Identity{Provider: "acme", Subject: "oidc-user-1", Email: "ada@acme.example", EmailVerified: true,
		Username: "ada", DisplayName: "Ada Lovelace", AvatarURL: "https://acme.example/ada.png"})
	if id.Raw["locale"] != "en" || id.Raw["nonce"] == nil {
		t.Errorf("Raw = %v, want the ID token's claims", id.Raw)
	}
}

// Google is the same code with Google's issuer; here the issuer points at
// the fake, and email_verified arrives as a string as some providers send it.
func TestGoogleSignInStringVerified(t *testing.T) {
	clk := clocktest.NewFake(time.Now())
	o := upstreamtest.NewOIDC(t, clk.Now)
	o.Set(func() { o.Claims = map[string]any{"email": "g@gmail.example", "email_verified": "true", "name": "G"} })
	g := newRigWith(t, o.Env("google"), clk)
	id, err := g.signIn(t, "google")
	if err != nil {
		t.Fatal(err)
	}
	if id.Provider != "google" || !id.EmailVerified || id.Email != "g@gmail.example" || id.DisplayName != "G" {
		t.Errorf("identity = %+v", id)
	}
}

// An ID token without an address: UserInfo supplies it, for the same subject only.
func TestOIDCUserInfoFallback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		info    map[string]any
		wantErr bool
	}{
		{"same subject", map[string]any{"sub": "oidc-user-1", "email": "ui@acme.example", "email_verified": false, "name": "From UserInfo"}, false},
		{"other subject", map[string]any{"sub": "someone-else", "email": "victim@acme.example", "email_verified": true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Now())
			o := upstreamtest.NewOIDC(t, clk.Now)
			o.Set(func() { o.Info = tc.info })
			g := newRigWith(t, oidcEnv("acme", o), clk)
			id, err := g.signIn(t, "acme")
			if tc.wantErr {
				if !isKind(err, ErrProvider) {
					t.Fatalf("err = %v, want ErrProvider", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Email != "ui@acme.example" || id.EmailVerified || id.DisplayName != "From UserInfo" {
				t.Errorf("identity = %+v", id)
			}
		})
	}
}

func TestOIDCRefusesBadIDTokens(t *testing.T) {
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		setup  func(o *upstreamtest.OIDC, g *rig) // runs under the fake's lock
		detail string
	}{
		{"nonce mismatch", func(o *upstreamtest.OIDC, _ *rig) { o.Tweak = func(c map[string]any) { c["nonce"] = "not-the-nonce" } }, "nonce"},
		{"no nonce", func(o *upstreamtest.OIDC, _ *rig) { o.Tweak = func(c map[string]any) { delete(c, "nonce") } }, "nonce"},
		{"wrong issuer", func(o *upstreamtest.OIDC, _ *rig) {
			o.Tweak = func(c map[string]any) { c["iss"] = "https://evil.example" }
		}, "another issuer"},
		{"wrong audience", func(o *upstreamtest.OIDC, _ *rig) { o.Tweak = func(c map[string]any) { c["aud"] = "other-client" } }, "another client"},
		{"expired", func(o *upstreamtest.OIDC, g *rig) {
			o.Tweak = func(c map[string]any) { c["exp"] = g.clk.Now().Add(-time.Minute).Unix() }
		}, "expired"},
		{"signed by another key", func(o *upstreamtest.OIDC, _ *rig) {
			o.Signer = func(p []byte) string { return upstreamtest.SignRS256(t, other, upstreamtest.KeyID, p) }
		}, "signature"},
		{"unsigned (alg none)", func(o *upstreamtest.OIDC, _ *rig) {
			o.Signer = func(p []byte) string {
				return "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + base64.RawURLEncoding.EncodeToString(p) + "."
			}
		}, "ID token"},
		{"no ID token", func(o *upstreamtest.OIDC, _ *rig) { o.Signer = func([]byte) string { return "" } }, "without an ID token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Now())
			o := upstreamtest.NewOIDC(t, clk.Now)
			g := newRigWith(t, oidcEnv("acme", o), clk)
			o.Set(func() {
				o.Claims = map[string]any{"email": "ada@acme.example", "email_verified": true}
				tc.setup(o, g)
			})
			id, err := g.signIn(t, "acme")
			if !isKind(err, ErrProvider) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("identity %+v, err = %v, want ErrProvider mentioning %q", id, err, tc.detail)
			}
		})
	}
}

// A discovery document naming another issuer is refused (Discovery §4.3),
// and discovery is retried once the provider is fixed.
func TestOIDCDiscovery(t *testing.T) {
	clk := clocktest.NewFake(time.Now())
	o := upstreamtest.NewOIDC(t, clk.Now)
	o.Set(func() { o.Issuer = "https://evil.example" })
	g := newRigWith(t, oidcEnv("acme", o), clk)
	p, _ := g.reg.Get("acme")
	_, err := p.AuthCodeURL(t.Context(), Params{State: "s", Verifier: "v", Nonce: "n"})
	if !isKind(err, ErrProvider) || !strings.Contains(err.Error(), "another issuer") {
		t.Fatalf("err = %v, want ErrProvider about the issuer", err)
	}
	o.Fail("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	if _, err := p.AuthCodeURL(t.Context(), Params{}); !isKind(err, ErrProvider) {
		t.Fatalf("err = %v, want ErrProvider", err)
	}
	o.Set(func() {
		o.Issuer = ""
		o.Claims = map[string]any{"email": "a@acme.example"}
	})
	o.Fail("/.well-known/openid-configuration", nil)
	if _, err := g.signIn(t, "acme"); err != nil {
		t.Fatalf("after the provider recovered: %v", err)
	}
}

func isKind(err, kind error) bool {
	var e *Error
	return errors.As(err, &e) && errors.Is(err, kind)
}
