package conformance_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
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
)

// TestRPInitiatedLogoutOP replicates the plan
// oidcc-rp-initiated-logout-certification-test-plan (OpenID Connect
// RP-Initiated Logout 1.0, OP side) with an RS256 client registered
// statically with a post_logout_redirect_uri. Every module first logs in
// with the authorization-code flow; the modules that expect a logout end by
// checking that prompt=none now fails with login_required.
func TestRPInitiatedLogoutOP(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		t.Run("oidcc-rp-initiated-logout-discovery-endpoint-verification", func(t *testing.T) {
			// Pass: discovery has end_session_endpoint, an absolute URL on the issuer.
			d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
			ep, _ := d["end_session_endpoint"].(string)
			if u, err := url.Parse(ep); err != nil || !u.IsAbs() || !strings.HasPrefix(ep, e.URL+"/") {
				t.Fatalf("end_session_endpoint %q", ep)
			}
		})

		t.Run("oidcc-rp-initiated-logout", func(t *testing.T) {
			// Pass: with id_token_hint, post_logout_redirect_uri and state,
			// the OP redirects to exactly that URI with the same state and
			// no other parameter; the session is over (prompt=none fails).
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			q := r.logoutRedirect(r.logoutEnd(url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {r.postLogout}, "state": {"xyz-1"}}))
			if len(q) != 1 || q.Get("state") != "xyz-1" {
				t.Fatalf("redirect query %v, want only state", q)
			}
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-bad-id-token-hint", func(t *testing.T) {
			// Pass: an id_token_hint that is not an ID token of this OP gets an
			// error page, and post_logout_redirect_uri is never called.
			r := newLogoutRig(t, e)
			r.logoutLogin()
			r.logoutErrorPage(r.logoutEnd(url.Values{"id_token_hint": {"this.is.notajwt"}, "post_logout_redirect_uri": {r.postLogout}, "state": {"s"}}))
			r.logoutStillSignedIn()
		})

		t.Run("oidcc-rp-initiated-logout-modified-id-token-hint", func(t *testing.T) {
			// Pass: an ID token whose payload was changed after signing (its
			// signature no longer verifies) gets an error page, no redirect.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			// The payload with another sub, re-encoded under the original signature.
			parts := strings.Split(idt, ".")
			raw, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims map[string]any
			if err := json.Unmarshal(raw, &claims); err != nil {
				t.Fatal(err)
			}
			claims["sub"] = "someone-else"
			raw, _ = json.Marshal(claims)
			modified := parts[0] + "." + base64.RawURLEncoding.EncodeToString(raw) + "." + parts[2]
			r.logoutErrorPage(r.logoutEnd(url.Values{"id_token_hint": {modified}, "post_logout_redirect_uri": {r.postLogout}, "state": {"s"}}))
			r.logoutStillSignedIn()
		})

		t.Run("oidcc-rp-initiated-logout-no-id-token-hint", func(t *testing.T) {
			// Pass: without id_token_hint (client_id, post_logout_redirect_uri,
			// state) the OP must not log out and redirect silently: it shows
			// an error page or asks the user. hmid asks; once confirmed it
			// logs out and redirects with state.
			r := newLogoutRig(t, e)
			r.logoutLogin()
			res := r.logoutEnd(url.Values{"client_id": {r.clientID}, "post_logout_redirect_uri": {r.postLogout}, "state": {"s2"}})
			if !logoutAsks(res) {
				t.Fatalf("want the confirmation page, got %d", res.Status)
			}
			r.logoutStillSignedIn()
			if q := r.logoutRedirect(r.logoutConfirm(res)); q.Get("state") != "s2" {
				t.Fatalf("state %q", q.Get("state"))
			}
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-no-params", func(t *testing.T) {
			// Pass: a bare request to the end_session_endpoint leads to a
			// successful logout page (here after the confirmation the spec
			// asks for without a hint); warning-free only if no redirect.
			r := newLogoutRig(t, e)
			r.logoutLogin()
			r.logoutLoggedOutPage(r.logoutConfirm(r.logoutEnd(nil)))
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-no-post-logout-redirect-uri", func(t *testing.T) {
			// Pass: id_token_hint alone logs out and shows the OP's own
			// logged-out page; there is no redirect.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			r.logoutLoggedOutPage(r.logoutEnd(url.Values{"id_token_hint": {idt}}))
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-no-state", func(t *testing.T) {
			// Pass: without state the redirect to post_logout_redirect_uri
			// carries no state parameter (CheckNoPostLogoutState).
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			q := r.logoutRedirect(r.logoutEnd(url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {r.postLogout}}))
			if q.Has("state") || len(q) != 0 {
				t.Fatalf("redirect query %v, want none", q)
			}
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-only-state", func(t *testing.T) {
			// Pass: id_token_hint and state without post_logout_redirect_uri
			// log out without any redirect (state has nowhere to go).
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			r.logoutLoggedOutPage(r.logoutEnd(url.Values{"id_token_hint": {idt}, "state": {"only"}}))
			r.logoutPromptNone()
		})

		t.Run("oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri", func(t *testing.T) {
			// Pass: the registered URI with a query string added is not the
			// registered URI (simple string comparison): error page, and the
			// OP never calls post_logout_redirect_uri.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			r.logoutErrorPage(r.logoutEnd(url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {r.postLogout + "?foo=bar"}, "state": {"s"}}))
			r.logoutStillSignedIn()
		})

		t.Run("oidcc-rp-initiated-logout-bad-post-logout-redirect-uri", func(t *testing.T) {
			// Pass: an unregistered post_logout_redirect_uri gets an error
			// page saying the request is invalid; no redirect anywhere.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			r.logoutErrorPage(r.logoutEnd(url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {r.postLogout + "-not-registered"}, "state": {"s"}}))
			r.logoutStillSignedIn()
		})
	}, apptest.AllowLoopbackOutbound)
}

