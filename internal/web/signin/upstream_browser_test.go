package signin_test

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/clock/clocktest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/upstream/upstreamtest"
)

// providerRig is hmid with three sign-in providers, all fakes: Discord,
// GitHub and a generic OpenID Connect provider "acme" labelled "Acme SSO".
type providerRig struct {
	e       *apptest.Env
	acme    *upstreamtest.OIDC
	discord *upstreamtest.Provider
	github  *upstreamtest.Provider
}

// newProviderRig starts the fakes, then hmid configured against them.
//
// The OIDC fake stamps its ID tokens (iat, exp five minutes later) with
// hmid's own fake clock. That clock stands at apptest.Start, behind the wall
// clock, so a token it stamps has expired for anyone reading the wall
// clock: the sign-ins pass only because hmid's provider registry reads the
// same fake clock (wire_web.go sets it), as a real deployment reads one
// wall clock on both sides.
func newProviderRig(t *testing.T, eng dbtest.Engine) *providerRig {
	t.Helper()
	// The fake's server goroutines read the clock, which exists only once
	// hmid has started with the fakes' addresses: hand it over atomically.
	var clk atomic.Pointer[clocktest.Fake]
	acme := upstreamtest.NewOIDC(t, func() time.Time { return clk.Load().Now() })
	discord, github := upstreamtest.NewDiscord(t), upstreamtest.NewGitHub(t)
	env := upstreamtest.Merge(acme.Env("acme"), discord.Env("discord"), github.Env("github"),
		map[string]string{"HMID_LOGIN_ACME_NAME": "Acme SSO"})
	e := apptest.New(t, eng, func(c *config.Config) { c.LoginEnv = func(k string) string { return env[k] } })
	clk.Store(e.Clock)
	return &providerRig{e: e, acme: acme, discord: discord, github: github}
}

// usersNamed lists the users whose username, name or email contains s, as
// the system key sees them.
func usersNamed(t *testing.T, e *apptest.Env, s string) []map[string]any {
	t.Helper()
	r := e.Call(t, "GET", "/v1/users?limit=100&search="+url.QueryEscape(s), e.SystemKey, nil, http.StatusOK)
	var out []map[string]any
	for _, u := range r.JSON()["data"].([]any) {
		out = append(out, u.(map[string]any))
	}
	return out
}

// userCount is the number of (not deleted) users.
func userCount(t *testing.T, e *apptest.Env) int {
	t.Helper()
	r := e.Call(t, "GET", "/v1/users?limit=1", e.SystemKey, nil, http.StatusOK)
	return int(r.JSON()["pagination"].(map[string]any)["total"].(float64))
}

// accounts lists the user's platform accounts.
func accounts(t *testing.T, e *apptest.Env, userID string) []map[string]any {
	t.Helper()
	r := e.Call(t, "GET", "/v1/users/"+userID+"/accounts", e.SystemKey, nil, http.StatusOK)
	var out []map[string]any
	for _, a := range r.JSON()["data"].([]any) {
		out = append(out, a.(map[string]any))
	}
	return out
}

// auditEvents lists the user's audit events, oldest first.
func auditEvents(t *testing.T, e *apptest.Env, userID string) []map[string]any {
	t.Helper()
	r := e.Call(t, "GET", "/v1/admin/audit?limit=100&sort_direction=asc&user_id="+url.QueryEscape(userID),
		e.SystemKey, nil, http.StatusOK)
	var out []map[string]any
	for _, ev := range r.JSON()["events"].([]any) {
		out = append(out, ev.(map[string]any))
	}
	return out
}

