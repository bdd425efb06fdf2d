package upstream

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

func fromMap(env map[string]string) (*Registry, error) {
	return FromEnv(func(k string) string { return env[k] }, publicURL+"/")
}

func TestFromEnvNothingConfigured(t *testing.T) {
	reg, err := FromEnv(func(string) string { return "" }, "")
	if err != nil || len(reg.Providers()) != 0 {
		t.Fatalf("providers %v, err %v; want none", reg.Providers(), err)
	}
	if _, err := reg.Get("discord"); !isKind(err, ErrUnknownProvider) {
		t.Errorf("Get: %v, want ErrUnknownProvider", err)
	}
}

// A secret or URL without a client id does not offer the provider.
func TestFromEnvWithoutClientID(t *testing.T) {
	reg, err := fromMap(map[string]string{"HMID_LOGIN_DISCORD_CLIENT_SECRET": "s", "HMID_LOGIN_TWITCH_API_URL": "http://x"})
	if err != nil || len(reg.Providers()) != 0 {
		t.Fatalf("providers %v, err %v; want none", reg.Providers(), err)
	}
}

func TestFromEnvAll(t *testing.T) {
	env := map[string]string{"HMID_LOGIN_PROVIDERS": " Acme, my-corp ,"}
	for _, s := range []string{"DISCORD", "TWITCH", "GITHUB", "GOOGLE", "ACME", "MY_CORP"} {
		env["HMID_LOGIN_"+s+"_CLIENT_ID"] = strings.ToLower(s) + "-id"
		env["HMID_LOGIN_"+s+"_CLIENT_SECRET"] = "secret"
	}
	env["HMID_LOGIN_ACME_ISSUER"] = "https://sso.acme.example"
	env["HMID_LOGIN_ACME_NAME"] = "Acme Corp"
	env["HMID_LOGIN_MY_CORP_ISSUER"] = "https://login.corp.example/realms/x"
	env["HMID_LOGIN_DISCORD_API_URL"] = "http://127.0.0.1:9/api/"
	reg, err := fromMap(env)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range reg.Providers() {
		got = append(got, p.Slug()+"="+p.Name())
	}
	want := "discord=Discord twitch=Twitch github=GitHub google=Google acme=Acme Corp my-corp=my-corp"
	if strings.Join(got, " ") != want {
		t.Errorf("providers = %q, want %q", strings.Join(got, " "), want)
	}

	// The OAuth 2.0 providers' URLs: defaults, redirect URI, scopes, PKCE.
	for _, tc := range []struct{ slug, auth, scope string }{
		{"discord", "https://discord.com/oauth2/authorize", "identify email"},
		{"twitch", "https://id.twitch.tv/oauth2/authorize", "user:read:email"},
		{"github", "https://github.com/login/oauth/authorize", "read:user user:email"},
	} {
		p, err := reg.Get(tc.slug)
		if err != nil {
			t.Fatal(err)
		}
		to, err := p.AuthCodeURL(context.Background(), Params{State: "st", Verifier: strings.Repeat("v", 43), Nonce: "n"})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(to)
		q := u.Query()
		if base := u.Scheme + "://" + u.Host + u.Path; base != tc.auth {
			t.Errorf("%s: authorization endpoint %s, want %s", tc.slug, base, tc.auth)
		}
		if q.Get("redirect_uri") != publicURL+"/login/"+tc.slug+"/callback" || q.Get("client_id") != tc.slug+"-id" ||
			q.Get("scope") != tc.scope || q.Get("state") != "st" || q.Get("code_challenge_method") != "S256" ||
			q.Get("code_challenge") == "" || q.Get("response_type") != "code" {
			t.Errorf("%s: authorization request %v", tc.slug, q)
		}
	}
	if d, _ := reg.Get("discord"); d.(*discord).api != "http://127.0.0.1:9/api" {
		t.Errorf("discord API = %q", d.(*discord).api)
	}
	if g, _ := reg.Get("google"); g.(*openID).issuer != "https://accounts.google.com" {
		t.Errorf("google issuer = %q", g.(*openID).issuer)
	}
	if m, _ := reg.Get("my-corp"); m.(*openID).redirect != publicURL+"/login/my-corp/callback" {
		t.Errorf("my-corp redirect = %q", m.(*openID).redirect)
	}
}

