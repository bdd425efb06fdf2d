package app_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"hmid/internal/apptest"
	"hmid/internal/backchannel"
	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// fakeRP is a relying party's back-channel logout endpoint: it records the
// logout tokens it is sent and answers with the statuses queued in fail
// (then 200).
type fakeRP struct {
	srv  *httptest.Server
	mu   sync.Mutex
	fail []int
	got  []string
	seen chan string
}

func newFakeRP(t *testing.T) *fakeRP {
	rp := &fakeRP{seen: make(chan string, 64)}
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/bcl" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		tok := r.PostFormValue("logout_token")
		rp.mu.Lock()
		rp.got = append(rp.got, tok)
		status := http.StatusOK
		if len(rp.fail) > 0 {
			status, rp.fail = rp.fail[0], rp.fail[1:]
		}
		rp.mu.Unlock()
		w.WriteHeader(status)
		if status == http.StatusOK {
			rp.seen <- tok
		}
	}))
	t.Cleanup(rp.srv.Close)
	return rp
}

// received returns every logout token posted so far, answered or not.
func (rp *fakeRP) received() []string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]string(nil), rp.got...)
}

// await runs delivery passes on e until the RP accepted a logout token for
// the session of idToken (tokens for other sessions are skipped).
func (rp *fakeRP) await(t *testing.T, e *apptest.Env, idToken string) string {
	t.Helper()
	want := lgClaims(t, e, idToken)["sid"]
	deadline := time.After(20 * time.Second)
	for {
		if _, err := e.Server.Backchannel.RunOnce(context.Background()); err != nil {
			t.Logf("pass: %v", err)
		}
		select {
		case tok := <-rp.seen:
			if lgClaims(t, e, tok)["sid"] == want {
				return tok
			}
		case <-deadline:
			t.Fatalf("no logout token delivered; received %d", len(rp.received()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lgClient is a client registered for logout: RS256 ID tokens, a
// post-logout redirect URI, and the fake RP's back-channel URI when given.
type lgClient struct {
	testClient
	redirect, postLogout string
}

func mkLogoutClient(t *testing.T, e *apptest.Env, tok string, rp *fakeRP) lgClient {
	t.Helper()
	base := "https://rp.example"
	if rp != nil {
		base = rp.srv.URL
	}
	c := lgClient{redirect: base + "/cb", postLogout: base + "/logged-out"}
	body := map[string]any{"redirect_uris": []string{c.redirect}, "id_token_signed_response_alg": "RS256",
		"post_logout_redirect_uris": []string{c.postLogout}}
	if rp != nil {
		body["backchannel_logout_uri"] = base + "/bcl"
		body["backchannel_logout_session_required"] = true
	}
	c.testClient = mkClient(t, e, tok, body)
	return c
}

// lgLogin runs the code flow for c in the session of userTok and returns the ID token.
func lgLogin(t *testing.T, e *apptest.Env, userTok string, c lgClient) string {
	t.Helper()
	q := authzParams(c.ID, "redirect_uri", c.redirect, "scope", "openid profile")
	code := getCode(t, e, userTok, q)
	r := exchange(t, e, c.testClient, code, "redirect_uri", c.redirect)
	if r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id_token"].(string)
}

// lgClaims returns the claims of a JWT verified with hmid's published keys.
func lgClaims(t *testing.T, e *apptest.Env, raw string) map[string]any {
	t.Helper()
	ks := oidc.NewRemoteKeySet(context.Background(), e.URL+"/v1/oauth/jwks")
	if _, err := ks.VerifySignature(context.Background(), raw); err != nil {
		t.Fatalf("signature: %v", err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := tok.UnsafeClaimsWithoutVerification(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkLogoutToken asserts a logout token per Back-Channel Logout 1.0 §2.4
// for client c naming the session of idToken.
func checkLogoutToken(t *testing.T, e *apptest.Env, raw string, c lgClient, idToken string) {
	t.Helper()
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if typ, _ := tok.Headers[0].ExtraHeaders["typ"].(string); typ != "logout+jwt" {
		t.Fatalf("typ %q, want logout+jwt", typ)
	}
	lt, it := lgClaims(t, e, raw), lgClaims(t, e, idToken)
	now := float64(e.Clock.Now().Unix())
	ev, _ := lt["events"].(map[string]any)
	if _, ok := ev["http://schemas.openid.net/event/backchannel-logout"]; !ok || len(ev) != 1 {
		t.Fatalf("events %v", lt["events"])
	}
	if lt["iss"] != e.URL || lt["aud"] != c.ID || lt["sub"] != it["sub"] || lt["sid"] != it["sid"] || lt["sid"] == nil ||
		lt["jti"] == "" || lt["iat"].(float64) > now+1 || lt["exp"].(float64) <= now {
		t.Fatalf("logout token claims %v, ID token %v", lt, it)
	}
	if _, ok := lt["nonce"]; ok {
		t.Fatal("a logout token must not carry nonce (§2.4)")
	}
}

// endSession requests the end-session endpoint with the browser cookie of userTok ("" for none).
func endSession(t *testing.T, e *apptest.Env, method, userTok string, q url.Values, extraCookies ...*http.Cookie) *apptest.Resp {
	t.Helper()
	hdr := map[string]string{"Accept": "text/html"}
	cookies := []string{}
	if userTok != "" {
		cookies = append(cookies, "hmid_session="+userTok)
	}
	for _, c := range extraCookies {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	if len(cookies) > 0 {
		hdr["Cookie"] = strings.Join(cookies, "; ")
	}
	if method == "GET" {
		return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/logout?" + q.Encode(), Header: hdr})
	}
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/logout", Body: q, Header: hdr})
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// confirmEndSession submits the confirmation page r (answer to a request in
// the browser of userTok) and returns the answer.
func confirmEndSession(t *testing.T, e *apptest.Env, userTok string, r *apptest.Resp) *apptest.Resp {
	t.Helper()
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "Log out of hmid?") {
		t.Fatalf("want the confirmation page, got %d %s", r.Status, r.Body)
	}
	form := url.Values{"hmid_confirm": {"logout"}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(r.Body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	var csrf *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "hmid_csrf" {
			csrf = c
		}
	}
	if csrf == nil || form.Get("csrf_token") == "" {
		t.Fatalf("no CSRF cookie or token on the confirmation page")
	}
	return endSession(t, e, "POST", userTok, form, csrf)
}

func sessionRevoked(t *testing.T, e *apptest.Env, sessionID string) bool {
	t.Helper()
	var revoked db.NullTime
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT revoked_at FROM sessions WHERE id = $1`, sessionID).Scan(&revoked); err != nil {
		t.Fatal(err)
	}
	return revoked.Valid
}

func TestRPInitiatedLogout(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkLogoutClient(t, e, u.Token, nil)

		t.Run("discovery", func(t *testing.T) {
			d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
			if d["end_session_endpoint"] != e.URL+"/v1/oauth/logout" || d["backchannel_logout_supported"] != true ||
				d["backchannel_logout_session_supported"] != true || d["frontchannel_logout_supported"] != false ||
				!strings.Contains(strings.Join(toStrings(d["claims_supported"]), " "), "sid") {
				t.Fatalf("discovery %v", d)
			}
		})

		t.Run("valid hint redirects with state and ends the session", func(t *testing.T) {
			tok, sid := e.NewSession(t, u.ID)
			idt := lgLogin(t, e, tok, c)
			r := endSession(t, e, "GET", tok, url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {c.postLogout}, "state": {"s t&8"}})
			if r.Status != http.StatusSeeOther || r.Header.Get("Location") != c.postLogout+"?state=s+t%268" {
				t.Fatalf("got %d Location %q", r.Status, r.Header.Get("Location"))
			}
			if !sessionRevoked(t, e, sid) {
				t.Fatal("session still active")
			}
			e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusUnauthorized)
		})

		t.Run("POST form of the request", func(t *testing.T) {
			tok, sid := e.NewSession(t, u.ID)
			idt := lgLogin(t, e, tok, c)
			r := endSession(t, e, "POST", tok, url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {c.postLogout}, "client_id": {c.ID}})
			if r.Status != http.StatusSeeOther || r.Header.Get("Location") != c.postLogout || !sessionRevoked(t, e, sid) {
				t.Fatalf("got %d %q", r.Status, r.Header.Get("Location"))
			}
		})

		t.Run("missing hint asks first", func(t *testing.T) {
			tok, sid := e.NewSession(t, u.ID)
			r := endSession(t, e, "GET", tok, url.Values{"client_id": {c.ID}, "post_logout_redirect_uri": {c.postLogout}, "state": {"x"}})
			if sessionRevoked(t, e, sid) {
				t.Fatal("logged out without confirmation")
			}
			if csp := r.Header.Get("Content-Security-Policy"); csp == "" || strings.Contains(csp, "unsafe-inline") {
				t.Fatalf("CSP %q", csp)
			}
			// A confirmation without the CSRF token is refused.
			bad := endSession(t, e, "POST", tok, url.Values{"client_id": {c.ID}, "hmid_confirm": {"logout"}, "csrf_token": {"forged"}})
			if bad.Status != http.StatusForbidden || sessionRevoked(t, e, sid) {
				t.Fatalf("forged confirmation: %d", bad.Status)
			}
			done := confirmEndSession(t, e, tok, r)
			if done.Status != http.StatusSeeOther || done.Header.Get("Location") != c.postLogout+"?state=x" || !sessionRevoked(t, e, sid) {
				t.Fatalf("after confirmation: %d %q", done.Status, done.Header.Get("Location"))
			}
		})

		t.Run("German confirmation by ui_locales", func(t *testing.T) {
			tok, _ := e.NewSession(t, u.ID)
			r := endSession(t, e, "GET", tok, url.Values{"ui_locales": {"de-DE en"}})
			if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "Von hmid abmelden?") {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})

		t.Run("hint of an ended session asks first", func(t *testing.T) {
			tok, _ := e.NewSession(t, u.ID)
			idt := lgLogin(t, e, tok, c)
			tok2, sid2 := e.NewSession(t, u.ID)
			r := endSession(t, e, "GET", tok2, url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {c.postLogout}})
			if sessionRevoked(t, e, sid2) {
				t.Fatal("a hint of another session logged this one out unasked")
			}
			done := confirmEndSession(t, e, tok2, r)
			if done.Status != http.StatusSeeOther || !sessionRevoked(t, e, sid2) {
				t.Fatalf("after confirmation: %d", done.Status)
			}
		})

		t.Run("bad requests get an error page and no redirect", func(t *testing.T) {
			tok, sid := e.NewSession(t, u.ID)
			idt := lgLogin(t, e, tok, c)
			other := mkClient(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "RS256", "post_logout_redirect_uris": []string{"https://other.example/out"}})
			parts := strings.Split(idt, ".")
			forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
			for name, q := range map[string]url.Values{
				"unregistered uri":   {"id_token_hint": {idt}, "post_logout_redirect_uri": {"https://evil.example/x"}},
				"query added to uri": {"id_token_hint": {idt}, "post_logout_redirect_uri": {c.postLogout + "?x=1"}},
				"other client's uri": {"client_id": {other.ID}, "post_logout_redirect_uri": {c.postLogout}},
				"forged hint":        {"id_token_hint": {forged}, "post_logout_redirect_uri": {c.postLogout}},
				"malformed hint":     {"id_token_hint": {"not-a-jwt"}, "post_logout_redirect_uri": {c.postLogout}},
				"hint for another":   {"id_token_hint": {idt}, "client_id": {other.ID}},
				"uri without client": {"post_logout_redirect_uri": {c.postLogout}},
				"unknown client":     {"client_id": {"00000000-0000-0000-0000-000000000000"}},
			} {
				r := endSession(t, e, "GET", tok, q)
				if r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
					t.Errorf("%s: got %d Location %q", name, r.Status, r.Header.Get("Location"))
				}
			}
			if sessionRevoked(t, e, sid) {
				t.Fatal("a bad request logged out")
			}
		})

		t.Run("client registration", func(t *testing.T) {
			for name, body := range map[string]map[string]any{
				"relative post-logout uri": {"redirect_uris": []string{cb}, "post_logout_redirect_uris": []string{"/x"}},
				"post-logout fragment":     {"redirect_uris": []string{cb}, "post_logout_redirect_uris": []string{"https://app.example/x#f"}},
				"bcl cloud metadata":       {"redirect_uris": []string{cb}, "id_token_signed_response_alg": "RS256", "backchannel_logout_uri": "http://169.254.169.254/latest/meta-data"},
				"bcl with HS256":           {"redirect_uris": []string{cb}, "backchannel_logout_uri": "https://app.example/bcl"},
				"bcl not http":             {"redirect_uris": []string{cb}, "id_token_signed_response_alg": "RS256", "backchannel_logout_uri": "ftp://app.example/bcl"},
			} {
				body["name"] = "x"
				if r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients", Token: u.Token, Body: body}); r.Status != http.StatusBadRequest {
					t.Errorf("%s: %d %s", name, r.Status, r.Body)
				}
			}
			got := e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, map[string]any{"post_logout_redirect_uris": []string{"https://rp.example/a", "https://rp.example/b"}}, http.StatusOK).JSON()["data"].(map[string]any)
			if len(toStrings(got["post_logout_redirect_uris"])) != 2 || got["backchannel_logout_uri"] != nil {
				t.Fatalf("updated client %v", got)
			}
		})
	})
}

func TestBackchannelLogout(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true})
		rp := newFakeRP(t)
		c := mkLogoutClient(t, e, admin.Token, rp)

		for _, tc := range []struct {
			name string
			end  func(t *testing.T, userID, tok, sessionID string)
		}{
			{"logout", func(t *testing.T, _, tok, _ string) {
				e.Call(t, "POST", "/v1/auth/logout", tok, nil, http.StatusNoContent)
			}},
			{"session revoked", func(t *testing.T, userID, _, sessionID string) {
				other, _ := e.NewSession(t, userID)
				e.Call(t, "DELETE", "/v1/users/me/sessions/"+sessionID, other, nil, http.StatusOK)
			}},
			{"other sessions revoked", func(t *testing.T, userID, _, _ string) {
				other, _ := e.NewSession(t, userID)
				e.Call(t, "DELETE", "/v1/users/me/sessions", other, nil, http.StatusOK)
			}},
			{"user banned", func(t *testing.T, userID, _, _ string) {
				e.Call(t, "POST", "/v1/users/"+userID+"/ban", admin.Token, map[string]any{"reason": "spam"}, http.StatusCreated)
			}},
			{"password changed", func(t *testing.T, userID, _, _ string) {
				other, _ := e.NewSession(t, userID)
				e.Call(t, "POST", "/v1/users/me/password", other, map[string]any{"current_password": "old-password-1", "new_password": "new-password-2"}, http.StatusOK)
			}},
			{"account deleted", func(t *testing.T, userID, _, _ string) {
				e.Call(t, "POST", "/v1/admin/users/"+userID+"/force-delete", admin.Token, map[string]any{"reason": "test"}, http.StatusOK)
			}},
			{"rp-initiated logout", func(t *testing.T, _, tok, _ string) {
				r := endSession(t, e, "GET", tok, url.Values{"client_id": {c.ID}})
				if r := confirmEndSession(t, e, tok, r); r.Status != http.StatusOK {
					t.Fatalf("confirmation: %d", r.Status)
				}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				u := e.NewUser(t, apptest.UserSpec{Password: "old-password-1"})
				tok, sid := e.NewSession(t, u.ID)
				idt := lgLogin(t, e, tok, c)
				tc.end(t, u.ID, tok, sid)
				checkLogoutToken(t, e, rp.await(t, e, idt), c, idt)
			})
		}

		t.Run("retry after a failed delivery", func(t *testing.T) {
			u := e.NewUser(t, apptest.UserSpec{})
			idt := lgLogin(t, e, u.Token, c)
			rp.mu.Lock()
			rp.fail = []int{http.StatusInternalServerError}
			before := len(rp.got)
			rp.mu.Unlock()
			e.Call(t, "POST", "/v1/auth/logout", u.Token, nil, http.StatusNoContent)
			for len(rp.received()) == before {
				if _, err := e.Server.Backchannel.RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			e.Clock.Advance(backchannel.FirstRetry)
			tok := rp.await(t, e, idt)
			checkLogoutToken(t, e, tok, c, idt)
			got := rp.received()[before:]
			if len(got) != 2 || lgClaims(t, e, got[0])["jti"] != lgClaims(t, e, got[1])["jti"] {
				t.Fatalf("want one failed and one retried delivery of the same jti, got %d", len(got))
			}
		})
	}, apptest.AllowLoopbackOutbound)
}

// TestBackchannelLogoutSurvivesRestart: a logout token whose delivery failed
// stays in the outbox and is sent by the next server on the same database.
func TestBackchannelLogoutSurvivesRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		prefix := dbtest.Key()
		a := apptest.NewOnURL(t, eng, prefix, apptest.AllowLoopbackOutbound)
		admin := a.NewUser(t, apptest.UserSpec{SuperAdmin: true})
		rp := newFakeRP(t)
		rp.fail = []int{http.StatusServiceUnavailable}
		c := mkLogoutClient(t, a, admin.Token, rp)
		u := a.NewUser(t, apptest.UserSpec{})
		idt := lgLogin(t, a, u.Token, c)
		a.Call(t, "POST", "/v1/auth/logout", u.Token, nil, http.StatusNoContent)
		for len(rp.received()) == 0 {
			if _, err := a.Server.Backchannel.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		a.HTTP.Close()
		if err := a.Server.Close(); err != nil {
			t.Fatal(err)
		}
		var left int
		b := apptest.NewOnURL(t, eng, prefix, apptest.AllowLoopbackOutbound)
		if err := b.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM oauth_backchannel_outbox`).Scan(&left); err != nil || left != 1 {
			t.Fatalf("outbox rows after restart: %d %v", left, err)
		}
		b.Clock.Advance(backchannel.Lease)
		tok := rp.await(t, b, idt)
		// The token is verified against the keys the new instance publishes (the same stored key).
		checkLogoutToken(t, b, tok, c, idt)
	})
}

// TestBackchannelLogoutTwoInstances: two instances on one PostgreSQL deliver
// each logout token once.
func TestBackchannelLogoutTwoInstances(t *testing.T) {
	t.Parallel()
	a, b := apptest.NewPair(t, "", apptest.AllowLoopbackOutbound)
	admin := a.NewUser(t, apptest.UserSpec{SuperAdmin: true})
	rp := newFakeRP(t)
	c := mkLogoutClient(t, a, admin.Token, rp)
	const n = 6
	for range n {
		u := a.NewUser(t, apptest.UserSpec{})
		lgLogin(t, a, u.Token, c)
		a.Call(t, "POST", "/v1/auth/logout", u.Token, nil, http.StatusNoContent)
	}
	ctx := context.Background()
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		for _, e := range []*apptest.Env{a, b, a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = e.Server.Backchannel.RunOnce(ctx) }()
		}
		wg.Wait()
		var left int
		if err := a.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_backchannel_outbox`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 && len(rp.received()) >= n {
			break
		}
	}
	got := rp.received()
	jtis := map[string]int{}
	for _, tok := range got {
		jtis[lgClaims(t, a, tok)["jti"].(string)]++
	}
	if len(got) != n || len(jtis) != n {
		t.Fatalf("want %d logout tokens delivered once each, got %d (%d distinct)", n, len(got), len(jtis))
	}
}
