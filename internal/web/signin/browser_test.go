package signin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// chromium is one headless Chromium tab driven by a test.
type chromium struct {
	t   *testing.T
	ctx context.Context
}

// needChromium skips the test when no Chromium is installed.
func needChromium(t *testing.T) {
	t.Helper()
	if webtest.ChromiumPath() == "" {
		t.Skip("no Chromium found (install the chromium package to run the browser tests)")
	}
}

// newChromium starts Chromium with a profile of its own, so no cookie
// outlives the test, showing pages at desktop size.
func newChromium(t *testing.T) *chromium {
	t.Helper()
	b := &chromium{t: t, ctx: webtest.Chromium(t)}
	b.do("desktop viewport", desktop())
	return b
}

// stepTimeout bounds one step: a navigation through hmid and a fake
// provider takes well under a second.
const stepTimeout = 20 * time.Second

// run runs a with the step timeout.
func run[T any](b *chromium, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// fail ends the test with what it was doing and the page the browser
// shows, which usually says why the expected one did not come.
func (b *chromium) fail(what string, err error) {
	b.t.Helper()
	at, _ := run(b, chromedp.Location())
	shown, _ := run(b, chromedp.Text(chromedp.CSS(`body`)))
	b.t.Fatalf("browser, %s: %v\nat %s, showing:\n%.600s", what, err, at, shown)
}

// desktop and phone are the two viewports the pages are looked at in: a
// laptop screen, and a phone held upright (CSS pixels of an iPhone 13/14).
func desktop() chromedp.Action[chromedp.Void] { return chromedp.EmulateViewport(1280, 800) }

func phone() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateTouch)
}

// do runs actions, failing the test with what it was doing.
func (b *chromium) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if _, err := run(b, chromedp.Steps(actions...)); err != nil {
		b.fail(what, err)
	}
}

// text is the visible text of the first element matching sel.
func (b *chromium) text(sel string) string {
	b.t.Helper()
	v, err := run(b, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.fail("text of "+sel, err)
	}
	return v
}

// location is the address of the page shown.
func (b *chromium) location() string {
	b.t.Helper()
	v, err := run(b, chromedp.Location())
	if err != nil {
		b.t.Fatalf("browser, location: %v", err)
	}
	return v
}

// language makes every later request ask for tag first (Accept-Language,
// which picks the pages' language; RFC 9110 §12.5.4).
func (b *chromium) language(tag string) {
	b.t.Helper()
	b.do("set Accept-Language "+tag, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": tag}})
		return err
	}))
}

// colorScheme makes the pages see prefers-color-scheme as scheme ("light"
// or "dark"; the stylesheet has a theme for each).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// shot saves the page shown as <dir>/<name>-desktop.png, <name>-phone.png
// and, in the dark theme, <name>-phone-dark.png, whole pages, when
// HMID_SCREENSHOTS names a directory: a person looks at them (layout,
// contrast, wording); tests cannot.
func (b *chromium) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("HMID_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	for _, view := range []struct {
		name string
		set  chromedp.Action[chromedp.Void]
	}{{"desktop", chromedp.Steps(colorScheme("light"), desktop())}, {"phone", phone()},
		{"phone-dark", colorScheme("dark")}} {
		b.do("viewport "+view.name, view.set)
		png, err := run(b, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatalf("browser, screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+view.name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do("viewport desktop", colorScheme("light"), desktop())
}

// callback is what an OAuth client's redirect URI was called with.
type callback struct{ code, state, err string }

// oauthApp is a confidential OAuth client whose redirect URI is a page of
// the test's own server, which hands on what it is called with.
type oauthApp struct {
	id, secret, redirectURI string
	got                     chan callback
}

// newOAuthApp registers the app name, owned by owner.
func newOAuthApp(t *testing.T, e *apptest.Env, owner apptest.User, name string) *oauthApp {
	t.Helper()
	a := &oauthApp{got: make(chan callback, 1)}
	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		select {
		case a.got <- callback{q.Get("code"), q.Get("state"), q.Get("error")}:
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>client</title><p id="done">signed in</p>`)
	}))
	t.Cleanup(client.Close)
	a.redirectURI = client.URL + "/cb"
	data := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
		"name": name, "redirect_uris": []string{a.redirectURI},
	}, http.StatusCreated).JSON()["data"].(map[string]any)
	a.id, _ = data["id"].(string)
	a.secret, _ = data["client_secret"].(string)
	if a.id == "" || a.secret == "" {
		t.Fatalf("client registration: %v", data)
	}
	return a
}

// callback waits for the browser to reach the redirect URI.
func (a *oauthApp) callback(t *testing.T) callback {
	t.Helper()
	select {
	case cb := <-a.got:
		return cb
	case <-time.After(5 * time.Second):
		t.Fatal("the client's redirect URI was not reached")
		return callback{}
	}
}

// authorizeURL is the app's authorization request for scope, with state
// and nonce, on e's server.
func (a *oauthApp) authorizeURL(e *apptest.Env, scope, state, nonce string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {a.id}, "redirect_uri": {a.redirectURI},
		"scope": {scope}, "state": {state}, "nonce": {nonce}}
	return e.URL + "/v1/oauth/authorize?" + q.Encode()
}

// redeem exchanges the authorization code at the token endpoint, as the
// app's server does, and returns the token answer.
func (a *oauthApp) redeem(t *testing.T, e *apptest.Env, code string) map[string]any {
	t.Helper()
	tr := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirectURI},
		"client_id": {a.id}, "client_secret": {a.secret},
	}})
	if tr.Status != http.StatusOK {
		t.Fatalf("token: %d %s", tr.Status, tr.Body)
	}
	return tr.JSON()
}

// TestBrowserAuthorizationCodeFlow drives a real headless Chromium through
// the whole sign-in of a confidential OAuth client: the authorize URL sends
// the browser to the login page, the login returns it to authorize, which
// sends it to the consent page; approving lands on the client's redirect URI
// with a code, which the client redeems at the token endpoint.
func TestBrowserAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	needChromium(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{Password: pw})

		app := newOAuthApp(t, e, owner, "Browser Test App")
		redirectURI := app.redirectURI
		authorizeURL := app.authorizeURL(e, "openid profile email", "xyz-state", "n-1")

		b := newChromium(t)
		b.do("open the authorize URL", chromedp.Navigate(authorizeURL), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		loginURL := b.location()
		b.do("log in",
			chromedp.SendKeys(chromedp.CSS(`#email`), u.Email),
			chromedp.SendKeys(chromedp.CSS(`#password`), pw),
			chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
		consentText := b.text(`main`)
		b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`#done`)))
		finalURL := b.location()
		if !strings.HasPrefix(loginURL, e.URL+"/login?return_to=") {
			t.Fatalf("not sent to the login page: %s", loginURL)
		}
		if !strings.Contains(consentText, "Browser Test App") || !strings.Contains(consentText, "email") {
			t.Fatalf("consent page: %q", consentText)
		}
		cb := app.callback(t)
		if cb.code == "" || cb.state != "xyz-state" || cb.err != "" || !strings.HasPrefix(finalURL, redirectURI+"?") {
			t.Fatalf("callback %+v at %s", cb, finalURL)
		}

		tok := app.redeem(t, e, cb.code)
		at, _ := tok["access_token"].(string)
		if !strings.HasPrefix(at, "hm_at_") || tok["id_token"] == nil {
			t.Fatalf("token answer %v", tok)
		}
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK).JSON()
		if ui["sub"] != u.ID {
			t.Fatalf("userinfo sub %v, want %s", ui["sub"], u.ID)
		}
	})
}