func TestFromEnvErrors(t *testing.T) {
	ok := func(pre string) map[string]string {
		return map[string]string{pre + "CLIENT_ID": "id", pre + "CLIENT_SECRET": "s"}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	acme := func(kv ...string) map[string]string {
		return with(map[string]string{"HMID_LOGIN_PROVIDERS": "acme", "HMID_LOGIN_ACME_ISSUER": "https://sso.acme.example",
			"HMID_LOGIN_ACME_CLIENT_ID": "id", "HMID_LOGIN_ACME_CLIENT_SECRET": "s"}, kv...)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // in the message
	}{
		{"client id without secret", map[string]string{"HMID_LOGIN_GITHUB_CLIENT_ID": "id"}, "HMID_LOGIN_GITHUB_CLIENT_SECRET"},
		{"issuer on an OAuth provider", with(ok("HMID_LOGIN_DISCORD_"), "HMID_LOGIN_DISCORD_ISSUER", "https://x"), "HMID_LOGIN_DISCORD_ISSUER"},
		{"token URL on google", with(ok("HMID_LOGIN_GOOGLE_"), "HMID_LOGIN_GOOGLE_TOKEN_URL", "https://x"), "HMID_LOGIN_GOOGLE_TOKEN_URL"},
		{"relative API URL", with(ok("HMID_LOGIN_TWITCH_"), "HMID_LOGIN_TWITCH_API_URL", "/helix"), "HMID_LOGIN_TWITCH_API_URL"},
		{"ftp auth URL", with(ok("HMID_LOGIN_DISCORD_"), "HMID_LOGIN_DISCORD_AUTH_URL", "ftp://x/a"), "HMID_LOGIN_DISCORD_AUTH_URL"},
		{"bad google issuer", with(ok("HMID_LOGIN_GOOGLE_"), "HMID_LOGIN_GOOGLE_ISSUER", "accounts.google.com"), "HMID_LOGIN_GOOGLE_ISSUER"},
		{"bad generic name", acme("HMID_LOGIN_PROVIDERS", "acme,a_b"), `"a_b"`},
		{"generic name with a leading hyphen", acme("HMID_LOGIN_PROVIDERS", "-acme"), `"-acme"`},
		{"generic name too long", acme("HMID_LOGIN_PROVIDERS", strings.Repeat("a", 33)), "not a valid name"},
		{"generic name of a built-in", acme("HMID_LOGIN_PROVIDERS", "acme,github"), "built-in"},
		{"generic email", acme("HMID_LOGIN_PROVIDERS", "email"), "built-in"},
		{"generic listed twice", acme("HMID_LOGIN_PROVIDERS", "acme,ACME"), "twice"},
		{"generic without issuer", acme("HMID_LOGIN_ACME_ISSUER", ""), "HMID_LOGIN_ACME_ISSUER"},
		{"generic without client id", acme("HMID_LOGIN_ACME_CLIENT_ID", ""), "HMID_LOGIN_ACME_CLIENT_ID"},
		{"generic without secret", acme("HMID_LOGIN_ACME_CLIENT_SECRET", ""), "HMID_LOGIN_ACME_CLIENT_SECRET"},
		{"generic with an API URL", acme("HMID_LOGIN_ACME_API_URL", "https://x"), "HMID_LOGIN_ACME_API_URL"},
		{"generic issuer not a URL", acme("HMID_LOGIN_ACME_ISSUER", "sso.acme.example"), "HMID_LOGIN_ACME_ISSUER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fromMap(tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, err := FromEnv(func(k string) string { return ok("HMID_LOGIN_DISCORD_")[k] }, "not a url"); err == nil || !strings.Contains(err.Error(), "HMID_PUBLIC_URL") {
		t.Errorf("bad public URL: err = %v", err)
	}
}
