package signin_test

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

var verifyAddressRE = regexp.MustCompile(`/verify-email\?token=(hm_ev_[A-Za-z0-9]+)`)

// The registration mail's link opens a confirmation page that needs no
// sign-in (the token is the credential): the GET shows the address and
// changes nothing, the CSRF-checked POST verifies it, once.
func TestRegisteredEmailConfirmationPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const addr = "page.verify@example.test"
		uid := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": addr, "password": pw}, http.StatusCreated).JSON()["user"].(map[string]any)["id"].(string)
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("outbox %v %d", err, len(msgs))
		}
		m := verifyAddressRE.FindStringSubmatch(msgs[0].Text)
		if m == nil {
			t.Fatalf("no link in %s", msgs[0].Text)
		}
		isVerified := func() bool {
			var v bool
			if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT email_verified FROM platform_accounts WHERE user_id = $1`, uid).Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}

		b := newBrowser(t, e)
		p := b.get(m[0])
		want(t, p, 200, "Confirm your email address", addr, m[1])
		checkHeaders(t, p)
		if isVerified() {
			t.Fatal("opening the link verified the address")
		}
		tok := field(t, csrfRE, p)
		want(t, b.post("/verify-email", url.Values{"csrf_token": {"forged"}, "token": {m[1]}}), 403)
		want(t, b.post("/verify-email", url.Values{"csrf_token": {tok}, "token": {"garbage"}}), 400, "This link is invalid")
		if isVerified() {
			t.Fatal("a refused post verified the address")
		}
		want(t, b.post("/verify-email", url.Values{"csrf_token": {tok}, "token": {m[1]}}), 200, "Your email address has been confirmed")
		if !isVerified() {
			t.Fatal("address not verified")
		}
		want(t, b.post("/verify-email", url.Values{"csrf_token": {tok}, "token": {m[1]}}), 400, "This link is invalid")

		// A used link, a link without a token, and German.
		want(t, b.get(m[0]), 400, "This link is invalid")
		want(t, b.get("/verify-email"), 400, "This page needs the link from the verification mail")
		b.lang = "de"
		want(t, b.get(m[0]), 400, "Dieser Link ist ungültig")
	})
}

// When another user has verified the address by the time the link is
// followed, the page says so (409) and the address stays unverified.
func TestRegisteredEmailConfirmationPageConflict(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const addr = "page.contested@example.test"
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": addr, "password": pw}, http.StatusCreated)
		msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, addr)
		m := verifyAddressRE.FindStringSubmatch(msgs[0].Text)
		owner := e.NewUser(t, apptest.UserSpec{})
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE platform_accounts SET email = $1 WHERE user_id = $2`, addr, owner.ID); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, e)
		b.lang = "de"
		p := b.get(m[0])
		want(t, p, 200, "E-Mail-Adresse bestätigen", addr)
		want(t, b.post("/verify-email", url.Values{"csrf_token": {field(t, csrfRE, p)}, "token": {m[1]}}), 409, "für ein anderes Konto bestätigt")
	})
}
