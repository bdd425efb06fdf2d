package signin_test

import (
	"net/http"
	"net/url"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/auth"
)

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
