package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/mail"
	"hmid/internal/upstream/upstreamtest"
)

// The tests of sign-in with upstream providers drive hmid's pages over HTTP
// the way a browser does (a cookie jar, redirects followed by hand) against
// the fake providers of upstreamtest, which speak each provider's formats.

// fakes is one fake of each kind, configured as hmid's providers: discord,
// github, twitch, and a generic OpenID Connect provider "acme".
type fakes struct {
	discord, github, twitch *upstreamtest.Provider
	acme                    *upstreamtest.OIDC
}

// eachWithFakes runs fn once per database engine, on an Env whose
// HMID_LOGIN_* variables point at new fakes.
func eachWithFakes(t *testing.T, fn func(t *testing.T, e *apptest.Env, f *fakes)) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		f := &fakes{discord: upstreamtest.NewDiscord(t), github: upstreamtest.NewGitHub(t), twitch: upstreamtest.NewTwitch(t)}
		var e *apptest.Env
		// The fake's ID tokens are dated by hmid's fake clock, which checks them.
		f.acme = upstreamtest.NewOIDC(t, func() time.Time { return e.Clock.Now() })
		env := upstreamtest.Merge(f.discord.Env("discord"), f.github.Env("github"), f.twitch.Env("twitch"), f.acme.Env("acme"),
			map[string]string{"HMID_LOGIN_ACME_NAME": "Acme SSO"})
		e = apptest.New(t, eng, func(c *config.Config) { c.LoginEnv = func(k string) string { return env[k] } })
		fn(t, e, f)
	})
}

// browser is a cookie jar that stops at every redirect.
type browser struct {
	t    *testing.T
	e    *apptest.Env
	c    *http.Client
	lang string // the Accept-Language header, "" for none
}

func newBrowser(t *testing.T, e *apptest.Env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is a response read whole.
type page struct {
	status   int
	location string
	body     string
}

func (b *browser) do(method, target string, form url.Values) page {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.e.URL + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	// What a browser navigating sends: the authorize endpoint answers
	// pages (not JSON) to it.
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if b.lang != "" {
		req.Header.Set("Accept-Language", b.lang)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, location: res.Header.Get("Location"), body: string(raw)}
}

func (b *browser) get(target string) page { return b.do("GET", target, nil) }

// cookie returns the value of the jar's cookie name for path.
func (b *browser) cookie(name, path string) string {
	u, _ := url.Parse(b.e.URL + path)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// start opens GET /login/{slug} and returns the provider URL it redirects to.
func (b *browser) start(slug, returnTo string) string {
	b.t.Helper()
	target := "/login/" + slug
	if returnTo != "" {
		target += "?return_to=" + url.QueryEscape(returnTo)
	}
	p := b.get(target)
	if p.status != http.StatusSeeOther || p.location == "" {
		b.t.Fatalf("GET %s: %d %q, want a redirect to the provider; body %s", target, p.status, p.location, p.body)
	}
	return p.location
}

// signIn runs a whole provider sign-in and returns hmid's answer to the callback.
func (b *browser) signIn(slug, returnTo string) page {
	b.t.Helper()
	cb := upstreamtest.Consent(b.t, b.start(slug, returnTo))
	return b.get(cb.String())
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
var stateRE = regexp.MustCompile(`name="state" value="([^"]+)"`)

func formField(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return m[1]
}

// userOf returns the user id of the platform account (slug, subject), "" when none.
func userOf(t *testing.T, e *apptest.Env, slug, subject string) string {
	t.Helper()
	var id string
	_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT pa.user_id FROM platform_accounts pa JOIN platforms p ON p.id = pa.platform_id
		WHERE p.slug = $1 AND pa.platform_user_id = $2`, slug, subject).Scan(&id)
	return id
}

func TestProviderSignInCreatesThenFinds(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		f.discord.SetPerson(upstreamtest.Person{Subject: "1001", Username: "nelly", Name: "Nelly", Email: "Nelly@Example.test", EmailVerified: true})
		b := newBrowser(t, e)
		// The login page offers every configured provider, in order.
		login := b.get("/login")
		for _, want := range []string{"Sign in with Discord", "Sign in with Twitch", "Sign in with GitHub", "Sign in with Acme SSO"} {
			if !strings.Contains(login.body, want) {
				t.Errorf("login page lacks %q", want)
			}
		}
		p := b.signIn("discord", "")
		if p.status != http.StatusSeeOther || p.location != "/" {
			t.Fatalf("callback: %d %q; body %s", p.status, p.location, p.body)
		}
		if b.cookie("hmid_session", "/") == "" {
			t.Fatal("no session cookie after the sign-in")
		}
		id := userOf(t, e, "discord", "1001")
		if id == "" {
			t.Fatal("no platform account created")
		}
		if home := b.get("/"); home.status != http.StatusSeeOther || home.location != "/account" {
			t.Errorf("/ signed in: %d %q, want a redirect to /account", home.status, home.location)
		}
		if acct := b.get("/account"); !strings.Contains(acct.body, "nelly") {
			t.Errorf("the account page does not name the user: %s", acct.body)
		}
		var email string
		_ = e.Server.DB.QueryRowContext(context.Background(), `SELECT email FROM users WHERE id = $1`, id).Scan(&email)
		if email != "nelly@example.test" {
			t.Errorf("user email = %q", email)
		}
		for _, typ := range []string{"user_created", "login", "session_created"} {
			if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = $2 AND metadata LIKE '%"provider":"discord"%'`, id, typ); n != 1 {
				t.Errorf("%s events with provider discord = %d, want 1", typ, n)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND provider = 'discord'`, id); n != 1 {
			t.Errorf("sessions with provider discord = %d", n)
		}

		// A second sign-in, in another browser, finds the same user.
		b2 := newBrowser(t, e)
		if p := b2.signIn("discord", ""); p.status != http.StatusSeeOther {
			t.Fatalf("second sign-in: %d %s", p.status, p.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users`); n != 1 {
			t.Errorf("users = %d after two sign-ins of one account, want 1", n)
		}
	})
}

