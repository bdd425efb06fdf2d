package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := webtest.Chromium(t)
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
