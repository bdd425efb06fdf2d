package signin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/mail/mailtest"
)

const pw = "correct horse battery"

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	e    *apptest.Env
	c    *http.Client
	lang string
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

func newBrowser(t *testing.T, e *apptest.Env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, lang: "en", c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept-Language", b.lang)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do("GET", path, nil, nil) }

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	return b.do("POST", path, form, nil)
}

func (b *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(b.e.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
var stateRE = regexp.MustCompile(`name="state" value="([^"]+)"`)

func field(t *testing.T, re *regexp.Regexp, p page) string {
	t.Helper()
	m := re.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no %s in page (%d): %s", re, p.Status, p.Body)
	}
	return m[1]
}

func want(t *testing.T, p page, status int, contains ...string) {
	t.Helper()
	if p.Status != status {
		t.Fatalf("status %d, want %d: %s", p.Status, status, p.Body)
	}
	for _, c := range contains {
		if !strings.Contains(p.Body, c) {
			t.Fatalf("page lacks %q: %s", c, p.Body)
		}
	}
}

func checkHeaders(t *testing.T, p page) {
	t.Helper()
	csp := p.Header.Get("Content-Security-Policy")
	// Scripts only from the site itself, never inline.
	if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if p.Header.Get(k) != v {
			t.Fatalf("%s = %q", k, p.Header.Get(k))
		}
	}
}

// loginPage logs b in through the form and returns the response to the post.
func (b *browser) login(email, password, returnTo string) page {
	b.t.Helper()
	form := b.get("/login?return_to=" + url.QueryEscape(returnTo))
	return b.post("/login", url.Values{"csrf_token": {field(b.t, csrfRE, form)}, "email": {email}, "password": {password}, "return_to": {returnTo}})
}

func TestLoginPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := newBrowser(t, e)
		p := b.get("/login")
		want(t, p, 200, `<html lang="en">`, "Log in", "Email address", `href="/register`, "Forgot your password?")
		checkHeaders(t, p)
		if c := b.cookie("hmid_csrf"); c == nil {
			t.Fatal("no CSRF cookie")
		}
		b.lang = "de-DE,de;q=0.9,en;q=0.5"
		want(t, b.get("/login"), 200, `<html lang="de">`, "Anmelden", "E-Mail-Adresse", "Passwort vergessen?")

		// Without a CSRF token, or with another browser's token: refused, no session.
		p = b.post("/login", url.Values{"email": {u.Email}, "password": {pw}})
		want(t, p, 403, "Formular ist abgelaufen")
		other := newBrowser(t, e)
		tok := field(t, csrfRE, other.get("/login"))
		want(t, b.post("/login", url.Values{"csrf_token": {tok}, "email": {u.Email}, "password": {pw}}), 403)
		// A valid token from a cross-site page is refused too.
		tok = field(t, csrfRE, b.get("/login"))
		want(t, b.do("POST", "/login", url.Values{"csrf_token": {tok}, "email": {u.Email}, "password": {pw}}, map[string]string{"Origin": "https://evil.example"}), 403)
		want(t, b.do("POST", "/login", url.Values{"csrf_token": {tok}, "email": {u.Email}, "password": {pw}}, map[string]string{"Sec-Fetch-Site": "cross-site"}), 403)
		if b.cookie(auth.CookieName) != nil {
			t.Fatal("session cookie after refused posts")
		}

		// Wrong password: the form again with a localized message.
		p = b.login(u.Email, "wrong password", "")
		want(t, p, 401, "E-Mail-Adresse oder Passwort ist falsch.", `value="`+u.Email+`"`)

		// Success: cookie flags and the redirect to a same-origin return_to.
		b.lang = "en"
		p = b.login(u.Email, pw, "/v1/oauth/authorize?client_id=abc&state=x")
		want(t, p, 303)
		if loc := p.Header.Get("Location"); loc != "/v1/oauth/authorize?client_id=abc&state=x" {
			t.Fatalf("Location %q", loc)
		}
		var sc *http.Cookie
		for _, c := range (&http.Response{Header: p.Header}).Cookies() {
			if c.Name == auth.CookieName {
				sc = c
			}
		}
		if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/" || sc.MaxAge <= 0 || sc.Secure {
			t.Fatalf("session cookie %+v", sc)
		}
		var source string
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT source_service FROM audit_events WHERE user_id = $1 AND event_type = 'login'`, u.ID).Scan(&source)
		if source != "id" {
			t.Fatalf("audit source %q", source)
		}
		// Signed in, / leads to the account console, which names the user.
		home := b.get("/")
		want(t, home, 303)
		if loc := home.Header.Get("Location"); loc != "/account" {
			t.Fatalf("/ signed in: Location %q, want /account", loc)
		}
		want(t, b.get("/account"), 200, u.Username)
	})
}

func TestOpenRedirectRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		for rt, loc := range map[string]string{
			"https://evil.example/x":        "/",
			"//evil.example/x":              "/",
			"/\\evil.example":               "/",
			"javascript:alert(1)":           "/",
			e.URL + ".evil.example/":        "/",
			e.URL + "@evil.example/":        "/",
			"":                              "/",
			e.URL + "/consent?x=1":          e.URL + "/consent?x=1",
			"/v1/oauth/authorize?a=b&c=%2F": "/v1/oauth/authorize?a=b&c=%2F",
		} {
			b := newBrowser(t, e)
			p := b.login(u.Email, pw, rt)
			if p.Status != 303 || p.Header.Get("Location") != loc {
				t.Errorf("return_to %q: %d Location %q, want %q", rt, p.Status, p.Header.Get("Location"), loc)
			}
		}
	})
}

type fakeSecondFactor struct{ userID, code string }

func (f *fakeSecondFactor) Enabled(_ context.Context, userID string) (bool, error) {
	return userID == f.userID, nil
}

func (f *fakeSecondFactor) AcceptsCode(_ context.Context, userID string) (bool, error) {
	return userID == f.userID, nil
}

func (f *fakeSecondFactor) VerifyLogin(_ context.Context, _, code, _, _ string) error {
	if code != f.code {
		return apperr.Invalid("invalid two-factor code")
	}
	return nil
}

func (f *fakeSecondFactor) SetupRequired(context.Context, string, string) (bool, error) {
	return false, nil
}

func TestLoginPageTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		e.Server.SecondFactor = &fakeSecondFactor{userID: u.ID, code: "654321"}
		b := newBrowser(t, e)
		p := b.login(u.Email, pw, "/consent?pending_authorization_id=p1")
		want(t, p, 200, "Two-step verification", `name="code"`)
		if strings.Contains(p.Body, pw) || b.cookie(auth.CookieName) != nil {
			t.Fatal("password echoed or session set at the first step")
		}
		state, tok := field(t, stateRE, p), field(t, csrfRE, p)

		// Another browser cannot use the state.
		other := newBrowser(t, e)
		otok := field(t, csrfRE, other.get("/login"))
		want(t, other.post("/login", url.Values{"csrf_token": {otok}, "state": {state}, "code": {"654321"}}), 400, "Your login has expired")

		want(t, b.post("/login", url.Values{"csrf_token": {tok}, "state": {state}, "code": {"000000"}}), 400, "Please check your input")
		p = b.post("/login", url.Values{"csrf_token": {tok}, "state": {state}, "code": {"654321"}})
		want(t, p, 303)
		if p.Header.Get("Location") != "/consent?pending_authorization_id=p1" || b.cookie(auth.CookieName) == nil {
			t.Fatalf("after code: %q", p.Header.Get("Location"))
		}
		// The state is single use.
		want(t, b.post("/login", url.Values{"csrf_token": {tok}, "state": {state}, "code": {"654321"}}), 400)
	})
}

type fakeConsents struct {
	mu      sync.Mutex
	userID  string
	decided []bool
}

func (f *fakeConsents) Pending(_ context.Context, id, userID string) (authflow.Pending, error) {
	if id != "p1" || userID != f.userID {
		return authflow.Pending{}, apperr.NotFoundf("pending authorization not found")
	}
	return authflow.Pending{ID: id, ClientID: "c1", ClientName: "Trip Planner <b>", LogoURL: "https://cdn.example/logo.png",
		Scopes: []authflow.Scope{{Name: "openid", Description: "User id"}, {Name: "custom", Description: "Custom thing"}}}, nil
}

func (f *fakeConsents) Decide(_ context.Context, id, userID string, approved bool, _, _ string) (string, error) {
	if _, err := f.Pending(context.Background(), id, userID); err != nil {
		return "", err
	}
	f.mu.Lock()
	f.decided = append(f.decided, approved)
	f.mu.Unlock()
	if approved {
		return "https://client.example/cb?code=hm_ac_x&state=s", nil
	}
	return "https://client.example/cb?error=access_denied&state=s", nil
}

func TestConsentPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := newBrowser(t, e)
		p := b.get("/consent?pending_authorization_id=p1")
		want(t, p, 303)
		if loc := p.Header.Get("Location"); loc != "/login?return_to="+url.QueryEscape("/consent?pending_authorization_id=p1") {
			t.Fatalf("Location %q", loc)
		}
		want(t, b.login(u.Email, pw, "/consent?pending_authorization_id=p1"), 303)

		// No OAuth provider wired: 503.
		real := e.Server.Consents
		e.Server.Consents = nil
		want(t, b.get("/consent?pending_authorization_id=p1"), 503)
		e.Server.Consents = real
		want(t, b.get("/consent?pending_authorization_id=p1"), 404)

		fc := &fakeConsents{userID: u.ID}
		e.Server.Consents = fc
		want(t, b.get("/consent?pending_authorization_id=nope"), 404)
		want(t, b.get("/consent"), 400)
		p = b.get("/consent?pending_authorization_id=p1")
		want(t, p, 200, "Trip Planner &lt;b&gt; would like to access your account.", "Know who you are", "Custom thing",
			`src="https://cdn.example/logo.png"`, `value="approve"`, `value="deny"`)
		checkHeaders(t, p)
		b.lang = "de"
		want(t, b.get("/consent?pending_authorization_id=p1"), 200, "möchte auf Ihr Konto zugreifen", "Erlauben", "Ablehnen")

		tok := field(t, csrfRE, p)
		// A token of the login form (not bound to this session and form) is refused.
		ltok := field(t, csrfRE, b.get("/login"))
		want(t, b.post("/consent", url.Values{"csrf_token": {ltok}, "pending_authorization_id": {"p1"}, "decision": {"approve"}}), 403)
		want(t, b.post("/consent", url.Values{"csrf_token": {tok}, "pending_authorization_id": {"p1"}, "decision": {"maybe"}}), 400)
		p = b.post("/consent", url.Values{"csrf_token": {tok}, "pending_authorization_id": {"p1"}, "decision": {"deny"}})
		want(t, p, 303)
		if p.Header.Get("Location") != "https://client.example/cb?error=access_denied&state=s" {
			t.Fatalf("deny Location %q", p.Header.Get("Location"))
		}
		p = b.post("/consent", url.Values{"csrf_token": {tok}, "pending_authorization_id": {"p1"}, "decision": {"approve"}})
		if p.Status != 303 || p.Header.Get("Location") != "https://client.example/cb?code=hm_ac_x&state=s" {
			t.Fatalf("approve: %d %q", p.Status, p.Header.Get("Location"))
		}
		if len(fc.decided) != 2 || fc.decided[0] || !fc.decided[1] {
			t.Fatalf("decisions %v", fc.decided)
		}
		// Someone else's session sees nothing of this authorization.
		v := e.NewUser(t, apptest.UserSpec{Password: pw})
		b2 := newBrowser(t, e)
		want(t, b2.login(v.Email, pw, ""), 303)
		want(t, b2.get("/consent?pending_authorization_id=p1"), 404)
	})
}

func TestLogoutPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := newBrowser(t, e)
		want(t, b.get("/logout"), 200, "You are not logged in.")
		want(t, b.login(u.Email, pw, ""), 303)
		p := b.get("/logout")
		want(t, p, 200, "Do you want to log out on this device?")
		checkHeaders(t, p)
		want(t, b.post("/logout", url.Values{}), 403)
		want(t, b.post("/logout", url.Values{"csrf_token": {field(t, csrfRE, p)}}), 200, "You have been logged out.")
		if b.cookie(auth.CookieName) != nil {
			t.Fatal("session cookie kept")
		}
		var n int
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'logout' AND source_service = 'id'`, u.ID).Scan(&n)
		if n != 1 {
			t.Fatalf("logout audits %d", n)
		}
		want(t, b.get("/"), 200, "You are not signed in.")
	})
}

func TestRegisterPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		b := newBrowser(t, e)
		b.lang = "de"
		p := b.get("/register?return_to=/")
		want(t, p, 200, "Konto erstellen", "Benutzername (optional)")
		tok := field(t, csrfRE, p)
		want(t, b.post("/register", url.Values{"email": {"page@example.test"}, "password": {pw}}), 403)
		want(t, b.post("/register", url.Values{"csrf_token": {tok}, "email": {"page@example.test"}, "password": {"short"}}), 400, "Das Passwort ist zu kurz. Verwenden Sie mindestens 8 Zeichen.")
		// A common password is refused in the page's language; the form says so beforehand.
		want(t, b.post("/register", url.Values{"csrf_token": {tok}, "email": {"page@example.test"}, "password": {"Passwort1"}}), 400, "gehört zu den häufigsten")
		want(t, b.get("/register"), 200, "Häufige Passwörter wie 12345678 werden abgelehnt", `data-strength="#password-strength"`)
		p = b.post("/register", url.Values{"csrf_token": {tok}, "email": {"page@example.test"}, "password": {pw}, "username": {"page_user"}, "return_to": {"/"}})
		want(t, p, 303)
		if b.cookie(auth.CookieName) == nil {
			t.Fatal("not signed in after registration")
		}
		want(t, b.post("/register", url.Values{"csrf_token": {tok}, "email": {"page@example.test"}, "password": {pw}}), 409)
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE platforms SET registration_enabled = FALSE WHERE slug = 'email'`); err != nil {
			t.Fatal(err)
		}
		want(t, b.get("/register"), 403, "Registrierung ist auf diesem Server geschlossen")
		if strings.Contains(b.get("/login").Body, `href="/register`) {
			t.Fatal("login page offers closed registration")
		}
	})
}

