package admin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-jose/go-jose/v4"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/token"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminClients drives a real headless Chromium through
// /admin/clients and /admin/api-keys on both engines: a developer asks for
// a first-party client and is refused (nothing is registered), a super
// admin registers one and sees its secret once, then creates a system key
// and uses it on the API. Every page is checked with axe-core in the light
// and the dark theme; with HMID_SCREENSHOTS set the two lists are saved.
func TestBrowserAdminClients(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		dev := e.NewUser(t, apptest.UserSpec{Username: "dana_dev", Email: "dana@example.test", Password: pw, Roles: []string{"role_user", "role_developer"}})
		admin := e.NewUser(t, apptest.UserSpec{Username: "sam_admin", Email: "sam@example.test", Password: pw, SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		// Clients already there, so the list shows owners and kinds.
		for _, c := range []map[string]any{
			{"name": "Team Dashboard", "redirect_uris": []string{"https://dashboard.example/cb"}},
			{"name": "Mobile App", "client_type": "public", "redirect_uris": []string{"app.mobile://callback"}},
		} {
			e.Call(t, "POST", "/v1/oauth/clients", dev.Token, c, http.StatusCreated)
		}
		e.NewAPIKey(t, dev.ID, "two_factor:read")
		named := func(name string) int {
			var n int
			if err := e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_clients WHERE name = $1`, name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// register fills in the registration form as a first-party client and sends it.
		register := func(who, name, waitFor string) {
			t.Helper()
			webtest.Do(t, ctx, who+" opens the registration form",
				chromedp.Navigate(e.URL+"/admin/clients"), chromedp.WaitVisible(css(`#clients-h`)),
				chromedp.Click(css(`a[href="/admin/clients/new"]`)), chromedp.WaitVisible(css(`#name`)),
				chromedp.SendKeys(css(`#name`), name),
				chromedp.SendKeys(css(`#redirect_uris`), "https://portal.example/callback"),
				chromedp.Click(css(`input[name=is_first_party]`)),
				chromedp.Click(css(`main form button[type=submit]`)), chromedp.WaitVisible(css(waitFor)))
		}

		// A developer is refused: the field says why, and no client is registered.
		webtest.Login(t, ctx, e.URL, dev.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin/clients")
		register("the developer", "Partner Portal", `#firstparty-error`)
		if msg := webtest.Read(t, ctx, "the refusal", chromedp.Text(css(`#firstparty-error`))); !strings.Contains(msg, "only super admins") {
			t.Errorf("refusal: %q", msg)
		}
		if named("Partner Portal") != 0 {
			t.Fatal("the developer's first-party client was registered")
		}
		webtest.Axe(t, ctx, "")

		webtest.Do(t, ctx, "log out", chromedp.Click(css(`.topbar-logout button`)), chromedp.WaitNotPresent(css(`.topbar-logout`)))

		// A super admin registers it: the secret is shown once.
		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		register("the super admin", "Partner Portal", `#client-secret`)
		secret := webtest.Read(t, ctx, "the secret", chromedp.Text(css(`#client-secret`)))
		var id, hash string
		var firstParty bool
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT id, secret_hash, is_first_party FROM oauth_clients WHERE name = 'Partner Portal' AND owner_id = $1`, admin.ID).
			Scan(&id, &hash, &firstParty); err != nil || hash != token.Hash(secret) || !firstParty {
			t.Fatalf("registered client: %v %v", err, firstParty)
		}
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(css(`#client-h`)))
		if text := webtest.Read(t, ctx, "client page", chromedp.Text(css(`main`))); strings.Contains(text, secret) || !strings.Contains(text, "sam_admin") {
			t.Errorf("client page after reloading: %q", text)
		}
		webtest.Axe(t, ctx, e.URL+"/admin/clients")
		if text := webtest.Read(t, ctx, "list", chromedp.Text(css(`main`))); !strings.Contains(text, "Partner Portal") || !strings.Contains(text, "dana_dev") || !strings.Contains(text, "Public") {
			t.Errorf("list: %q", text)
		}
		webtest.Screenshots(t, ctx, "admin-clients")

		// A system key: created on the form, shown once, and it works on the API.
		webtest.Axe(t, ctx, e.URL+"/admin/api-keys/new")
		webtest.Do(t, ctx, "create a system key",
			chromedp.SendKeys(css(`#name`), "Deploy bot"),
			chromedp.Click(css(`input[name=is_system]`)),
			chromedp.Click(css(`main form button[type=submit]`)), chromedp.WaitVisible(css(`#api-key`)))
		key := webtest.Read(t, ctx, "the key", chromedp.Text(css(`#api-key`)))
		e.Call(t, "GET", "/v1/roles", key, nil, http.StatusOK)
		webtest.Axe(t, ctx, "")
		webtest.Axe(t, ctx, e.URL+"/admin/api-keys")
		if text := webtest.Read(t, ctx, "key list", chromedp.Text(css(`main`))); !strings.Contains(text, "Deploy bot") || !strings.Contains(text, "dana_dev") || strings.Contains(text, key) {
			t.Errorf("key list: %q", text)
		}
		webtest.Screenshots(t, ctx, "admin-api-keys")
	})
}