func TestProviderSignInLinkingRule(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		// An existing user whose address is verified on their email login.
		owner := e.NewUser(t, apptest.UserSpec{Email: "owner@example.test"})

		// The owner turned avatars off: none is stored from the provider.
		execSQL(t, e, `UPDATE users SET avatars_enabled = FALSE WHERE id = $1`, owner.ID)
		// A provider that vouches for the address links to that user.
		f.github.SetPerson(upstreamtest.Person{Subject: "42", Username: "octo", Email: "owner@example.test", EmailVerified: true})
		if p := newBrowser(t, e).signIn("github", ""); p.status != http.StatusSeeOther {
			t.Fatalf("verified sign-in: %d %s", p.status, p.body)
		}
		if got := userOf(t, e, "github", "42"); got != owner.ID {
			t.Fatalf("verified address linked to %q, want the owner %q", got, owner.ID)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_linked' AND metadata LIKE '%"provider":"github"%'`, owner.ID); n != 1 {
			t.Errorf("account_linked events = %d", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND avatar_url IS NOT NULL`, owner.ID); n != 0 {
			t.Errorf("an avatar was stored for a user with avatars off")
		}

		// An unverified address never links, and never takes the address.
		f.acme.SetPerson(upstreamtest.Person{Subject: "acme-7", Username: "mallory", Email: "owner@example.test", EmailVerified: false})
		if p := newBrowser(t, e).signIn("acme", ""); p.status != http.StatusSeeOther {
			t.Fatalf("unverified sign-in: %d %s", p.status, p.body)
		}
		other := userOf(t, e, "acme", "acme-7")
		if other == "" || other == owner.ID {
			t.Fatalf("unverified address: user %q (owner %q), want a new user", other, owner.ID)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE LOWER(email) = 'owner@example.test'`); n != 1 {
			t.Errorf("users holding the address = %d, want 1", n)
		}
	})
}

