package signin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/web/webtest"
)

// virtualAuthenticator turns on the DevTools protocol's WebAuthn domain in
// the browser of ctx and adds a platform authenticator that holds
// discoverable credentials and verifies its user (a PIN or fingerprint
// that always succeeds).
func virtualAuthenticator(t *testing.T, ctx context.Context) webauthn.AuthenticatorID {
	t.Helper()
	off := false
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{EnableUI: &off}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return res.AuthenticatorID
}

// credentials returns the credentials an authenticator holds.
func credentials(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) []*webauthn.Credential {
	t.Helper()
	res, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
	if err != nil {
		t.Fatalf("WebAuthn.getCredentials: %v", err)
	}
	return res.Credentials
}

// carry puts a copy of c, with signature counter count, into a new
// virtual authenticator of the browser of ctx: another device holding the
// same private key.
func carry(t *testing.T, ctx context.Context, c *webauthn.Credential, count float64) webauthn.AuthenticatorID {
	t.Helper()
	id := virtualAuthenticator(t, ctx)
	// The credential as getCredentials gave it, but for the counter; sent
	// without the fields of extensions this authenticator lacks (Chromium
	// refuses a credential naming them).
	cred := map[string]any{
		"credentialId": c.CredentialID, "isResidentCredential": c.IsResidentCredential, "rpId": c.RpID,
		"privateKey": c.PrivateKey, "userHandle": c.UserHandle, "signCount": count,
		"backupEligibility": c.BackupEligibility, "backupState": c.BackupState,
	}
	add := cdp.Command[map[string]any, cdp.Empty]{Method: webauthn.CommandAddCredential}
	if _, err := chromedp.Call(ctx, add, map[string]any{"authenticatorId": id, "credential": cred}); err != nil {
		t.Fatalf("WebAuthn.addCredential: %v", err)
	}
	return id
}

// presence makes the authenticator answer tests of user presence at once
// (on) or never (off, as if nobody touched it).
func presence(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, on bool) {
	t.Helper()
	if _, err := chromedp.Call(ctx, webauthn.SetAutomaticPresenceSimulation, webauthn.SetAutomaticPresenceSimulationParams{AuthenticatorID: id, Enabled: on}); err != nil {
		t.Fatalf("WebAuthn.setAutomaticPresenceSimulation: %v", err)
	}
}