// TestBrowserAdminDynamicAndKeyClients: with open dynamic registration, an
// MCP client registers itself; a super admin finds it in /admin/clients
// marked as registered dynamically with its last use, opens it and deletes
// it. Then the admin registers a private_key_jwt client with a pasted key
// set, resources and JWT access tokens through the client form: no secret
// is shown, and the page names the method. Pages are checked with axe-core;
// with HMID_SCREENSHOTS set the list and the form are saved.
func TestBrowserAdminDynamicAndKeyClients(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		admin := e.NewUser(t, apptest.UserSpec{Username: "ops_admin", Email: "ops@example.test", Password: pw, SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		reg := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Body: map[string]any{
			"client_name": "Desk Assistant", "redirect_uris": []string{"https://mcp-client.example/api/mcp/auth_callback"},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"token_endpoint_auth_method": "none",
		}})
		if reg.Status != http.StatusCreated {
			t.Fatalf("register: %d %s", reg.Status, reg.Body)
		}
		id := reg.JSON()["client_id"].(string)
		e.Call(t, "POST", "/v1/oauth/clients", admin.Token, map[string]any{"name": "Team Dashboard", "redirect_uris": []string{"https://dashboard.example/cb"}}, http.StatusCreated)

		asked := webtest.AskedDialogs(ctx)

		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin/clients")
		list := webtest.Read(t, ctx, "list", chromedp.Text(css(`main`)))
		if !strings.Contains(list, "Desk Assistant") || !strings.Contains(list, "dynamic") || !strings.Contains(list, "last token: never") {
			t.Errorf("list: %q", list)
		}
		webtest.Screenshots(t, ctx, "admin-clients-dynamic")

		// An initial access token is made on the list page and shown once, then revoked.
		webtest.Do(t, ctx, "make an initial access token",
			chromedp.SendKeys(css(`#iat-name`), "MCP gateway"),
			chromedp.SetValue(css(`#iat-max`), "3"),
			chromedp.Click(css(`form[action="/admin/clients/initial-tokens"] input[value=openid]`)),
			chromedp.Click(css(`form[action="/admin/clients/initial-tokens"] button`)), chromedp.WaitVisible(css(`#iat-token`)))
		iat := webtest.Read(t, ctx, "the token", chromedp.Text(css(`#iat-token`)))
		if !strings.HasPrefix(iat, "hm_iat_") {
			t.Fatalf("token %q", iat)
		}
		webtest.Axe(t, ctx, "")
		webtest.Do(t, ctx, "to the token panel", chromedp.ScrollIntoView(css(`#iat-h`)))
		webtest.Screenshot(t, ctx, "admin-clients-initial-tokens-desktop", webtest.DesktopWidth, webtest.DesktopHeight)
		toks := e.Call(t, "GET", "/v1/oauth/initial-access-tokens", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		if len(toks) != 1 || toks[0].(map[string]any)["max_clients"] != float64(3) {
			t.Fatalf("tokens %v", toks)
		}
		webtest.Do(t, ctx, "revoke it", chromedp.Click(css(`form[action$="/revoke"] button`)), chromedp.WaitNotPresent(css(`#iat-token`)), chromedp.WaitVisible(css(`#iat-h`)))
		if text := webtest.Read(t, ctx, "after revoking", chromedp.Text(css(`main`))); !strings.Contains(text, "revoked") || strings.Contains(text, iat) {
			t.Errorf("after revoking: %q", text)
		}

		webtest.Axe(t, ctx, e.URL+"/admin/clients/"+id)
		page := webtest.Read(t, ctx, "client page", chromedp.Text(css(`main`)))
		if !strings.Contains(page, "Registered dynamically") || !strings.Contains(page, "by open registration") {
			t.Errorf("client page: %q", page)
		}
		webtest.Do(t, ctx, "delete the registration",
			chromedp.Click(css(`form[action$="/delete"] input[name=confirm]`)),
			chromedp.Click(css(`form[action$="/delete"] button`)))
		select {
		case <-asked:
		case <-time.After(5 * time.Second):
		}
		webtest.Do(t, ctx, "back on the list", chromedp.WaitVisible(css(`#clients-h`)))
		e.Call(t, "GET", "/v1/oauth/clients/"+id, e.SystemKey, nil, http.StatusNotFound)

		// A private_key_jwt client through the form.
		priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &priv.PublicKey, KeyID: "k1", Use: "sig", Algorithm: "ES256"}}})
		webtest.Axe(t, ctx, e.URL+"/admin/clients/new")
		webtest.Do(t, ctx, "fill in a private_key_jwt client",
			chromedp.SendKeys(css(`#name`), "Billing Service"),
			chromedp.SendKeys(css(`#redirect_uris`), "https://billing.example/cb"),
			chromedp.SetValue(css(`#token_endpoint_auth_method`), "private_key_jwt"),
			chromedp.SetValue(css(`#jwks`), string(set)),
			chromedp.SendKeys(css(`#resources`), "https://api.billing.example/"),
			chromedp.SetValue(css(`#access_token_format`), "jwt"),
			chromedp.SetValue(css(`#alg`), "ES256"),
			chromedp.ScrollIntoView(css(`#token_endpoint_auth_method`)))
		webtest.Screenshot(t, ctx, "admin-client-keys-desktop", webtest.DesktopWidth, webtest.DesktopHeight)
		webtest.Do(t, ctx, "register it", chromedp.Click(css(`main form button[type=submit]`)), chromedp.WaitVisible(css(`#client-h`)))
		page = webtest.Read(t, ctx, "new client page", chromedp.Text(css(`main`)))
		if strings.Contains(page, "hm_sec_") || !strings.Contains(page, "private_key_jwt") {
			t.Errorf("private_key_jwt client page: %q", page)
		}
		webtest.Axe(t, ctx, "")
		var method, format, resources string
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT token_endpoint_auth_method, access_token_format, resources FROM oauth_clients WHERE name = 'Billing Service'`).
			Scan(&method, &format, &resources); err != nil || method != "private_key_jwt" || format != "jwt" || !strings.Contains(resources, "api.billing.example") {
			t.Fatalf("stored: %v %s %s %s", err, method, format, resources)
		}
	}, func(c *config.Config) { c.DynamicRegistration = "open" })
}
