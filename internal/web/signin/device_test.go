package signin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// deviceClient registers a public client for the device grant and asks for
// a device authorization; it returns the client id and the answer.
func deviceClient(t *testing.T, e *apptest.Env, owner apptest.User, name string) (string, func() map[string]any) {
	t.Helper()
	data := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
		"name": name, "client_type": "public", "redirect_uris": []string{"https://tv.example/cb"},
		"grant_types": []string{"urn:ietf:params:oauth:grant-type:device_code"}, "allowed_scopes": []string{"openid", "profile"},
	}, http.StatusCreated).JSON()["data"].(map[string]any)
	id := data["id"].(string)
	return id, func() map[string]any {
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/device_authorization", Body: url.Values{"client_id": {id}, "scope": {"openid profile"}}})
		if r.Status != http.StatusOK {
			t.Fatalf("device authorization: %d %s", r.Status, r.Body)
		}
		return r.JSON()
	}
}

// devicePoll polls the token endpoint once and returns the status.
func devicePoll(t *testing.T, e *apptest.Env, clientID, deviceCode string) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {deviceCode}, "client_id": {clientID}}})
}

// TestBrowserDeviceFlow drives a headless Chromium through the verification
// page of the device grant (RFC 8628 §3.3): a signed-out person opens
// verification_uri_complete, signs in, finds the code prefilled, sees the
// app, its scopes and the phishing warning, and approves; then a person
// types the code shown on a second device (lower case, no hyphen) and
// approves. Each device then gets its tokens on its next poll. The pages
// are checked with axe-core and, with HMID_SCREENSHOTS, saved in English
// and German at desktop and phone width.
func TestBrowserDeviceFlow(t *testing.T) {
	t.Parallel()
	needChromium(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		clientID, start := deviceClient(t, e, owner, "Living Room TV")
		d := start()
		if r := devicePoll(t, e, clientID, d["device_code"].(string)); r.Status != http.StatusBadRequest || r.JSON()["error"] != "authorization_pending" {
			t.Fatalf("first poll: %d %s", r.Status, r.Body)
		}

		b := newChromium(t)
		b.do("open verification_uri_complete", chromedp.Navigate(d["verification_uri_complete"].(string)), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		b.do("log in",
			chromedp.SendKeys(chromedp.CSS(`#email`), u.Email),
			chromedp.SendKeys(chromedp.CSS(`#password`), pw),
			chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#user_code`)))
		prefilled, err := run(b, chromedp.Value(chromedp.CSS(`#user_code`)))
		if err != nil || prefilled != d["user_code"].(string) {
			t.Fatalf("code field %q, want %q", prefilled, d["user_code"])
		}
		b.shot("device-code")
		webtest.Axe(t, b.ctx, "")
		b.do("continue", chromedp.Click(chromedp.CSS(`form[action="/device"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
		confirm := b.text(`main`)
		if !strings.Contains(confirm, "Living Room TV") || !strings.Contains(confirm, d["user_code"].(string)) ||
			!strings.Contains(confirm, "own device") || !strings.Contains(confirm, "profile") {
			t.Fatalf("confirmation page: %q", confirm)
		}
		b.shot("device-confirm")
		webtest.Axe(t, b.ctx, "")
		b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		if done := b.text(`main`); !strings.Contains(done, "Living Room TV is signed in on your device") {
			t.Fatalf("after approval: %q", done)
		}
		b.shot("device-done")
		e.Advance(t, 6*time.Second)
		if r := devicePoll(t, e, clientID, d["device_code"].(string)); r.Status != http.StatusOK || r.JSON()["id_token"] == nil {
			t.Fatalf("tokens after approval: %d %s", r.Status, r.Body)
		}

		// A second device: the person, signed in, types its code.
		d2 := start()
		typed := strings.ToLower(strings.ReplaceAll(d2["user_code"].(string), "-", ""))
		b.language("de")
		b.do("open /device", chromedp.Navigate(e.URL+"/device"), chromedp.WaitVisible(chromedp.CSS(`#user_code`)))
		if label := b.text(`label[for=user_code]`); label != "Code auf Ihrem Gerät" {
			t.Fatalf("German label %q", label)
		}
		b.do("type a wrong code", chromedp.SendKeys(chromedp.CSS(`#user_code`), "bbbbbbbb"),
			chromedp.Click(chromedp.CSS(`form[action="/device"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`p.alert[role=alert]`)))
		b.shot("device-wrong-de")
		b.do("type the code", chromedp.Evaluate[chromedp.Void](`void (document.querySelector("#user_code").value = "")`), chromedp.SendKeys(chromedp.CSS(`#user_code`), typed),
			chromedp.Click(chromedp.CSS(`form[action="/device"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
		b.shot("device-confirm-de")
		b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		if r := devicePoll(t, e, clientID, d2["device_code"].(string)); r.Status != http.StatusOK {
			t.Fatalf("tokens of the typed code: %d %s", r.Status, r.Body)
		}
	})
}

// TestDevicePageTwoFactor: a signed-out person who opens
// verification_uri_complete signs in with the two-factor step and comes
// back to /device with the code, then approves; the device's next poll gets
// the tokens. The page answers with the kit's headers (no-store, CSP).
func TestDevicePageTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		e.Server.SecondFactor = &fakeSecondFactor{userID: u.ID, code: "654321"}
		clientID, start := deviceClient(t, e, owner, "Console")
		d := start()
		back := "/device?" + url.Values{"user_code": {d["user_code"].(string)}}.Encode()

		b := newBrowser(t, e)
		p := b.get(back)
		want(t, p, http.StatusSeeOther)
		if p.Header.Get("Location") != "/login?return_to="+url.QueryEscape(back) {
			t.Fatalf("signed out: %q", p.Header.Get("Location"))
		}
		p = b.login(u.Email, pw, back)
		want(t, p, http.StatusOK, "Two-step verification")
		p = b.post("/login", url.Values{"csrf_token": {field(t, csrfRE, p)}, "state": {field(t, stateRE, p)}, "code": {"654321"}})
		want(t, p, http.StatusSeeOther)
		if p.Header.Get("Location") != back {
			t.Fatalf("after the code step: %q", p.Header.Get("Location"))
		}
		p = b.get(back)
		want(t, p, http.StatusOK, `value="`+d["user_code"].(string)+`"`, "own device")
		checkHeaders(t, p)
		form := url.Values{"csrf_token": {field(t, csrfRE, p)}, "user_code": {d["user_code"].(string)}}
		want(t, b.post("/device", form), http.StatusOK, "Console", `value="approve"`)
		form.Set("decision", "approve")
		want(t, b.post("/device", form), http.StatusOK, "Console is signed in on your device")
		e.Advance(t, 6*time.Second)
		if r := devicePoll(t, e, clientID, d["device_code"].(string)); r.Status != http.StatusOK {
			t.Fatalf("tokens: %d %s", r.Status, r.Body)
		}
	})
}