// TestProviderSignInPreHijack: someone registers a victim's address with a
// password and never verifies it; the victim then signs in with a provider
// that vouches for the address. The victim gets an account of their own that
// owns the address; the earlier registration keeps its login (a user is never
// left without a platform account) but can neither verify the address nor
// reset its password by mail any more, its holder is told by mail, and the
// audit log of each says what happened.
func TestProviderSignInPreHijack(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		r := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "victim@example.test", "password": "squatter-password"}, http.StatusCreated)
		squatter := r.JSON()["user"].(map[string]any)["id"].(string)
		verifyTok := verifyTokenTo(t, e, "victim@example.test")

		f.acme.SetPerson(upstreamtest.Person{Subject: "victim-sub", Username: "victim", Email: "victim@example.test", EmailVerified: true})
		if p := newBrowser(t, e).signIn("acme", ""); p.status != http.StatusSeeOther {
			t.Fatalf("victim sign-in: %d %s", p.status, p.body)
		}
		victim := userOf(t, e, "acme", "victim-sub")
		if victim == "" || victim == squatter {
			t.Fatalf("victim's sign-in went to %q (squatter %q)", victim, squatter)
		}
		assertReleased(t, e, squatter, victim, "victim@example.test", "squatter-password")

		// The earlier verification link cannot give the address a second owner.
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": verifyTok}, http.StatusConflict)
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE LOWER(email) = 'victim@example.test' AND email_verified`); n != 1 {
			t.Errorf("verified holders of the address = %d, want 1", n)
		}
	})
}

// assertReleased checks what releasing the unverified registration holder
// made for owner, who verified addr with a provider sign-in, leaves: holder
// keeps a primary platform account and signs in with password, no longer
// holds addr as contact address, gets no reset mail for it, was mailed in
// their locale, and both audit logs say what happened.
func assertReleased(t *testing.T, e *apptest.Env, holder, owner, addr, password string) {
	t.Helper()
	if n := count(t, e, `SELECT COUNT(*) FROM users WHERE LOWER(email) = $1 AND id <> $2`, addr, owner); n != 0 {
		t.Errorf("another user still has the address as contact address")
	}
	if n := count(t, e, `SELECT COUNT(*) FROM users u JOIN platform_accounts pa ON pa.id = u.primary_platform_account_id AND pa.user_id = u.id AND pa.is_primary
		WHERE u.id = $1`, holder); n != 1 {
		t.Errorf("the earlier registration lost its primary platform account")
	}
	r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]any{"email": addr, "password": password}})
	if r.Status != http.StatusOK || r.JSON()["user"].(map[string]any)["id"] != holder {
		t.Errorf("password login of the earlier registration: %d %s", r.Status, r.Body)
	}
	mails := outbox(t, e, addr)
	if len(mails) == 0 || mails[0].Kind != mail.KindAddressVerifiedElsewhere {
		t.Fatalf("newest mail to %s: %+v, want %s", addr, mails, mail.KindAddressVerifiedElsewhere)
	}
	before := len(mails)
	e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": addr}, http.StatusOK)
	if n := len(outbox(t, e, addr)); n != before {
		t.Errorf("a password reset for the released login was mailed to the address's owner")
	}
	if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND metadata LIKE '%"change":"email_released"%'`, holder); n != 1 {
		t.Errorf("email_released events of the earlier registration = %d", n)
	}
	if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated' AND metadata LIKE '%"change":"unverified_registration_not_linked"%'`, owner); n != 1 {
		t.Errorf("unverified_registration_not_linked events of the owner = %d", n)
	}
	if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'account_unlinked'`); n != 0 {
		t.Errorf("account_unlinked events = %d, want none: nothing was unlinked", n)
	}
	everyUserHasLogin(t, e)
}

// everyUserHasLogin fails when any user is left without a platform account
// or without a primary one (spec 2: a user's last account is never removed).
func everyUserHasLogin(t *testing.T, e *apptest.Env) {
	t.Helper()
	if n := count(t, e, `SELECT COUNT(*) FROM users u WHERE u.primary_platform_account_id IS NULL
		OR NOT EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.id = u.primary_platform_account_id AND pa.user_id = u.id)`); n != 0 {
		t.Errorf("%d users have no primary platform account", n)
	}
}

func TestProviderSignInStateChecks(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		b := newBrowser(t, e)
		cb := upstreamtest.Consent(t, b.start("discord", ""))

		// The callback opened in another browser (no binding cookie): refused, not consumed.
		if p := newBrowser(t, e).get(cb.String()); p.status != http.StatusBadRequest || !strings.Contains(p.body, "not started in this browser") {
			t.Errorf("other browser: %d %s", p.status, p.body)
		}
		// A forged state, a huge one, none at all.
		for _, q := range []string{"?code=x&state=" + strings.Repeat("A", 43), "?code=x&state=" + strings.Repeat("A", 100_000), "?code=x", "?state=&code="} {
			if p := b.get("/login/discord/callback" + q); p.status != http.StatusBadRequest {
				t.Errorf("callback %.40s: %d, want 400", q, p.status)
			}
		}
		// The real callback still works once, then is a replay.
		if p := b.get(cb.String()); p.status != http.StatusSeeOther {
			t.Fatalf("callback: %d %s", p.status, p.body)
		}
		if p := b.get(cb.String()); p.status != http.StatusBadRequest || !strings.Contains(p.body, "already completed") {
			t.Errorf("replay: %d %s", p.status, p.body)
		}

		// Expired: more than ten minutes between start and callback.
		b3 := newBrowser(t, e)
		cb3 := upstreamtest.Consent(t, b3.start("discord", ""))
		e.Clock.Advance(11 * time.Minute)
		if p := b3.get(cb3.String()); p.status != http.StatusBadRequest || !strings.Contains(p.body, "ten minutes") {
			t.Errorf("expired: %d %s", p.status, p.body)
		}
		// Unknown provider.
		if p := b.get("/login/nope"); p.status != http.StatusNotFound {
			t.Errorf("unknown provider: %d", p.status)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions`); n != 1 {
			t.Errorf("sessions = %d, want only the one real sign-in", n)
		}
	})
}