// TestBrowserProviderSignIn signs a new person in through a generic OpenID
// Connect provider in Chromium: the login page offers every configured
// provider, the fake approves at once and redirects back, and the browser
// lands on the home page signed in as the user the sign-in created, which
// lists Acme SSO as connected and offers to connect the others. The user
// has the provider's account and the audit trail of a first sign-in.
func TestBrowserProviderSignIn(t *testing.T) {
	t.Parallel()
	needChromium(t)
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		rig := newProviderRig(t, eng)
		e := rig.e
		rig.acme.SetPerson(upstreamtest.Person{Subject: "acme-42", Username: "ada_l", Name: "Ada Lovelace",
			Email: "ada@acme.example", EmailVerified: true})
		b := newChromium(t)
		b.language("en")

		b.do("open the login page", chromedp.Navigate(e.URL+"/login"), chromedp.WaitVisible(chromedp.CSS(`ul.providers`)))
		if got, want := b.text(`ul.providers`), "Sign in with Discord\nSign in with GitHub\nSign in with Acme SSO"; got != want {
			t.Fatalf("provider buttons %q, want %q", got, want)
		}
		if users := userCount(t, e); users != 0 {
			t.Fatalf("%d users before the sign-in", users)
		}
		b.do("sign in with Acme SSO", chromedp.Click(chromedp.CSS(`a.provider-acme`)),
			chromedp.WaitVisible(chromedp.CSS(`form[action="/logout"]`)))
		if at := b.location(); at != e.URL+"/account" {
			t.Fatalf("landed on %s, want the account console", at)
		}
		home := b.text(`.whoami`)
		b.do("open the linked accounts", chromedp.Navigate(e.URL+"/account/linked"), chromedp.WaitVisible(chromedp.CSS(`ul.providers`)))
		if got, want := b.linkedNames(), "Acme SSO"; got != want {
			t.Errorf("connected accounts %q, want %q", got, want)
		}
		if got, want := b.text(`ul.providers`), "Connect Discord\nConnect GitHub"; got != want {
			t.Errorf("connect buttons %q, want %q", got, want)
		}

		found := usersNamed(t, e, "ada")
		if len(found) != 1 || userCount(t, e) != 1 {
			t.Fatalf("users after the sign-in: %v (of %d)", found, userCount(t, e))
		}
		u := found[0]
		id, name := u["id"].(string), u["username"].(string)
		if name != "ada_l" || u["email"] != "ada@acme.example" {
			t.Fatalf("created user %v", u)
		}
		if home != name {
			t.Fatalf("the account console names %q, want %s", home, name)
		}
		accts := accounts(t, e, id)
		if len(accts) != 1 || accts[0]["platform_slug"] != "acme" || accts[0]["platform_user_id"] != "acme-42" ||
			accts[0]["platform_name"] != "Acme SSO" || accts[0]["is_primary"] != true {
			t.Fatalf("platform accounts %v", accts)
		}
		var types []string
		for _, ev := range auditEvents(t, e, id) {
			types = append(types, ev["event_type"].(string))
			if md, _ := ev["metadata"].(map[string]any); md["provider"] != "acme" || ev["source_service"] != "id" || ev["status"] != "success" {
				t.Errorf("audit event %v", ev)
			}
		}
		for _, want := range []string{"user_created", "login", "session_created"} {
			if !slices.Contains(types, want) {
				t.Errorf("audit events %v lack %s", types, want)
			}
		}
	})
}