// TestBackChannelLogoutOP replicates the plan
// oidcc-backchannel-rp-initiated-logout-certification-test-plan (OpenID
// Connect Back-Channel Logout 1.0, OP side) with an RS256 client
// registered with a backchannel_logout_uri and
// backchannel_logout_session_required.
func TestBackChannelLogoutOP(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		t.Run("oidcc-backchannel-logout-discovery-endpoint-verification", func(t *testing.T) {
			// Pass: backchannel_logout_supported is true; warning unless
			// backchannel_logout_session_supported is true too (sid is sent).
			d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
			if d["backchannel_logout_supported"] != true || d["backchannel_logout_session_supported"] != true {
				t.Fatalf("discovery %v", d)
			}
		})

		check := func(t *testing.T, r *logoutRig, idt string) {
			// Pass conditions on the logout request the RP receives (§2.4–2.6):
			// signature verifiable with jwks_uri using the alg of the ID
			// tokens; typ logout+jwt (a warning only when missing); iss is
			// the issuer; aud is the client; iat present and not in the
			// future; exp present and after now; jti present; events holds
			// exactly the back-channel logout event with an empty object;
			// sid equals the ID token's sid (session required); sub, when
			// present, equals the ID token's sub; nonce is absent.
			lt := r.logoutAwaitToken()
			typ, c := r.logoutClaims(lt)
			_, id := r.logoutClaims(idt)
			now := float64(e.Clock.Now().Unix())
			ev, _ := c["events"].(map[string]any)
			inner, _ := ev["http://schemas.openid.net/event/backchannel-logout"].(map[string]any)
			switch {
			case typ != "logout+jwt":
				t.Fatalf("typ %q", typ)
			case c["iss"] != e.URL || c["aud"] != r.clientID:
				t.Fatalf("iss/aud %v %v", c["iss"], c["aud"])
			case c["iat"] == nil || c["iat"].(float64) > now+5 || c["exp"] == nil || c["exp"].(float64) <= now:
				t.Fatalf("iat/exp %v %v", c["iat"], c["exp"])
			case c["jti"] == nil || c["jti"] == "":
				t.Fatal("no jti")
			case len(ev) != 1 || inner == nil || len(inner) != 0:
				t.Fatalf("events %v", c["events"])
			case id["sid"] == nil || c["sid"] != id["sid"]:
				t.Fatalf("sid %v, ID token sid %v", c["sid"], id["sid"])
			case c["sub"] != nil && c["sub"] != id["sub"]:
				t.Fatalf("sub %v, ID token sub %v", c["sub"], id["sub"])
			case c["nonce"] != nil:
				t.Fatal("a logout token must not contain nonce")
			}
		}

		t.Run("oidcc-backchannel-rp-initiated-logout", func(t *testing.T) {
			// Pass: RP-initiated logout with id_token_hint redirects to the
			// post_logout_redirect_uri with state, the OP POSTs a valid logout
			// token to the backchannel_logout_uri, and prompt=none then fails.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			if q := r.logoutRedirect(r.logoutEnd(url.Values{"id_token_hint": {idt}, "post_logout_redirect_uri": {r.postLogout}, "state": {"bc"}})); q.Get("state") != "bc" {
				t.Fatalf("state %q", q.Get("state"))
			}
			check(t, r, idt)
			r.logoutPromptNone()
		})

		t.Run("oidcc-backchannel-rp-initiated-logout-no-id-token-hint", func(t *testing.T) {
			// The same with client_id instead of id_token_hint: the OP asks
			// first; after the user confirms, the same logout token goes out.
			r := newLogoutRig(t, e)
			idt := r.logoutLogin()
			res := r.logoutConfirm(r.logoutEnd(url.Values{"client_id": {r.clientID}, "post_logout_redirect_uri": {r.postLogout}}))
			r.logoutRedirect(res)
			check(t, r, idt)
			r.logoutPromptNone()
		})
	}, apptest.AllowLoopbackOutbound)
}

