package account_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/token"
	"hmid/internal/web/webtest"
)

// TestBrowserConsoleDeveloper drives a real headless Chromium through
// /account/developer: register an OAuth client and see its secret once
// (reloading the page does not show it again), then create an API key and
// use it on the API. With HMID_SCREENSHOTS set it saves the pages there at
// desktop and phone width.
func TestBrowserConsoleDeveloper(t *testing.T) {
	t.Parallel()
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		dev := e.NewUser(t, apptest.UserSpec{Password: pw, Roles: []string{"role_user", "role_developer"}})

		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		count := func(sel string) int {
			t.Helper()
			return webtest.Read(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
		}
		// submit clicks the submit button of the page's form (not the top
		// bar's log-out form).
		submit := func(what, waitFor string) {
			t.Helper()
			webtest.Do(t, ctx, what, chromedp.Click(css(`main form button[type=submit]`)), chromedp.WaitVisible(css(waitFor)))
		}

		webtest.Do(t, ctx, "sign in", chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(e.URL+"/login?return_to=%2Faccount%2Fdeveloper"), chromedp.WaitVisible(css(`#email`)),
			chromedp.SendKeys(css(`#email`), dev.Email), chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)), chromedp.WaitVisible(css(`#clients-h`)))
		webtest.Screenshots(t, ctx, "developer-empty")

		// A bad redirect URI: the field says so and nothing is registered.
		webtest.Do(t, ctx, "open the registration form", chromedp.Click(css(`a[href="/account/developer/clients/new"]`)), chromedp.WaitVisible(css(`#redirect_uris`)))
		webtest.Screenshots(t, ctx, "developer-client-new")
		// The redirect URIs and their help, which says when to leave them empty.
		webtest.Do(t, ctx, "scroll to the redirect URIs", chromedp.ScrollIntoView(css(`#redirect_uris-help`)))
		webtest.Screenshots(t, ctx, "developer-client-new-redirects")
		webtest.Do(t, ctx, "fill in the form", chromedp.SendKeys(css(`#name`), "Browser App"), chromedp.SendKeys(css(`#redirect_uris`), "not a uri"))
		submit("register with a bad redirect URI", `#redirect_uris-error`)
		webtest.Screenshots(t, ctx, "developer-client-error")

		// Register: the secret is shown once, with a copy button.
		webtest.Do(t, ctx, "correct the redirect URI", chromedp.SetValue(css(`#redirect_uris`), "https://app.example/cb\nmyapp://callback"))
		submit("register", `#client-secret`)
		secret := webtest.Read(t, ctx, "the secret", chromedp.Text(css(`#client-secret`)))
		clientID := webtest.Read(t, ctx, "the client id", chromedp.Text(css(`#client-id`)))
		if !strings.HasPrefix(secret, "hm_sec_") {
			t.Fatalf("shown secret %q", secret)
		}
		if count(`button[data-copy="#client-secret"]:not([hidden])`) != 1 {
			t.Error("no copy button for the secret")
		}
		var hash string
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT secret_hash FROM oauth_clients WHERE id = $1 AND owner_id = $2`, clientID, dev.ID).Scan(&hash); err != nil || hash != token.Hash(secret) {
			t.Fatalf("the shown secret is not the client's: %v", err)
		}
		webtest.Screenshots(t, ctx, "developer-client-secret")
		// The address is the client's page: reloading shows the page without the secret.
		if loc := webtest.Read(t, ctx, "location", chromedp.Location()); loc != e.URL+"/account/developer/clients/"+clientID {
			t.Errorf("address after registering: %s", loc)
		}
		webtest.Do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(css(`#client-h`)))
		if count(`#client-secret`) != 0 || strings.Contains(webtest.Read(t, ctx, "page text", chromedp.Text(css(`main`))), secret) {
			t.Fatal("the secret is shown again after reloading")
		}
		webtest.Screenshots(t, ctx, "developer-client")

		// Create an API key with one permission and an expiry; it works as a bearer.
		webtest.Do(t, ctx, "open the key form", chromedp.Navigate(e.URL+"/account/developer"), chromedp.WaitVisible(css(`#keys-h`)),
			chromedp.Click(css(`a[href="/account/developer/keys/new"]`)), chromedp.WaitVisible(css(`#name`)))
		webtest.Screenshots(t, ctx, "developer-key-new")
		expires := e.Clock.Now().UTC().AddDate(0, 1, 0)
		webtest.Do(t, ctx, "fill in the key form", chromedp.SendKeys(css(`#name`), "Backup script"),
			chromedp.Click(css(`input[name=scopes][value="two_factor:read"]`)),
			chromedp.SetValue(css(`#expires`), expires.Format("2006-01-02")))
		submit("create the key", `#api-key`)
		key := webtest.Read(t, ctx, "the key", chromedp.Text(css(`#api-key`)))
		webtest.Screenshots(t, ctx, "developer-key-secret")
		me := e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK).JSON()
		if data, _ := me["data"].(map[string]any); data == nil || data["id"] != dev.ID {
			t.Errorf("the key acts as %v", me)
		}
		e.Call(t, "GET", "/v1/roles", key, nil, http.StatusForbidden)
		webtest.Do(t, ctx, "reload the key page", chromedp.Reload(), chromedp.WaitVisible(css(`#key-h`)))
		if count(`#api-key`) != 0 {
			t.Fatal("the key is shown again after reloading")
		}

		webtest.Do(t, ctx, "back to the list", chromedp.Navigate(e.URL+"/account/developer"), chromedp.WaitVisible(css(`#keys-h`)))
		list := webtest.Read(t, ctx, "list", chromedp.Text(css(`main`)))
		if !strings.Contains(list, "Browser App") || !strings.Contains(list, "Backup script") || strings.Contains(list, key) || strings.Contains(list, secret) {
			t.Errorf("list: %q", list)
		}
		webtest.Screenshots(t, ctx, "developer-list")
	})
}