func TestProviderSignInProviderFailures(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		e.Server.Upstream.SetTimeout(time.Second)
		b := newBrowser(t, e)

		// Consent denied at the provider.
		f.discord.Set(func() { f.discord.Deny = true })
		if p := b.signIn("discord", ""); p.status != http.StatusForbidden || !strings.Contains(p.body, "cancelled") {
			t.Errorf("denied: %d %s", p.status, p.body)
		}
		f.discord.Set(func() { f.discord.Deny = false })
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'login_failed' AND metadata LIKE '%"provider":"discord"%'`); n != 1 {
			t.Errorf("login_failed events = %d, want 1", n)
		}

		// The token endpoint fails, answers junk, or is slower than the timeout.
		failures := map[string]http.HandlerFunc{
			"500": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) },
			"junk": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte("{not json"))
			},
			"slow": func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			},
		}
		for name, h := range failures {
			f.discord.Fail("/token", h)
			if p := b.signIn("discord", ""); p.status != http.StatusBadGateway || !strings.Contains(p.body, "did not answer as expected") {
				t.Errorf("token %s: %d %s", name, p.status, p.body)
			}
		}
		f.discord.Fail("/token", nil)
		// The user API answers junk.
		f.discord.Fail("/api/users/@me", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`[1,2`)) })
		if p := b.signIn("discord", ""); p.status != http.StatusBadGateway {
			t.Errorf("junk user API: %d %s", p.status, p.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users`) + count(t, e, `SELECT COUNT(*) FROM sessions`); n != 0 {
			t.Errorf("failed sign-ins left %d users and sessions", n)
		}
	})
}