// TestBrowserProviderResumesAuthorize starts an OAuth authorization request
// without a session: the login page's Discord button keeps the request, and
// after the detour to Discord the browser comes back to it, then to the
// consent page, and with the approval to the client's redirect URI with a
// code the client redeems for the Discord user.
func TestBrowserProviderResumesAuthorize(t *testing.T) {
	t.Parallel()
	needChromium(t)
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		rig := newProviderRig(t, eng)
		e := rig.e
		owner := e.NewUser(t, apptest.UserSpec{})

		app := newOAuthApp(t, e, owner, "Provider Test App")
		redirectURI := app.redirectURI
		authorizeURL := app.authorizeURL(e, "openid profile", "st-77", "n-77")

		b := newChromium(t)
		b.language("en")
		b.do("open the authorize URL", chromedp.Navigate(authorizeURL), chromedp.WaitVisible(chromedp.CSS(`a.provider-discord`)))
		if at := b.location(); !strings.HasPrefix(at, e.URL+"/login?return_to=") {
			t.Fatalf("not sent to the login page: %s", at)
		}
		href, err := run(b, chromedp.AttributeValue(chromedp.CSS(`a.provider-discord`), "href"))
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := url.Parse(href.Value); back == nil || !strings.HasPrefix(back.Query().Get("return_to"), e.URL+"/v1/oauth/authorize?") {
			t.Fatalf("the Discord button forgets the authorization request: %q", href.Value)
		}
		b.do("sign in with Discord", chromedp.Click(chromedp.CSS(`a.provider-discord`)),
			chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
		if at := b.location(); !strings.HasPrefix(at, e.URL+"/consent?pending_authorization_id=") {
			t.Fatalf("after the detour the browser is at %s, want the consent page", at)
		}
		consent := b.text(`main`)
		if !strings.Contains(consent, "Provider Test App") || !strings.Contains(consent, "nelly") {
			t.Fatalf("consent page: %q", consent)
		}
		b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`#done`)))
		cb := app.callback(t)
		if at := b.location(); cb.code == "" || cb.state != "st-77" || cb.err != "" || !strings.HasPrefix(at, redirectURI+"?") {
			t.Fatalf("callback %+v at %s", cb, at)
		}

		at, _ := app.redeem(t, e, cb.code)["access_token"].(string)
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK).JSON()
		nelly := usersNamed(t, e, "nelly")
		if len(nelly) != 1 || ui["sub"] != nelly[0]["id"] {
			t.Fatalf("userinfo sub %v, Discord users %v", ui["sub"], nelly)
		}
		accts := accounts(t, e, nelly[0]["id"].(string))
		if len(accts) != 1 || accts[0]["platform_slug"] != "discord" || accts[0]["platform_user_id"] != "80351110224678912" {
			t.Fatalf("platform accounts %v", accts)
		}
	})
}

