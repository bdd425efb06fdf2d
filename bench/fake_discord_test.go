package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/bench/loadgen"
)

const testRedirect = "http://127.0.0.1:1/login/discord/callback"

// testVerifier is RFC 7636 Appendix B's verifier.
const testVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorizeURL is a valid authorization request to f with fields changed by
// kv (an empty value removes the field).
func authorizeURL(f *fakeDiscord, kv ...string) string {
	sum := sha256.Sum256([]byte(testVerifier))
	q := url.Values{"client_id": {fakeDiscordClientID}, "redirect_uri": {testRedirect}, "response_type": {"code"},
		"scope": {"identify email"}, "state": {"st"}, "code_challenge_method": {"S256"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, benchUserParam: {"7"}}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return f.env("HMID_LOGIN_DISCORD_AUTH_URL") + "?" + q.Encode()
}

// code runs a valid authorization at f and returns its code.
func code(t *testing.T, f *fakeDiscord) string {
	t.Helper()
	resp, err := noRedirects.Get(authorizeURL(f))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), testRedirect+"?") || loc.Query().Get("state") != "st" {
		t.Fatalf("authorize: status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

// redeem posts a token request for c with the client in HTTP Basic and
// fields changed by kv, and returns the status and the decoded answer.
func redeem(t *testing.T, f *fakeDiscord, clientSecret, c string, kv ...string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {c}, "redirect_uri": {testRedirect}, "code_verifier": {testVerifier}}
	for i := 0; i < len(kv); i += 2 {
		form.Set(kv[i], kv[i+1])
	}
	req, _ := http.NewRequest(http.MethodPost, f.env("HMID_LOGIN_DISCORD_TOKEN_URL"), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(fakeDiscordClientID, clientSecret)
	return do(t, req)
}

// do sends req and returns the status and the decoded JSON answer.
func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
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

func TestFakeDiscordRefusesWhatDiscordRefuses(t *testing.T) {
	f, err := startFakeDiscord(testRedirect)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, kv := range [][]string{
		{"client_id", "42"}, {"redirect_uri", "http://127.0.0.1:1/elsewhere"}, {"response_type", "token"},
		{"state", ""}, {"code_challenge_method", "plain"}, {"code_challenge", ""}, {"scope", "email"}, {benchUserParam, ""},
	} {
		resp, err := noRedirects.Get(authorizeURL(f, kv...))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("authorize with %v: status %d, want 400", kv, resp.StatusCode)
		}
	}

	if st, body := redeem(t, f, "wrong", code(t, f)); st != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("wrong client secret: %d %v", st, body)
	}
	if st, body := redeem(t, f, fakeDiscordClientSecret, code(t, f), "code_verifier", strings.Repeat("a", 43)); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", st, body)
	}
	if st, body := redeem(t, f, fakeDiscordClientSecret, code(t, f), "redirect_uri", "http://127.0.0.1:1/elsewhere"); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("other redirect URI: %d %v", st, body)
	}
	c := code(t, f)
	st, tok := redeem(t, f, fakeDiscordClientSecret, c)
	if st != http.StatusOK || tok["token_type"] != "Bearer" || tok["scope"] != "identify email" {
		t.Fatalf("valid redemption: %d %v", st, tok)
	}
	if st, body := redeem(t, f, fakeDiscordClientSecret, c); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("second redemption of a code: %d %v", st, body)
	}

	me := func(tok string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, f.env("HMID_LOGIN_DISCORD_API_URL")+"/users/@me", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return do(t, req)
	}
	if st, u := me(tok["access_token"].(string)); st != http.StatusOK || u["id"] != "1200000000000000007" ||
		u["email"] != "discord7@bench.test" || u["verified"] != true || u["username"] != "bench7" {
		t.Errorf("users/@me: %d %v", st, u)
	}
	if st, _ := me("unknown"); st != http.StatusUnauthorized {
		t.Errorf("users/@me with an unknown token: status %d, want 401", st)
	}
}

func TestProviderLoginSignsInThroughTheServer(t *testing.T) {
	ctx := context.Background()
	srv, base, key, closeFn, err := startServer(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	e := &Env{Server: srv, URL: base, SystemKey: key, Client: loadgen.NewClient(2), Concurrency: 2}
	// The first sign-in creates the user, the second finds them again.
	for range 2 {
		if err := e.providerLogin(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := srv.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE email = 'discord1@bench.test'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("users with the account's address: %d, %v; want 1", n, err)
	}
}
