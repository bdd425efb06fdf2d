package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/web/signin"
)

// pageBrowser is an HTTP client with cookies, speaking to the pages as a
// browser without the script would, and posting what the script posts.
type pageBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPageBrowser(t *testing.T, e *apptest.Env) *pageBrowser {
	jar, _ := cookiejar.New(nil)
	return &pageBrowser{t: t, base: strings.Replace(e.URL, "127.0.0.1", "localhost", 1),
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *pageBrowser) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Origin", b.base)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

var hiddenRE = regexp.MustCompile(`name="(csrf_token|state)" value="([^"]*)"`)

// fields reads the hidden csrf_token and state of a page.
func fields(page string) url.Values {
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
		if v.Get(m[1]) == "" {
			v.Set(m[1], m[2])
		}
	}
	return v
}

// TestPasskeyPages drives the ceremonies through the page endpoints the
// script calls: the second factor after the password, and the passwordless
// sign-in; the session's amr says what happened.
func TestPasskeyPages(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		a := newAuthenticator(e)
		registerPasskey(t, e, u.ID, a)
		b := newPageBrowser(t, e)

		_, page := b.do("GET", "/login", nil)
		if !strings.Contains(page, `autocomplete="username webauthn"`) || !strings.Contains(page, `/assets/passkey.js`) || !strings.Contains(page, `id="passkey-login"`) {
			t.Fatalf("login page: %s", page)
		}
		f := fields(page)
		f.Set("email", u.Email)
		f.Set("password", "correct horse battery")
		status, page := b.do("POST", "/login", f)
		if status != 200 || !strings.Contains(page, `id="passkey-second"`) || strings.Contains(page, `id="code"`) {
			t.Fatalf("two-factor step (%d): %s", status, page)
		}
		f = fields(page)
		status, opts := b.do("POST", "/login/passkey/options", f)
		if status != 200 {
			t.Fatalf("options: %d %s", status, opts)
		}
		body, err := a.Get([]byte(opts))
		if err != nil {
			t.Fatal(err)
		}
		f.Set("credential", string(body))
		status, out := b.do("POST", "/login/passkey", f)
		if status != 200 || !strings.Contains(out, `"redirect"`) {
			t.Fatalf("finish: %d %s", status, out)
		}
		var amr string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT amr FROM sessions WHERE user_id = $1 AND provider = 'email' ORDER BY created_at DESC LIMIT 1`, u.ID).Scan(&amr); err != nil {
			t.Fatal(err)
		}
		var got []string
		_ = json.Unmarshal([]byte(amr), &got)
		if strings.Join(got, " ") != "pwd hwk user mfa" {
			t.Fatalf("amr after password and passkey = %s", amr)
		}
		// The state is spent.
		if status, _ := b.do("POST", "/login/passkey/options", f); status != 400 {
			t.Fatalf("options for a spent state: %d", status)
		}

		// Passwordless, in a fresh browser.
		b = newPageBrowser(t, e)
		_, page = b.do("GET", "/login", nil)
		f = fields(page)
		_, opts = b.do("POST", "/login/passkey/options", f)
		body, _ = a.Get([]byte(opts))
		f.Set("credential", string(body))
		if status, out := b.do("POST", "/login/passkey", f); status != 200 {
			t.Fatalf("passwordless: %d %s", status, out)
		}
		if status, _ := b.do("GET", "/account", nil); status != 200 {
			t.Fatalf("account after the passkey sign-in: %d", status)
		}
		// The session's ID tokens say two factors: acr 2, amr hwk user mfa.
		u0, _ := url.Parse(b.base)
		var sessionTok string
		for _, c := range b.c.Jar.Cookies(u0) {
			if c.Name == "hmid_session" {
				sessionTok = c.Value
			}
		}
		client := rsClient(t, e, u.Token, nil)
		// (The issuer is the localhost URL, so the claims are read as they
		// are; the OIDC tests verify the signature.)
		raw, _ := tokens(t, e, sessionTok, client, authzParams(client.ID))["id_token"].(string)
		parts := strings.Split(raw, ".")
		var claims map[string]any
		if len(parts) != 3 {
			t.Fatalf("id_token %q", raw)
		}
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		if claims["acr"] != "2" || strings.Join(toStrings(claims["amr"]), " ") != "hwk user mfa" {
			t.Fatalf("ID token of a passkey session: acr %v amr %v", claims["acr"], claims["amr"])
		}
		// Without the CSRF token: refused.
		if status, _ := b.do("POST", "/login/passkey/options", url.Values{}); status != 403 {
			t.Fatalf("options without CSRF: %d", status)
		}
	}, onLocalhost)
}

// TestPasskeyBeginThrottled: one address may begin a bounded number of
// passkey sign-ins per minute (each stores a challenge).
func TestPasskeyBeginThrottled(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		b := newPageBrowser(t, e)
		_, page := b.do("GET", "/login", nil)
		f := fields(page)
		for i := range signin.BeginsPerMinute {
			if status, body := b.do("POST", "/login/passkey/options", f); status != 200 {
				t.Fatalf("begin %d: %d %s", i, status, body)
			}
		}
		if status, _ := b.do("POST", "/login/passkey/options", f); status != 429 {
			t.Fatalf("begin past the allowance: %d", status)
		}
		e.Advance(t, time.Minute)
		if status, _ := b.do("POST", "/login/passkey/options", f); status != 200 {
			t.Fatalf("begin a minute later: %d", status)
		}
	}, onLocalhost)
}
