package signin_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"hmid/internal/apptest"
)

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
