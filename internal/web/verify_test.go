package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/mail/mailtest"
)

var verifyLinkRE = regexp.MustCompile(`(/account/email(?:-link)?/verify\?token=)([A-Za-z0-9_]+)`)

// The email-change mail's link opens a confirmation page; signed out, it goes
// through the login page first; the confirmation completes the change.
func TestEmailChangeConfirmationPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		e.Call(t, "POST", "/v1/users/"+u.ID+"/email/request-change", u.Token, map[string]any{"email": "new-address@example.test"}, http.StatusOK)
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, "new-address@example.test")
		if err != nil || len(msgs) != 1 {
			t.Fatalf("outbox %v %d", err, len(msgs))
		}
		m := verifyLinkRE.FindStringSubmatch(msgs[0].Text)
		if m == nil {
			t.Fatalf("no link in %s", msgs[0].Text)
		}
		path := m[1] + m[2]
		b := newBrowser(t, e)
		p := b.get(path)
		if p.Status != http.StatusSeeOther && p.Status != http.StatusFound || !strings.HasPrefix(p.Header.Get("Location"), "/login?return_to=") {
			t.Fatalf("signed out: %d %s", p.Status, p.Header.Get("Location"))
		}
		b.login(u.Email, pw, path)
		p = b.get(path)
		want(t, p, 200, "Confirm your new email address", m[2])
		checkHeaders(t, p)
		tok := field(t, csrfRE, p)
		want(t, b.post("/account/email/verify", url.Values{"csrf_token": {"forged"}, "token": {m[2]}}), 403)
		want(t, b.post("/account/email/verify", url.Values{"csrf_token": {tok}, "token": {m[2]}}), 200, "Your email address has been changed")
		want(t, b.post("/account/email/verify", url.Values{"csrf_token": {tok}, "token": {m[2]}}), 400)
		me := e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if me["email"] != "new-address@example.test" {
			t.Fatalf("email = %v", me["email"])
		}
	})
}