var linkRE = regexp.MustCompile(`/reset-password\?token=(hm_pr_[0-9A-Za-z]+)`)

func TestPasswordResetPages(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := newBrowser(t, e)
		p := b.get("/forgot-password")
		want(t, p, 200, "Reset your password")
		p = b.post("/forgot-password", url.Values{"csrf_token": {field(t, csrfRE, p)}, "email": {u.Email}})
		want(t, p, 200, "If an account with this email address exists")
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("outbox %v %d", err, len(msgs))
		}
		m := linkRE.FindStringSubmatch(msgs[0].Text)
		if m == nil {
			t.Fatalf("no link in %s", msgs[0].Text)
		}
		want(t, b.get("/reset-password"), 400)
		p = b.get("/reset-password?token=" + m[1])
		want(t, p, 200, "Choose a new password", m[1])
		tok := field(t, csrfRE, p)
		want(t, b.post("/reset-password", url.Values{"csrf_token": {tok}, "token": {m[1]}, "password": {"short"}}), 400, "The password is too short. Use at least 8 characters.")
		want(t, b.post("/reset-password", url.Values{"csrf_token": {tok}, "token": {m[1]}, "password": {"iloveyou1"}}), 400, "one of the most common ones")
		want(t, b.post("/reset-password", url.Values{"csrf_token": {tok}, "token": {m[1]}, "password": {"a new page password"}}), 200, "Your password has been changed")
		want(t, b.post("/reset-password", url.Values{"csrf_token": {tok}, "token": {m[1]}, "password": {"a new page password"}}), 400, "invalid, has expired or was already used")
		want(t, b.login(u.Email, "a new page password", ""), 303)
	})
}

func TestStylesheet(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		p := newBrowser(t, e).get("/assets/hmid.css")
		if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/css") || !strings.Contains(p.Body, ".card") {
			t.Fatalf("stylesheet %d %s", p.Status, p.Header.Get("Content-Type"))
		}
	})
}

