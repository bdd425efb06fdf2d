package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
)

// chromiumPath finds a Chromium or Chrome binary.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowserAuthorizationCodeFlow drives a real headless Chromium through
// the whole sign-in of a confidential OAuth client: the authorize URL sends
// the browser to the login page, the login returns it to authorize, which
// sends it to the consent page; approving lands on the client's redirect URI
// with a code, which the client redeems at the token endpoint.
func TestBrowserAuthorizationCodeFlow(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		t.Skip("no Chromium found (install the chromium package to run the browser test)")
	}
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{Password: pw})

		type callback struct{ code, state, err string }
		got := make(chan callback, 1)
		client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			select {
			case got <- callback{q.Get("code"), q.Get("state"), q.Get("error")}:
			default:
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>client</title><p id="done">signed in</p>`)
		}))
		defer client.Close()
		redirectURI := client.URL + "/cb"

		r := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
			"name": "Browser Test App", "redirect_uris": []string{redirectURI},
		}, http.StatusCreated)
		data := r.JSON()["data"].(map[string]any)
		clientID, _ := data["id"].(string)
		if cid, ok := data["client_id"].(string); ok && cid != "" {
			clientID = cid
		}
		secret, _ := data["client_secret"].(string)
		if clientID == "" || secret == "" {
			t.Fatalf("client registration: %s", r.Body)
		}

		q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
			"scope": {"openid profile email"}, "state": {"xyz-state"}, "nonce": {"n-1"}}
		authorizeURL := e.URL + "/v1/oauth/authorize?" + q.Encode()

		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chrome),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(t.TempDir()),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		defer cancelAlloc()
		ctx, cancelCtx := chromedp.NewContext(actx)
		defer cancelCtx()
		ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			if err := chromedp.Do(ctx, actions...); err != nil {
				t.Fatalf("browser, %s: %v", what, err)
			}
		}
		read := func(what string, a chromedp.Action[string]) string {
			t.Helper()
			v, err := chromedp.Run(ctx, a)
			if err != nil {
				t.Fatalf("browser, %s: %v", what, err)
			}
			return v
		}
		step("open the authorize URL", chromedp.Navigate(authorizeURL), chromedp.WaitVisible(css(`#email`)))
		loginURL := read("login page URL", chromedp.Location())
		step("log in",
			chromedp.SendKeys(css(`#email`), u.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)),
			chromedp.WaitVisible(css(`button[value=approve]`)))
		consentText := read("consent page", chromedp.Text(css(`main`)))
		step("approve", chromedp.Click(css(`button[value=approve]`)), chromedp.WaitVisible(css(`#done`)))
		finalURL := read("client page URL", chromedp.Location())
		if !strings.HasPrefix(loginURL, e.URL+"/login?return_to=") {
			t.Fatalf("not sent to the login page: %s", loginURL)
		}
		if !strings.Contains(consentText, "Browser Test App") || !strings.Contains(consentText, "email") {
			t.Fatalf("consent page: %q", consentText)
		}
		var cb callback
		select {
		case cb = <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("the client's redirect URI was not reached")
		}
		if cb.code == "" || cb.state != "xyz-state" || cb.err != "" || !strings.HasPrefix(finalURL, redirectURI+"?") {
			t.Fatalf("callback %+v at %s", cb, finalURL)
		}

		tr := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{
			"grant_type": {"authorization_code"}, "code": {cb.code}, "redirect_uri": {redirectURI},
			"client_id": {clientID}, "client_secret": {secret},
		}})
		if tr.Status != http.StatusOK {
			t.Fatalf("token: %d %s", tr.Status, tr.Body)
		}
		tok := tr.JSON()
		at, _ := tok["access_token"].(string)
		if !strings.HasPrefix(at, "hm_at_") || tok["id_token"] == nil {
			t.Fatalf("token answer %s", tr.Body)
		}
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK).JSON()
		if ui["sub"] != u.ID {
			t.Fatalf("userinfo sub %v, want %s", ui["sub"], u.ID)
		}
	})
}