func TestProviderSignInPlatformRules(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		// A disabled platform: no button, the start is refused, and so is a
		// callback of a sign-in started before it was turned off.
		b := newBrowser(t, e)
		cb := upstreamtest.Consent(t, b.start("twitch", ""))
		execSQL(t, e, `UPDATE platforms SET enabled = FALSE WHERE slug = 'twitch'`)
		if strings.Contains(b.get("/login").body, "Sign in with Twitch") {
			t.Error("the login page offers a disabled platform")
		}
		if p := b.get("/login/twitch"); p.status != http.StatusForbidden {
			t.Errorf("start on a disabled platform: %d", p.status)
		}
		if p := b.get(cb.String()); p.status != http.StatusForbidden {
			t.Errorf("callback on a disabled platform: %d", p.status)
		}

		// Registration closed: a new user is refused, an existing one gets in.
		f.github.SetPerson(upstreamtest.Person{Subject: "7", Username: "known", Email: "known@example.test", EmailVerified: true})
		if p := newBrowser(t, e).signIn("github", ""); p.status != http.StatusSeeOther {
			t.Fatalf("first github sign-in: %d %s", p.status, p.body)
		}
		// Avatars are on by default: the provider's picture is stored.
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE avatar_url LIKE 'https://%'`); n != 1 {
			t.Errorf("users with the provider's avatar = %d, want 1", n)
		}
		execSQL(t, e, `UPDATE platforms SET registration_enabled = FALSE WHERE slug = 'github'`)
		if p := newBrowser(t, e).signIn("github", ""); p.status != http.StatusSeeOther {
			t.Errorf("existing user with registration closed: %d %s", p.status, p.body)
		}
		f.github.SetPerson(upstreamtest.Person{Subject: "8", Username: "newcomer", Email: "new@example.test", EmailVerified: true})
		if p := newBrowser(t, e).signIn("github", ""); p.status != http.StatusForbidden || !strings.Contains(p.body, "registration") {
			t.Errorf("new user with registration closed: %d %s", p.status, p.body)
		}
		if userOf(t, e, "github", "8") != "" {
			t.Error("a new user was created while registration is closed")
		}

		// A banned user: 403, no session, login_failed with the provider.
		known := userOf(t, e, "github", "7")
		execSQL(t, e, `INSERT INTO bans (id, user_id, reason, banned_at, is_permanent) VALUES ('ban-1', $1, 'spam', 0, TRUE)`, known)
		f.github.SetPerson(upstreamtest.Person{Subject: "7", Username: "known", Email: "known@example.test", EmailVerified: true})
		execSQL(t, e, `UPDATE platforms SET registration_enabled = TRUE WHERE slug = 'github'`)
		before := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, known)
		bb := newBrowser(t, e)
		if p := bb.signIn("github", ""); p.status != http.StatusForbidden || !strings.Contains(p.body, "Your account is blocked permanently. Reason given: spam") {
			t.Errorf("banned: %d %s", p.status, p.body)
		}
		if bb.cookie("hmid_session", "/") != "" || count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, known) != before {
			t.Error("a banned user got a session")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'login_failed' AND metadata LIKE '%"provider":"github"%'`, known); n != 1 {
			t.Errorf("login_failed of the banned user = %d", n)
		}
	})
}