// TestPagesMatchContract sends the pages' common answers through the
// harness, which checks each against api/openapi.yaml.
func TestPagesMatchContract(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		cookie := map[string]string{"Cookie": auth.CookieName + "=" + u.Token}
		for _, c := range []struct {
			method, path string
			header       map[string]string
			status       int
		}{
			{"GET", "/", nil, 200},
			{"GET", "/", cookie, 303},
			{"GET", "/assets/hmid.css", nil, 200},
			{"GET", "/login?return_to=/", nil, 200},
			{"POST", "/login", nil, 403},
			{"GET", "/register", nil, 200},
			{"POST", "/register", nil, 403},
			{"GET", "/consent?pending_authorization_id=x", nil, 303},
			{"GET", "/consent?pending_authorization_id=x", cookie, 404},
			{"POST", "/consent", nil, 303},
			{"POST", "/consent", cookie, 403},
			{"GET", "/logout", cookie, 200},
			{"POST", "/logout", cookie, 403},
			{"GET", "/forgot-password", nil, 200},
			{"POST", "/forgot-password", nil, 403},
			{"GET", "/reset-password", nil, 400},
			{"GET", "/reset-password?token=hm_pr_x", nil, 200},
			{"POST", "/reset-password", nil, 403},
		} {
			var body any
			if c.method == "POST" {
				body = url.Values{"email": {u.Email}}
			}
			r := e.Do(t, apptest.Req{Method: c.method, Path: c.path, Header: c.header, Body: body})
			if r.Status != c.status {
				t.Errorf("%s %s: %d, want %d", c.method, c.path, r.Status, c.status)
			}
		}
	})
}

func TestLoginPageRefusals(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		b := newBrowser(t, e)
		b.lang = "de"
		if _, err := e.Server.DB.ExecContext(context.Background(), `INSERT INTO bans (id, user_id, reason, banned_at, is_permanent) VALUES ('b1', $1, 'spam', $2, TRUE)`,
			u.ID, apptest.Start.UnixMicro()); err != nil {
			t.Fatal(err)
		}
		want(t, b.login(u.Email, pw, ""), 403, "Ihr Konto ist dauerhaft gesperrt. Angegebener Grund: spam")
		if b.cookie(auth.CookieName) != nil {
			t.Fatal("banned user got a session")
		}
		v := e.NewUser(t, apptest.UserSpec{Password: pw})
		for range auth.FailPerAccount {
			want(t, b.login(v.Email, "wrong password", ""), 401)
		}
		if p := b.login(v.Email, pw, ""); p.Status != 429 || p.Header.Get("Retry-After") == "" || !strings.Contains(p.Body, "Zu viele Versuche") {
			t.Fatalf("throttled page: %d %v", p.Status, p.Header)
		}
	})
}

// TestLoginPageDeviceCookie: signing in on the login page marks the browser
// with a device cookie, with which the owner gets through a lockout that a
// guesser at the same address caused; a browser without it does not.
func TestLoginPageDeviceCookie(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		first := newBrowser(t, e)
		if p := first.login(u.Email, pw, ""); p.Status != http.StatusSeeOther && p.Status != http.StatusFound {
			t.Fatalf("login: %d %s", p.Status, p.Body)
		}
		dev := first.cookie(auth.DeviceCookieName)
		if dev == nil || dev.Value == "" {
			t.Fatal("the login page set no device cookie")
		}
		// A guesser at the same address locks the account there.
		guesser := newBrowser(t, e)
		for range auth.FailPerAccount {
			want(t, guesser.login(u.Email, "wrong password", ""), 401)
		}
		want(t, guesser.login(u.Email, pw, ""), 429)
		// The owner's browser (its device cookie, no session) gets through.
		owner := newBrowser(t, e)
		base, _ := url.Parse(e.URL)
		owner.c.Jar.SetCookies(base, []*http.Cookie{{Name: auth.DeviceCookieName, Value: dev.Value, Path: "/"}})
		if p := owner.login(u.Email, pw, ""); p.Status != http.StatusSeeOther && p.Status != http.StatusFound {
			t.Fatalf("owner with the device cookie: %d %s", p.Status, p.Body)
		}
		if owner.cookie(auth.CookieName) == nil {
			t.Fatal("the owner got no session")
		}
	})
}