// assertPasskeySession checks that the newest session of userID is a
// passwordless passkey sign-in that counts as two factors.
func assertPasskeySession(t *testing.T, e *apptest.Env, userID string) {
	t.Helper()
	var provider, amr string
	if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT provider, amr FROM sessions WHERE user_id = $1 AND provider = 'passkey' ORDER BY created_at DESC, id DESC LIMIT 1`, userID).Scan(&provider, &amr); err != nil {
		t.Fatal(err)
	}
	if provider != "passkey" || !strings.Contains(amr, `"mfa"`) || strings.Contains(amr, `"pwd"`) {
		t.Fatalf("newest session: provider %s, amr %s", provider, amr)
	}
}

// axeBoth runs axe-core on the page shown now at desktop and at phone
// width, each in the light and the dark theme.
func axeBoth(t *testing.T, ctx context.Context) {
	t.Helper()
	webtest.Axe(t, ctx, "")
	webtest.Viewport(t, ctx, webtest.PhoneWidth, webtest.PhoneHeight)
	webtest.Axe(t, ctx, "")
	webtest.ResetViewport(t, ctx)
}

// logout signs the browser out on the logout page.
func logout(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	webtest.Do(t, ctx, "open the logout page", chromedp.Navigate(base+"/logout"), chromedp.WaitVisible(chromedp.CSS(`form[action="/logout"] button`)))
	webtest.Submit(t, ctx, "log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)))
}

// waitPath waits until the browser's address is base+path.
func waitPath(t *testing.T, ctx context.Context, base, path, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		loc := webtest.Read(t, ctx, "location", chromedp.Location())
		if loc == base+path || strings.HasPrefix(loc, base+path+"?") {
			return
		}
		if time.Now().After(deadline) {
			body := webtest.Read(t, ctx, "page", chromedp.Text(chromedp.CSS(`body`)))
			t.Fatalf("%s: at %s, want %s: %s", what, loc, base+path, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the element sel contains want.
func waitText(t *testing.T, ctx context.Context, sel, want, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+"`"+sel+"`"+`)||{}).textContent||""`))
		if err == nil && strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s shows %q, want %q", what, sel, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBrowserPasskeys adds a passkey on the security page in a headless
// Chromium with a virtual authenticator, uses it as the second factor after
// the password, renames it, carries it to a second browser that signs in
// with it alone (no password, no code), sees a copy with a reset counter
// refused as a clone, removes it and sees it fail. axe-core checks the
// login page, the two-factor step and the security page in both themes.
func TestBrowserPasskeys(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, func(c *config.Config) {
		c.PublicURL = strings.Replace(c.PublicURL, "127.0.0.1", "localhost", 1)
	})
	// A relying-party id is a domain: the browser talks to localhost.
	base := strings.Replace(e.URL, "127.0.0.1", "localhost", 1)
	u := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "ada@example.test", Password: pw})
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	a := webtest.Chromium(t)
	webtest.AcceptDialogs(a)
	authA := virtualAuthenticator(t, a)
	webtest.Login(t, a, base, u.Email, pw)
	webtest.Do(t, a, "open the security page", chromedp.Navigate(base+"/account/security"), chromedp.WaitVisible(css(`#pk-title`)))
	webtest.Do(t, a, "the script shows the add button", chromedp.WaitVisible(css(`#passkey-add button[type=submit]`)))
	axeBoth(t, a)
	webtest.Screenshots(t, a, "passkeys-none")
	webtest.Submit(t, a, "add a passkey",
		chromedp.SendKeys(css(`#pk-name`), "Laptop"),
		chromedp.Click(css(`#passkey-add button[type=submit]`)))
	waitText(t, a, `.notice`, "The passkey was added", "after adding")
	waitText(t, a, `ul.passkeys`, "Laptop", "the list")
	if n := len(credentials(t, a, authA)); n != 1 {
		t.Fatalf("the authenticator holds %d credentials", n)
	}
	axeBoth(t, a)
	webtest.Screenshots(t, a, "passkeys-one")

	// The second factor after the password. The login page's autofill
	// request would take the passkey at once (the virtual authenticator
	// answers without a person): the authenticator waits for the user's
	// presence until the password is in.
	presence(t, a, authA, false)
	logout(t, a, base)
	webtest.Do(t, a, "password step",
		chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#email`)),
		chromedp.SendKeys(css(`#email`), u.Email), chromedp.SendKeys(css(`#password`), pw),
		chromedp.Click(css(`form[action="/login"] button[type=submit]`)),
		chromedp.WaitVisible(css(`#passkey-second`)))
	presence(t, a, authA, true)
	if n := webtest.Read(t, a, "code field", chromedp.Evaluate[int](`document.querySelectorAll("#code").length`)); n != 0 {
		t.Fatalf("the two-factor step asks for a TOTP code the user does not have")
	}
	axeBoth(t, a)
	webtest.Screenshots(t, a, "passkeys-second-factor")
	webtest.Submit(t, a, "use the passkey", chromedp.Click(css(`#passkey-second`)))
	waitPath(t, a, base, "/account", "after the second factor")
	var amr string
	if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT amr FROM sessions WHERE user_id = $1 AND provider = 'email' AND amr LIKE '%hwk%' ORDER BY created_at DESC, id DESC LIMIT 1`, u.ID).Scan(&amr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(amr, `"pwd"`) || !strings.Contains(amr, `"hwk"`) || !strings.Contains(amr, `"mfa"`) {
		t.Fatalf("amr of the password+passkey session = %s", amr)
	}

	// Rename it.
	webtest.Do(t, a, "open the security page", chromedp.Navigate(base+"/account/security"), chromedp.WaitVisible(css(`ul.passkeys input[name=name]`)))
	webtest.Submit(t, a, "rename",
		chromedp.SetValue(css(`ul.passkeys input[name=name]`), "Work laptop"),
		chromedp.Click(css(`ul.passkeys form[action$="/rename"] button`)))
	waitText(t, a, `ul.passkeys h3`, "Work laptop", "after renaming")

	// Carry the credential to a second browser and sign in with it alone:
	// first through the email field's autofill (conditional mediation),
	// which the virtual authenticator answers as soon as the page asks.
	cred := credentials(t, a, authA)[0]
	b := webtest.Chromium(t)
	authB := carry(t, b, cred, cred.SignCount)
	webtest.Do(t, b, "open the login page", chromedp.Navigate(base+"/login"))
	waitPath(t, b, base, "/account", "after the autofill sign-in")
	assertPasskeySession(t, e, u.ID)

	// Then with the button, whose request replaces the pending autofill one.
	logout(t, b, base)
	presence(t, b, authB, false)
	webtest.Do(t, b, "open the login page", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#passkey-login`)))
	if ac := webtest.Read(t, b, "autocomplete", chromedp.Evaluate[string](`document.querySelector("#email").getAttribute("autocomplete")`)); ac != "username webauthn" {
		t.Fatalf("email autocomplete = %q", ac)
	}
	axeBoth(t, b)
	webtest.Screenshots(t, b, "passkeys-login")
	presence(t, b, authB, true)
	webtest.Submit(t, b, "sign in with the passkey", chromedp.Click(css(`#passkey-login`)))
	waitPath(t, b, base, "/account", "after the passwordless sign-in")
	assertPasskeySession(t, e, u.ID)

	// A copy with its counter reset: a clone, refused.
	c := webtest.Chromium(t)
	carry(t, c, cred, 0)
	// Its autofill attempt fails silently; the button says why.
	webtest.Do(t, c, "open the login page", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#passkey-login`)),
		chromedp.Click(css(`#passkey-login`)))
	waitText(t, c, `#passkey-status`, "could not sign you in", "the clone")
	if loc := webtest.Read(t, c, "location", chromedp.Location()); !strings.HasPrefix(loc, base+"/login") {
		t.Fatalf("the clone left the login page for %s", loc)
	}

	// An operator sees it on the admin user page.
	op := e.NewUser(t, apptest.UserSpec{Password: pw, SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
	webtest.Login(t, c, base, op.Email, pw)
	webtest.Do(t, c, "open the admin user page", chromedp.Navigate(base+"/admin/users/"+u.ID), chromedp.WaitVisible(css(`#passkeys-title`)))
	waitText(t, c, `#passkeys`, "Work laptop", "the admin user page")
	axeBoth(t, c)
	webtest.Screenshots(t, c, "passkeys-admin-user")

	// Remove it; then it signs nobody in.
	webtest.Do(t, a, "open the security page", chromedp.Navigate(base+"/account/security"), chromedp.WaitVisible(css(`ul.passkeys`)))
	webtest.Submit(t, a, "remove", chromedp.Click(css(`ul.passkeys form[action$="/remove"] button`)))
	waitText(t, a, `.notice`, "The passkey was removed", "after removing")
	logout(t, b, base)
	webtest.Do(t, b, "try the removed passkey", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#passkey-login`)),
		chromedp.Click(css(`#passkey-login`)))
	waitText(t, b, `#passkey-status`, "could not sign you in", "the removed passkey")
}
