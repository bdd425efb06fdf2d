package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// signedInBrowser logs u in through the login page and returns the browser.
func signedInBrowser(t *testing.T, e *apptest.Env, u apptest.User) *browser {
	t.Helper()
	b := newBrowser(t, e)
	form := b.get("/login")
	p := b.do("POST", "/login", url.Values{"csrf_token": {formField(t, csrfRE, form.body)}, "email": {u.Email}, "password": {u.Password}})
	if p.status != http.StatusSeeOther || b.cookie("hmid_session", "/") == "" {
		t.Fatalf("login: %d %s", p.status, p.body)
	}
	return b
}

// formToken returns the CSRF token of the form posting to action.
func formToken(t *testing.T, body, action string) string {
	t.Helper()
	i := strings.Index(body, `action="`+action+`"`)
	if i < 0 {
		t.Fatalf("no form for %s in page:\n%s", action, body)
	}
	return formField(t, csrfRE, body[i:])
}

func TestConsoleSessions(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		// Without a session the page sends the browser to the login page, which returns here.
		anon := newBrowser(t, e)
		if p := anon.get("/account/sessions"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Faccount%2Fsessions" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		// A bearer token is not a browser session.
		req, _ := http.NewRequest("GET", e.URL+"/account/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+u.Token)
		if res, err := anon.c.Do(req); err != nil || res.StatusCode != http.StatusSeeOther {
			t.Errorf("bearer token on a page: %v %v", res, err)
		} else {
			res.Body.Close()
		}

		b := signedInBrowser(t, e, u)
		p := b.get("/account/sessions")
		if p.status != http.StatusOK || !strings.Contains(p.body, "This device") || !strings.Contains(p.body, u.SessionID) {
			t.Fatalf("sessions page: %d %s", p.status, p.body)
		}
		if !strings.Contains(p.body, `aria-current="page"`) {
			t.Error("the navigation does not mark the page")
		}
		// Revoking without the CSRF token is refused and changes nothing.
		if q := b.do("POST", "/account/sessions/"+u.SessionID+"/revoke", url.Values{}); q.status != http.StatusForbidden {
			t.Errorf("revoke without CSRF: %d", q.status)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		// Revoke the fixture's other session: its token stops working.
		q := b.do("POST", "/account/sessions/"+u.SessionID+"/revoke", url.Values{"csrf_token": {formToken(t, p.body, "/account/sessions/"+u.SessionID+"/revoke")}})
		if q.status != http.StatusSeeOther || q.location != "/account/sessions" {
			t.Fatalf("revoke: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if after := b.get("/account/sessions"); !strings.Contains(after.body, "The session was revoked") || strings.Contains(after.body, u.SessionID) {
			t.Errorf("after revoking: %s", after.body)
		}
		// The flash shows once.
		if again := b.get("/account/sessions"); strings.Contains(again.body, "The session was revoked") {
			t.Error("the flash message showed twice")
		}
	})
}