// logoutRig is one OpenID Provider under test with a signed-in browser
// session, an RS256 client registered for logout, and that client's
// back-channel logout endpoint (a fake RP recording the logout tokens).
type logoutRig struct {
	t      *testing.T
	e      *apptest.Env
	userID string
	// owner registers the client.
	owner string
	// session is the browser's hmid_session token and sessionID its id.
	session, sessionID string
	clientID, secret   string
	redirect           string
	postLogout         string

	rpMu   sync.Mutex
	tokens []string
	seen   chan string
}

func newLogoutRig(t *testing.T, e *apptest.Env) *logoutRig {
	t.Helper()
	r := &logoutRig{t: t, e: e, seen: make(chan string, 16)}
	rp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/backchannel" {
			http.NotFound(w, req)
			return
		}
		tok := req.PostFormValue("logout_token")
		r.rpMu.Lock()
		r.tokens = append(r.tokens, tok)
		r.rpMu.Unlock()
		r.seen <- tok
	}))
	t.Cleanup(rp.Close)
	owner := e.NewUser(t, apptest.UserSpec{})
	u := e.NewUser(t, apptest.UserSpec{})
	r.owner, r.userID = owner.Token, u.ID
	r.session, r.sessionID = e.NewSession(t, u.ID)
	r.redirect, r.postLogout = rp.URL+"/callback", rp.URL+"/post_logout_redirect"
	c := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
		"name": "conformance suite", "redirect_uris": []string{r.redirect}, "id_token_signed_response_alg": "RS256",
		"post_logout_redirect_uris": []string{r.postLogout}, "backchannel_logout_uri": rp.URL + "/backchannel",
		"backchannel_logout_session_required": true,
	}, http.StatusCreated).JSON()["data"].(map[string]any)
	r.clientID, r.secret = c["id"].(string), c["client_secret"].(string)
	return r
}

// logoutBrowser sends a request as the browser: Accept text/html and the
// session cookie (while the rig's session is set), plus extra cookies.
func (r *logoutRig) logoutBrowser(method, path string, form url.Values, extra ...*http.Cookie) *apptest.Resp {
	r.t.Helper()
	cookies := []string{"hmid_session=" + r.session}
	for _, c := range extra {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	hdr := map[string]string{"Accept": "text/html", "Cookie": strings.Join(cookies, "; ")}
	if method == http.MethodGet {
		if form != nil {
			path += "?" + form.Encode()
		}
		return r.e.Do(r.t, apptest.Req{Method: method, Path: path, Header: hdr})
	}
	return r.e.Do(r.t, apptest.Req{Method: method, Path: path, Body: form, Header: hdr})
}

// logoutLogin runs a normal authorization-code flow in the browser session
// and returns the ID token (the first phase of every logout module).
func (r *logoutRig) logoutLogin() string {
	r.t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {r.clientID}, "redirect_uri": {r.redirect},
		"scope": {"openid"}, "state": {"st"}, "nonce": {"n-0S6_WzA2Mj"}}
	res := r.logoutBrowser(http.MethodGet, "/v1/oauth/authorize", q)
	if res.Status == http.StatusFound && strings.Contains(res.Header.Get("Location"), "/consent") {
		pending, _ := url.Parse(res.Header.Get("Location"))
		res = r.e.Do(r.t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize/consent", Token: r.session,
			Body: map[string]any{"pending_authorization_id": pending.Query().Get("pending_authorization_id"), "approved": true}})
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		r.t.Fatalf("authorization: %d %s", res.Status, res.Header.Get("Location"))
	}
	tok := r.e.Do(r.t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {r.redirect},
		"client_id": {r.clientID}, "client_secret": {r.secret}}})
	if tok.Status != http.StatusOK {
		r.t.Fatalf("token: %d %s", tok.Status, tok.Body)
	}
	return tok.JSON()["id_token"].(string)
}

// logoutEnd sends the browser to the end_session_endpoint with params.
func (r *logoutRig) logoutEnd(params url.Values) *apptest.Resp {
	r.t.Helper()
	return r.logoutBrowser(http.MethodGet, "/v1/oauth/logout", params)
}

