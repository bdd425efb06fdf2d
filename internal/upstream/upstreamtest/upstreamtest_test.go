package upstreamtest_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"hmid/internal/upstream/upstreamtest"
)

const (
	verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 Appendix B
	redirect = "https://id.example.test/login/discord/callback"
)

// authURL is a valid authorization request to p, with fields changed by kv
// (an empty value removes the field).
func authURL(p *upstreamtest.Provider, kv ...string) string {
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {upstreamtest.ClientID}, "state": {"st"},
		"redirect_uri": {redirect}, "code_challenge_method": {"S256"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "nonce": {"n"}}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return p.URL() + "/authorize?" + q.Encode()
}

// redeem posts the token request for code with the client in the form body.
func redeem(t *testing.T, p *upstreamtest.Provider, code string) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(p.URL()+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier},
		"client_id": {upstreamtest.ClientID}, "client_secret": {upstreamtest.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestAuthorizeRefusesBadRequests(t *testing.T) {
	p := upstreamtest.New(t, "post")
	o := upstreamtest.NewOIDC(t, time.Now)
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"other client", authURL(p, "client_id", "other")},
		{"no redirect URI", authURL(p, "redirect_uri", "")},
		{"relative redirect URI", authURL(p, "redirect_uri", "/callback")},
		{"no state", authURL(p, "state", "")},
		{"implicit grant", authURL(p, "response_type", "token")},
		{"plain PKCE", authURL(p, "code_challenge_method", "plain")},
		{"no PKCE", authURL(p, "code_challenge", "")},
		{"OpenID Connect without nonce", authURL(o.Provider, "nonce", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", resp.StatusCode)
			}
		})
	}
}

// A code works once, and only with the client authentication the fake was
// made for.
func TestTokenEndpoint(t *testing.T) {
	p := upstreamtest.New(t, "post")
	cb := upstreamtest.Consent(t, authURL(p))
	if cb.Query().Get("state") != "st" || cb.Scheme+"://"+cb.Host+cb.Path != redirect {
		t.Fatalf("callback = %s", cb)
	}
	code := cb.Query().Get("code")
	status, body := redeem(t, p, code)
	if status != http.StatusOK || !strings.HasPrefix(body["access_token"].(string), "at-") {
		t.Fatalf("status %d, body %v", status, body)
	}
	if status, body := redeem(t, p, code); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("second use: status %d, body %v", status, body)
	}

	basic := upstreamtest.New(t, "basic")
	if status, body := redeem(t, basic, upstreamtest.Consent(t, authURL(basic)).Query().Get("code")); status != http.StatusBadRequest ||
		body["error"] != "invalid_client" {
		t.Errorf("credentials in the body of a basic client: status %d, body %v", status, body)
	}
}

func TestDeny(t *testing.T) {
	p := upstreamtest.New(t, "basic")
	p.Set(func() { p.Deny = true })
	cb := upstreamtest.Consent(t, authURL(p))
	if want := (url.Values{"error": {"access_denied"}, "state": {"st"}}); !reflect.DeepEqual(cb.Query(), want) {
		t.Errorf("callback query = %v, want %v", cb.Query(), want)
	}
}

// The user APIs answer only a token the fake issued.
func TestUserAPIsWantAToken(t *testing.T) {
	d, g, tw, o := upstreamtest.NewDiscord(t), upstreamtest.NewGitHub(t), upstreamtest.NewTwitch(t), upstreamtest.NewOIDC(t, time.Now)
	for _, u := range []string{d.URL() + "/api/users/@me", g.URL() + "/user", g.URL() + "/user/emails",
		tw.URL() + "/helix/users", o.URL() + "/userinfo"} {
		r, _ := http.NewRequest("GET", u, nil)
		r.Header.Set("Authorization", "Bearer at-guessed")
		r.Header.Set("Accept", "application/json")
		r.Header.Set("Client-Id", upstreamtest.ClientID)
		r.Header.Set("User-Agent", "test")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", u, resp.StatusCode)
		}
	}
}

func TestEnvAndMerge(t *testing.T) {
	d := upstreamtest.NewDiscord(t)
	o1, o2 := upstreamtest.NewOIDC(t, time.Now), upstreamtest.NewOIDC(t, time.Now)
	env := upstreamtest.Merge(d.Env("discord"), o1.Env("acme"), o2.Env("my-corp"), o2.Env("google"))
	want := map[string]string{
		"HMID_LOGIN_DISCORD_CLIENT_ID": upstreamtest.ClientID, "HMID_LOGIN_DISCORD_CLIENT_SECRET": upstreamtest.ClientSecret,
		"HMID_LOGIN_DISCORD_AUTH_URL": d.URL() + "/authorize", "HMID_LOGIN_DISCORD_TOKEN_URL": d.URL() + "/token",
		"HMID_LOGIN_DISCORD_API_URL": d.URL() + "/api",
		"HMID_LOGIN_PROVIDERS":       "acme,my-corp",
		"HMID_LOGIN_ACME_ISSUER":     o1.URL(), "HMID_LOGIN_ACME_CLIENT_ID": upstreamtest.ClientID,
		"HMID_LOGIN_ACME_CLIENT_SECRET": upstreamtest.ClientSecret,
		"HMID_LOGIN_MY_CORP_ISSUER":     o2.URL(), "HMID_LOGIN_MY_CORP_CLIENT_ID": upstreamtest.ClientID,
		"HMID_LOGIN_MY_CORP_CLIENT_SECRET": upstreamtest.ClientSecret,
		"HMID_LOGIN_GOOGLE_ISSUER":         o2.URL(), "HMID_LOGIN_GOOGLE_CLIENT_ID": upstreamtest.ClientID,
		"HMID_LOGIN_GOOGLE_CLIENT_SECRET": upstreamtest.ClientSecret,
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env =\n %v\nwant\n %v", env, want)
	}
}