func TestProviderSignInTwoFactor(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		u := e.NewUser(t, apptest.UserSpec{Email: "tf@example.test"})
		secret, _ := tfEnable(t, e, u)
		f.discord.SetPerson(upstreamtest.Person{Subject: "2002", Username: "tf", Email: "tf@example.test", EmailVerified: true})
		// The next time step: the code of the enabling step is used up (replay protection).
		e.Clock.Advance(30 * time.Second)
		b := newBrowser(t, e)
		p := b.signIn("discord", "/")
		if p.status != http.StatusOK || !strings.Contains(p.body, `name="code"`) {
			t.Fatalf("want the code step, got %d %s", p.status, p.body)
		}
		if b.cookie("hmid_session", "/") != "" {
			t.Fatal("a session before the second factor")
		}
		form := url.Values{"csrf_token": {formField(t, csrfRE, p.body)}, "state": {formField(t, stateRE, p.body)}, "return_to": {"/"},
			"code": {tfCode(t, secret, e.Clock.Now())}}
		done := b.do("POST", "/login", form)
		if done.status != http.StatusSeeOther || b.cookie("hmid_session", "/") == "" {
			t.Fatalf("code step: %d %s", done.status, done.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND provider = 'discord'`, u.ID); n != 1 {
			t.Errorf("discord sessions = %d", n)
		}
	})
}

func TestProviderConnectSecondAccount(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		f.discord.SetPerson(upstreamtest.Person{Subject: "3003", Username: "multi", Email: "multi@example.test", EmailVerified: true})
		b := newBrowser(t, e)
		if p := b.signIn("discord", ""); p.status != http.StatusSeeOther {
			t.Fatalf("sign-in: %d %s", p.status, p.body)
		}
		user := userOf(t, e, "discord", "3003")
		// The connect buttons are on /account/linked, with the console's token.
		linked := b.get("/account/linked")
		if !strings.Contains(linked.body, "Connect GitHub") || !strings.Contains(linked.body, `name="return_to" value="/account/linked"`) {
			t.Fatalf("the linked-accounts page offers no connect button: %s", linked.body)
		}
		// Without the CSRF token the connect is refused.
		if p := b.do("POST", "/login/github", url.Values{}); p.status != http.StatusForbidden {
			t.Errorf("connect without CSRF: %d", p.status)
		}
		f.github.SetPerson(upstreamtest.Person{Subject: "99", Username: "multi-gh", Email: "other@example.test", EmailVerified: true})
		start := b.do("POST", "/login/github", url.Values{"csrf_token": {formToken(t, linked.body, "/login/github")}, "return_to": {"/account/linked"}})
		if start.status != http.StatusSeeOther {
			t.Fatalf("connect: %d %s", start.status, start.body)
		}
		p := b.get(upstreamtest.Consent(t, start.location).String())
		if p.status != http.StatusOK || !strings.Contains(p.body, "is now connected") {
			t.Fatalf("connect callback: %d %s", p.status, p.body)
		}
		// "Continue" leads back to the page the connect started from.
		if !strings.Contains(p.body, `href="/account/linked"`) {
			t.Errorf("the connected page does not lead back to /account/linked: %s", p.body)
		}
		if got := userOf(t, e, "github", "99"); got != user {
			t.Errorf("github account on %q, want %q", got, user)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_linked' AND metadata LIKE '%"provider":"github"%'`, user); n != 1 {
			t.Errorf("account_linked = %d", n)
		}
		if after := b.get("/account/linked"); !strings.Contains(after.body, "multi-gh") {
			t.Errorf("the linked-accounts page does not list the new account: %s", after.body)
		}

		// A second GitHub account cannot be added to a user who has one.
		f.github.SetPerson(upstreamtest.Person{Subject: "100", Username: "multi-gh2"})
		// (Every console form of a page carries the same token, and the page
		// offers no GitHub button any more: take the first one of the page.)
		body := b.get("/account/linked").body
		start = b.do("POST", "/login/github", url.Values{"csrf_token": {formField(t, csrfRE, body[strings.Index(body, `id="main"`):])}})
		if p := b.get(upstreamtest.Consent(t, start.location).String()); p.status != http.StatusConflict ||
			!strings.Contains(p.body, "already has a GitHub account connected") {
			t.Errorf("a second account of one platform: %d %s", p.status, p.body)
		} else {
			connectRefused(t, p, "Account not connected")
		}

		// The same GitHub account cannot be connected to a second user.
		f.github.SetPerson(upstreamtest.Person{Subject: "99", Username: "multi-gh", Email: "other@example.test", EmailVerified: true})
		other := newBrowser(t, e)
		f.discord.SetPerson(upstreamtest.Person{Subject: "4004", Username: "second"})
		if p := other.signIn("discord", ""); p.status != http.StatusSeeOther {
			t.Fatalf("second user: %d", p.status)
		}
		start = other.do("POST", "/login/github", url.Values{"csrf_token": {formToken(t, other.get("/account/linked").body, "/login/github")}, "return_to": {"/account/linked"}})
		if p := other.get(upstreamtest.Consent(t, start.location).String()); p.status != http.StatusConflict ||
			!strings.Contains(p.body, "already connected to another user") || !strings.Contains(p.body, `href="/account/linked"`) {
			t.Errorf("connecting a taken account: %d %s", p.status, p.body)
		} else {
			connectRefused(t, p, "Account not connected")
		}
		// The same in German.
		other.lang = "de-DE,de;q=0.9"
		start = other.do("POST", "/login/github", url.Values{"csrf_token": {formToken(t, other.get("/account/linked").body, "/login/github")}, "return_to": {"/account/linked"}})
		if p := other.get(upstreamtest.Consent(t, start.location).String()); p.status != http.StatusConflict ||
			!strings.Contains(p.body, "bereits mit einer anderen Person verbunden") {
			t.Errorf("connecting a taken account, in German: %d %s", p.status, p.body)
		} else {
			connectRefused(t, p, "Konto nicht verbunden")
		}
		if got := userOf(t, e, "github", "99"); got != user {
			t.Errorf("after the refusals the github account is on %q, want %q", got, user)
		}
	})
}