var logoutHidden = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// logoutConfirm presses "Log out" on the confirmation page res.
func (r *logoutRig) logoutConfirm(res *apptest.Resp) *apptest.Resp {
	r.t.Helper()
	if !logoutAsks(res) {
		r.t.Fatalf("want the confirmation page, got %d %.300s", res.Status, res.Body)
	}
	form := url.Values{"hmid_confirm": {"logout"}}
	for _, m := range logoutHidden.FindAllStringSubmatch(string(res.Body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	var extra []*http.Cookie
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.Name == "hmid_csrf" {
			extra = append(extra, c)
		}
	}
	return r.logoutBrowser(http.MethodPost, "/v1/oauth/logout", form, extra...)
}

// logoutAsks reports whether res is the "Log out of hmid?" page.
func logoutAsks(res *apptest.Resp) bool {
	return res.Status == http.StatusOK && strings.Contains(string(res.Body), "Log out of hmid?")
}

// logoutErrorPage asserts the OP showed an error page and did not redirect
// (the modules that expect "an error page saying the request is invalid").
func (r *logoutRig) logoutErrorPage(res *apptest.Resp) {
	r.t.Helper()
	if res.Status != http.StatusBadRequest || res.Header.Get("Location") != "" || !strings.Contains(res.Header.Get("Content-Type"), "text/html") {
		r.t.Fatalf("want an HTML error page without redirect, got %d Location %q", res.Status, res.Header.Get("Location"))
	}
}

// logoutLoggedOutPage asserts the "you are logged out" page (no redirect).
func (r *logoutRig) logoutLoggedOutPage(res *apptest.Resp) {
	r.t.Helper()
	if res.Status != http.StatusOK || res.Header.Get("Location") != "" || !strings.Contains(string(res.Body), "You have been logged out.") {
		r.t.Fatalf("want the logged-out page, got %d %.300s", res.Status, res.Body)
	}
}

// logoutRedirect asserts a redirect to the registered post_logout_redirect_uri
// and returns its query.
func (r *logoutRig) logoutRedirect(res *apptest.Resp) url.Values {
	r.t.Helper()
	loc, err := url.Parse(res.Header.Get("Location"))
	if (res.Status != http.StatusFound && res.Status != http.StatusSeeOther) || err != nil {
		r.t.Fatalf("want a redirect, got %d %q", res.Status, res.Header.Get("Location"))
	}
	q := loc.Query()
	loc.RawQuery = ""
	if loc.String() != r.postLogout {
		r.t.Fatalf("redirect to %s, want %s", loc, r.postLogout)
	}
	return q
}

// logoutPromptNone is the third phase of the logout modules: an
// authorization request with prompt=none must now fail with login_required,
// as the user has been logged out.
func (r *logoutRig) logoutPromptNone() {
	r.t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {r.clientID}, "redirect_uri": {r.redirect},
		"scope": {"openid"}, "state": {"st2"}, "prompt": {"none"}}
	res := r.logoutBrowser(http.MethodGet, "/v1/oauth/authorize", q)
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusFound || loc == nil || loc.Query().Get("error") != "login_required" {
		r.t.Fatalf("prompt=none after logout: %d %q, want error=login_required", res.Status, res.Header.Get("Location"))
	}
}

// logoutStillSignedIn asserts the session survived (a refused request must not log out).
func (r *logoutRig) logoutStillSignedIn() {
	r.t.Helper()
	r.e.Call(r.t, "GET", "/v1/users/me", r.session, nil, http.StatusOK)
}

// logoutClaims verifies raw with the OP's jwks_uri and returns its header typ and claims.
func (r *logoutRig) logoutClaims(raw string) (string, map[string]any) {
	r.t.Helper()
	ks := oidc.NewRemoteKeySet(context.Background(), r.e.URL+"/v1/oauth/jwks")
	if _, err := ks.VerifySignature(context.Background(), raw); err != nil {
		r.t.Fatalf("signature not verifiable with jwks_uri: %v", err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		r.t.Fatal(err)
	}
	var m map[string]any
	if err := tok.UnsafeClaimsWithoutVerification(&m); err != nil {
		r.t.Fatal(err)
	}
	typ, _ := tok.Headers[0].ExtraHeaders["typ"].(string)
	return typ, m
}

// logoutAwaitToken runs delivery passes until the fake RP got a logout token.
func (r *logoutRig) logoutAwaitToken() string {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if _, err := r.e.Server.Backchannel.RunOnce(context.Background()); err != nil {
			r.t.Logf("delivery pass: %v", err)
		}
		select {
		case tok := <-r.seen:
			return tok
		case <-deadline:
			r.t.Fatal("the OP sent no back-channel logout request")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