// TestBrowserProviderPages walks the provider pages in English and then
// German as a person would: the login page's localized buttons, Discord
// refusing (the person cancelled there) with the page that says so and its
// way back, then the sign-in, the linked accounts page's accounts and
// "Connect" buttons, connecting one more provider (Acme SSO in the first
// round, GitHub in the second), and logging out. With HMID_SCREENSHOTS set
// it saves each page for a person to look at.
func TestBrowserProviderPages(t *testing.T) {
	t.Parallel()
	needChromium(t)
	type round struct {
		lang, login, cancelled, denied, back string
		// connected and connect are the linked accounts page's list and buttons
		// before slug is connected, which then shows done and the list
		// after.
		connected, connect, slug, done, after, loggedOut string
	}
	rounds := []round{{
		lang: "en", login: "Sign in with Discord\nSign in with GitHub\nSign in with Acme SSO",
		cancelled: "Sign-in cancelled", denied: "You cancelled the sign-in at Discord.", back: "Back to login",
		connected: "Discord", connect: "Connect GitHub\nConnect Acme SSO",
		slug: "acme", done: "Your Acme SSO account is now connected.", after: "Discord\nAcme SSO", loggedOut: "You have been logged out.",
	}, {
		lang: "de", login: "Mit Discord anmelden\nMit GitHub anmelden\nMit Acme SSO anmelden",
		cancelled: "Anmeldung abgebrochen", denied: "Sie haben die Anmeldung bei Discord abgebrochen.", back: "Zurück zur Anmeldung",
		connected: "Discord\nAcme SSO", connect: "GitHub verbinden",
		slug: "github", done: "Ihr Konto bei GitHub ist jetzt verbunden.", after: "Discord\nGitHub\nAcme SSO", loggedOut: "Sie wurden abgemeldet.",
	}}
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		rig := newProviderRig(t, eng)
		e := rig.e
		b := newChromium(t)
		for i, l := range rounds {
			b.language(l.lang)
			b.do("open the login page", chromedp.Navigate(e.URL+"/login"), chromedp.WaitVisible(chromedp.CSS(`ul.providers`)))
			if got := b.text(`ul.providers`); got != l.login {
				t.Fatalf("%s: provider buttons %q, want %q", l.lang, got, l.login)
			}
			b.shot("login-" + l.lang)

			rig.discord.Set(func() { rig.discord.Deny = true })
			b.do("sign in with Discord, refused", chromedp.Click(chromedp.CSS(`a.provider-discord`)),
				chromedp.WaitVisible(chromedp.CSS(`p.alert`)))
			if got := b.text(`h1`); got != l.cancelled {
				t.Errorf("%s: title of the refusal %q, want %q", l.lang, got, l.cancelled)
			}
			if msg := b.text(`main`); !strings.Contains(msg, l.denied) || !strings.Contains(msg, l.back) {
				t.Fatalf("%s: refusal page %q", l.lang, msg)
			}
			if i == 0 && userCount(t, e) != 0 {
				t.Fatalf("a refused sign-in created a user")
			}
			b.shot("denied-" + l.lang)
			b.do("back to the login page", chromedp.Click(chromedp.CSS(`nav.links a`)), chromedp.WaitVisible(chromedp.CSS(`a.provider-discord`)))

			rig.discord.Set(func() { rig.discord.Deny = false })
			b.do("sign in with Discord", chromedp.Click(chromedp.CSS(`a.provider-discord`)),
				chromedp.WaitVisible(chromedp.CSS(`form[action="/logout"]`)))
			b.do("open the linked accounts", chromedp.Navigate(e.URL+"/account/linked"), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
			if got := b.linkedNames(); got != sortedLines(l.connected) {
				t.Fatalf("%s: connected accounts %q, want %q", l.lang, got, l.connected)
			}
			if got := b.text(`ul.providers`); got != l.connect {
				t.Fatalf("%s: connect buttons %q, want %q", l.lang, got, l.connect)
			}
			b.shot("linked-" + l.lang)

			b.do("connect "+l.slug, chromedp.Click(chromedp.CSS(`button.provider-`+l.slug)), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
			if msg := b.text(`main`); !strings.Contains(msg, l.done) {
				t.Fatalf("%s: after connecting: %q", l.lang, msg)
			}
			b.shot("connected-" + l.lang)
			b.do("continue", chromedp.Click(chromedp.CSS(`nav.links a`)), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
			if got := b.linkedNames(); got != sortedLines(l.after) {
				t.Fatalf("%s: connected accounts after connecting %s: %q, want %q", l.lang, l.slug, got, l.after)
			}
			b.do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
			if msg := b.text(`main`); !strings.Contains(msg, l.loggedOut) {
				t.Fatalf("%s: after logging out: %q", l.lang, msg)
			}
		}
		nelly := usersNamed(t, e, "nelly@discord.example")
		if len(nelly) != 1 || userCount(t, e) != 1 {
			t.Fatalf("users %v (of %d), want the Discord user alone", nelly, userCount(t, e))
		}
		var slugs []string
		for _, a := range accounts(t, e, nelly[0]["id"].(string)) {
			slugs = append(slugs, a["platform_slug"].(string)+":"+a["platform_user_id"].(string))
		}
		slices.Sort(slugs)
		if want := []string{"acme:oidc-user-1", "discord:80351110224678912", "github:583231"}; !slices.Equal(slugs, want) {
			t.Fatalf("accounts %v, want %v", slugs, want)
		}
	})
}

// linkedNames is the platforms of /account/linked's table, sorted, one a line.
func (b *chromium) linkedNames() string {
	b.t.Helper()
	names, err := run(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.list tbody td strong")).map(e => e.textContent.trim())`))
	if err != nil {
		b.fail("linked accounts", err)
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}

// sortedLines sorts the lines of s.
func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}