// connectRefused checks the page of a refused connect: titled that the
// account was not connected, the reason in the alert box (role alert), and
// neither the green box of a success nor the generic "Something went wrong".
func connectRefused(t *testing.T, p page, title string) {
	t.Helper()
	if !strings.Contains(p.body, `<h1 id="page-title">`+title+`</h1>`) {
		t.Errorf("the refusal is not titled %q: %s", title, p.body)
	}
	if !strings.Contains(p.body, `<p class="alert" role="alert">`) || strings.Contains(p.body, `class="notice"`) {
		t.Errorf("the refusal is not in the alert box: %s", p.body)
	}
	if strings.Contains(p.body, "Something went wrong") || strings.Contains(p.body, "schiefgegangen") {
		t.Errorf("the refusal says only that something went wrong: %s", p.body)
	}
}

// TestProviderSignInResumesAuthorize: an OAuth authorization request that
// sends the browser to the login page survives the detour to a provider.
func TestProviderSignInResumesAuthorize(t *testing.T) {
	t.Parallel()
	eachWithFakes(t, func(t *testing.T, e *apptest.Env, f *fakes) {
		owner := e.NewUser(t, apptest.UserSpec{})
		r := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
			"name": "Resume App", "redirect_uris": []string{"https://app.example.test/cb"},
		}, http.StatusCreated)
		data := r.JSON()["data"].(map[string]any)
		clientID, _ := data["id"].(string)
		if cid, ok := data["client_id"].(string); ok && cid != "" {
			clientID = cid
		}
		b := newBrowser(t, e)
		authz := "/v1/oauth/authorize?response_type=code&client_id=" + url.QueryEscape(clientID) +
			"&redirect_uri=" + url.QueryEscape("https://app.example.test/cb") + "&scope=openid&state=xyz"
		p := b.get(authz)
		if p.status/100 != 3 || !strings.Contains(p.location, "/login") {
			t.Fatalf("authorize without session: %d %q", p.status, p.location)
		}
		loginURL, _ := url.Parse(p.location)
		returnTo := loginURL.Query().Get("return_to")
		login := b.get(loginURL.RequestURI())
		if !strings.Contains(login.body, "/login/discord?return_to=") {
			t.Fatalf("the provider button does not keep return_to: %s", login.body)
		}
		done := b.signIn("discord", returnTo)
		if done.status != http.StatusSeeOther || !strings.HasPrefix(done.location, "/v1/oauth/authorize?") {
			t.Fatalf("after the provider: %d %q, want back to the authorize request", done.status, done.location)
		}
		next := b.get(done.location)
		if next.status/100 != 3 || !strings.Contains(next.location, "consent") {
			t.Fatalf("resumed authorize: %d %q %.600s", next.status, next.location, next.body)
		}
	})
}
