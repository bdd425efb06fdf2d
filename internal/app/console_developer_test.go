package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// developerSecretRE finds a secret shown once on a developer page.
var developerSecretRE = regexp.MustCompile(`id="(?:client-secret|api-key)">([^<]+)</div>`)

// developerSecret returns the secret a developer page shows, or "".
func developerSecret(body string) string {
	if m := developerSecretRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// developerPost posts form to action with the CSRF token of the form for
// action on the page at from.
func developerPost(t *testing.T, b *browser, from, action string, form url.Values) page {
	t.Helper()
	p := b.get(from)
	if p.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", from, p.status, p.body)
	}
	form.Set("csrf_token", formToken(t, p.body, action))
	return b.do("POST", action, form)
}

// clientForm is a valid registration form.
func clientForm(name string, extra ...string) url.Values {
	f := url.Values{"name": {name}, "description": {"console test"}, "client_type": {"confidential"},
		"redirect_uris": {cb + "\r\n\r\n  myapp://callback  "}, "allowed_scopes": {"openid", "profile", "email"},
		"id_token_signed_response_alg": {"HS256"}, "homepage_url": {""}, "logo_url": {""}, "privacy_policy_url": {""}, "terms_of_service_url": {""}}
	for i := 0; i+1 < len(extra); i += 2 {
		f[extra[i]] = []string{extra[i+1]}
	}
	return f
}

func TestConsoleDeveloperClients(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		list := b.get("/account/developer")
		if list.status != http.StatusOK || !strings.Contains(list.body, "Your OAuth clients") || !strings.Contains(list.body, "Your API keys") ||
			!strings.Contains(list.body, `href="/account/developer/clients/new"`) || !strings.Contains(list.body, `aria-current="page"`) {
			t.Fatalf("developer page: %d %s", list.status, list.body)
		}
		clients := func() int {
			return count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE owner_id = $1`, dev.ID)
		}

		// Bad input: a field error, 400, nothing registered.
		for _, c := range []struct{ field, value, want string }{
			{"redirect_uris", "not a uri", `id="redirect_uris-error"`},
			{"redirect_uris", "https://app.example/cb#frag", `id="redirect_uris-error"`},
			{"allowed_scopes", "bogus", `id="allowed_scopes-error"`},
			{"name", " ", `id="name-error"`},
			{"homepage_url", "ftp://x", `id="homepage_url-error"`},
			{"post_logout_redirect_uris", "https://app.example/bye#frag", `id="postlogout-error"`},
			// Logout tokens need an asymmetric algorithm (HS256 here).
			{"backchannel_logout_uri", "https://app.example/bcl", `id="backchannel-error"`},
		} {
			p := developerPost(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Bad App", c.field, c.value))
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, c.want) || !strings.Contains(p.body, "Nothing was saved") ||
				(c.field != "allowed_scopes" && !strings.Contains(p.body, `aria-invalid="true"`)) {
				t.Errorf("%s=%q: %d %s", c.field, c.value, p.status, p.body)
			}
			if !strings.Contains(p.body, `value="Bad App"`) && c.field != "name" {
				t.Errorf("%s=%q: the form lost the entered name", c.field, c.value)
			}
		}
		if n := clients(); n != 0 {
			t.Fatalf("bad input registered %d clients", n)
		}
		// The first-party box is for super admins only: not shown, and refused when sent anyway.
		if strings.Contains(b.get("/account/developer/clients/new").body, `name="is_first_party"`) {
			t.Error("the first-party box is shown to a developer")
		}
		if p := developerPost(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Mine", "is_first_party", "yes")); p.status != http.StatusForbidden ||
			!strings.Contains(p.body, `id="firstparty-error"`) || clients() != 0 {
			t.Errorf("first party by a developer: %d %s", p.status, p.body)
		}

		// Register: the answer shows the secret once, and the secret works at the token endpoint.
		p := developerPost(t, b, "/account/developer/clients/new", "/account/developer/clients", clientForm("Console App"))
		secret := developerSecret(p.body)
		if p.status != http.StatusCreated || !strings.HasPrefix(secret, "hm_sec_") || !strings.Contains(p.body, "only time the secret is shown") {
			t.Fatalf("register: %d %s", p.status, p.body)
		}
		var clientID string
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT id FROM oauth_clients WHERE owner_id = $1`, dev.ID).Scan(&clientID); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.body, `data-location="/account/developer/clients/`+clientID+`"`) {
			t.Error("the secret page does not name the client's page")
		}
		got := e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Console App" || got["client_type"] != "confidential" || len(got["redirect_uris"].([]any)) != 2 || got["is_first_party"] != false {
			t.Fatalf("registered client: %v", got)
		}
		c := testClient{ID: clientID, Secret: secret}
		if r := exchange(t, e, c, getCode(t, e, dev.Token, authzParams(clientID))); r.Status != http.StatusOK {
			t.Fatalf("token with the shown secret: %d %s", r.Status, r.Body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'client_created' AND resource_id = $1 AND source_service = 'id'`, clientID); n != 1 {
			t.Errorf("client_created events from the pages: %d", n)
		}
		// The client's page and the list never show it again.
		page := b.get("/account/developer/clients/" + clientID)
		if page.status != http.StatusOK || strings.Contains(page.body, secret) || developerSecret(page.body) != "" || !strings.Contains(page.body, clientID) {
			t.Fatalf("client page: %d %s", page.status, page.body)
		}
		if l := b.get("/account/developer"); !strings.Contains(l.body, "Console App") || strings.Contains(l.body, secret) {
			t.Errorf("list: %s", l.body)
		}

		// Edit: names, URLs, redirect URIs, scopes, logout.
		edit := clientForm("Renamed App", "redirect_uris", cb, "homepage_url", "https://app.example/", "is_active", "yes",
			"post_logout_redirect_uris", "https://app.example/bye\n", "backchannel_logout_uri", "https://app.example/bcl",
			"id_token_signed_response_alg", "ES256")
		edit["allowed_scopes"] = []string{"openid", "email", "offline_access"}
		if q := developerPost(t, b, "/account/developer/clients/"+clientID, "/account/developer/clients/"+clientID, edit); q.status != http.StatusSeeOther || q.location != "/account/developer/clients/"+clientID {
			t.Fatalf("edit: %d %q %s", q.status, q.location, q.body)
		}
		got = e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Renamed App" || got["homepage_url"] != "https://app.example/" || len(got["redirect_uris"].([]any)) != 1 ||
			!containsAny(got["allowed_scopes"].([]any), "offline_access") || containsAny(got["allowed_scopes"].([]any), "profile") ||
			got["backchannel_logout_uri"] != "https://app.example/bcl" || !containsAny(got["post_logout_redirect_uris"].([]any), "https://app.example/bye") {
			t.Fatalf("edited client: %v", got)
		}
		if after := b.get("/account/developer/clients/" + clientID); !strings.Contains(after.body, "The client was saved.") {
			t.Error("no confirmation after saving")
		}
		bad := clientForm("Not Saved", "redirect_uris", "javascript://x", "is_active", "yes")
		if q := developerPost(t, b, "/account/developer/clients/"+clientID, "/account/developer/clients/"+clientID, bad); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="redirect_uris-error"`) || !strings.Contains(q.body, "javascript://x") ||
			!strings.Contains(q.body, `value="Not Saved"`) || !strings.Contains(q.body, `<h2 id="client-h">Renamed App`) {
			t.Errorf("edit with a bad redirect URI: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE id = $1 AND name = 'Renamed App'`, clientID); n != 1 {
			t.Error("a refused edit changed the client")
		}

		// Regenerate: needs the box; the new secret is shown once and the old one dies.
		regen := "/account/developer/clients/" + clientID + "/secret"
		if q := developerPost(t, b, "/account/developer/clients/"+clientID, regen, url.Values{}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="confirm_regen-error"`) {
			t.Errorf("regenerate without the box: %d %s", q.status, q.body)
		}
		q := developerPost(t, b, "/account/developer/clients/"+clientID, regen, url.Values{"confirm": {"yes"}})
		newSecret := developerSecret(q.body)
		if q.status != http.StatusOK || newSecret == "" || newSecret == secret {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		edited := authzParams(clientID, "scope", "openid email")
		oauthErr(t, exchange(t, e, c, getCode(t, e, dev.Token, edited)), http.StatusUnauthorized, "invalid_client")
		c.Secret = newSecret
		if r := exchange(t, e, c, getCode(t, e, dev.Token, edited)); r.Status != http.StatusOK {
			t.Fatalf("token with the new secret: %d %s", r.Status, r.Body)
		}

		// Someone else: the client is not theirs to see or delete (404, as REST).
		other := e.NewUser(t, apptest.UserSpec{Password: "another good password"})
		ob := signedInBrowser(t, e, other)
		if op := ob.get("/account/developer/clients/" + clientID); op.status != http.StatusNotFound || strings.Contains(op.body, "Renamed App") {
			t.Errorf("another user's view: %d %s", op.status, op.body)
		}
		ol := ob.get("/account/developer")
		if ol.status != http.StatusOK || strings.Contains(ol.body, "Renamed App") || strings.Contains(ol.body, "Your API keys") {
			t.Errorf("another user's list: %d %s", ol.status, ol.body)
		}
		otok := formToken(t, ob.get("/account/developer/clients/new").body, "/account/developer/clients")
		if op := ob.do("POST", "/account/developer/clients/"+clientID+"/delete", url.Values{"csrf_token": {otok}, "confirm": {"yes"}}); op.status != http.StatusNotFound || clients() != 1 {
			t.Errorf("another user's delete: %d", op.status)
		}

		// Delete: needs the box, then the client is gone.
		del := "/account/developer/clients/" + clientID + "/delete"
		if q := developerPost(t, b, "/account/developer/clients/"+clientID, del, url.Values{}); q.status != http.StatusBadRequest || clients() != 1 {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := developerPost(t, b, "/account/developer/clients/"+clientID, del, url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/account/developer" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+clientID, dev.Token, nil, http.StatusNotFound)
		if l := b.get("/account/developer"); !strings.Contains(l.body, "The client was deleted.") || strings.Contains(l.body, clientID) {
			t.Errorf("list after delete: %s", l.body)
		}

		// A super admin is offered the first-party box; a first-party client is locked.
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		ab := signedInBrowser(t, e, admin)
		if !strings.Contains(ab.get("/account/developer/clients/new").body, `name="is_first_party"`) {
			t.Fatal("no first-party box for a super admin")
		}
		fp := developerPost(t, ab, "/account/developer/clients/new", "/account/developer/clients", clientForm("Our App", "is_first_party", "yes", "client_type", "public"))
		if fp.status != http.StatusCreated || developerSecret(fp.body) != "" || !strings.Contains(fp.body, "first-party client: it cannot be changed") ||
			strings.Contains(fp.body, "/delete") || strings.Contains(fp.body, "/secret") {
			t.Errorf("first-party public client: %d %s", fp.status, fp.body)
		}
	})
}

func TestConsoleDeveloperKeys(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", "role_developer"}})
		b := signedInBrowser(t, e, dev)
		keys := func() int { return count(t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, dev.ID) }
		form := b.get("/account/developer/keys/new")
		// The chooser offers the caller's own permissions only.
		if form.status != http.StatusOK || !strings.Contains(form.body, `value="api_keys:read"`) || !strings.Contains(form.body, `value="two_factor:read"`) ||
			strings.Contains(form.body, `value="users:read"`) || strings.Contains(form.body, `value="*:*"`) {
			t.Fatalf("key form: %d %s", form.status, form.body)
		}
		today := e.Clock.Now().UTC()
		for _, c := range []struct {
			form   url.Values
			status int
			want   string
		}{
			{url.Values{"name": {"k"}, "scopes": {"users:read"}}, http.StatusForbidden, `id="scopes-error"`},
			{url.Values{"name": {"k"}, "scopes": {"nope:nope"}}, http.StatusBadRequest, `id="scopes-error"`},
			{url.Values{"name": {"k"}, "expires": {today.AddDate(0, 0, -1).Format("2006-01-02")}}, http.StatusBadRequest, `id="expires-error"`},
			{url.Values{"name": {"k"}, "expires": {"next week"}}, http.StatusBadRequest, `id="expires-error"`},
			{url.Values{"name": {""}}, http.StatusBadRequest, `id="name-error"`},
		} {
			p := developerPost(t, b, "/account/developer/keys/new", "/account/developer/keys", c.form)
			if p.status != c.status || !strings.Contains(p.body, c.want) || developerSecret(p.body) != "" {
				t.Errorf("%v: %d %s", c.form, p.status, p.body)
			}
		}
		if n := keys(); n != 0 {
			t.Fatalf("refused forms created %d keys", n)
		}

		// Create: the key is shown once and works as a bearer on the API.
		p := developerPost(t, b, "/account/developer/keys/new", "/account/developer/keys", url.Values{
			"name": {"ci"}, "description": {"for CI"}, "scopes": {"api_keys:read", "two_factor:read"}, "expires": {today.Format("2006-01-02")}})
		key := developerSecret(p.body)
		if p.status != http.StatusCreated || !strings.HasPrefix(key, "hm_") {
			t.Fatalf("create key: %d %s", p.status, p.body)
		}
		kl := e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK).JSON()["data"].([]any)
		if len(kl) != 1 {
			t.Fatalf("the key lists %d keys", len(kl))
		}
		k := kl[0].(map[string]any)
		keyID := k["id"].(string)
		if k["name"] != "ci" || len(k["scopes"].([]any)) != 2 || !strings.HasPrefix(k["expires_at"].(string), today.Format("2006-01-02")+"T23:59:59") {
			t.Fatalf("created key: %v", k)
		}
		e.Call(t, "GET", "/v1/roles", key, nil, http.StatusForbidden) // only its scopes
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'api_key_created' AND resource_id = $1 AND source_service = 'id'`, keyID); n != 1 {
			t.Errorf("api_key_created events from the pages: %d", n)
		}
		page := b.get("/account/developer/keys/" + keyID)
		if page.status != http.StatusOK || strings.Contains(page.body, key) || !strings.Contains(page.body, "two_factor:read") {
			t.Fatalf("key page: %d %s", page.status, page.body)
		}
		if l := b.get("/account/developer"); !strings.Contains(l.body, "ci") || strings.Contains(l.body, key) {
			t.Errorf("list: %s", l.body)
		}

		// Key roles: only roles the caller holds are offered and accepted.
		if !strings.Contains(page.body, `<option value="role_developer">`) || strings.Contains(page.body, `<option value="role_admin">`) {
			t.Errorf("role choice: %s", page.body)
		}
		roles := "/account/developer/keys/" + keyID + "/roles"
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, roles, url.Values{"role_id": {"role_admin"}}); q.status != http.StatusForbidden || !strings.Contains(q.body, `id="role_id-error"`) {
			t.Errorf("a role the caller lacks: %d %s", q.status, q.body)
		}
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, roles, url.Values{"role_id": {"role_developer"}}); q.status != http.StatusSeeOther {
			t.Fatalf("add role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+keyID+"/roles", dev.Token, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 1 {
			t.Fatalf("key roles after adding: %v", rl)
		}
		remove := roles + "/role_developer/remove"
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, remove, url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("remove role: %d %s", q.status, q.body)
		}
		if rl := e.Call(t, "GET", "/v1/api-keys/"+keyID+"/roles", dev.Token, nil, http.StatusOK).JSON()["data"].([]any); len(rl) != 0 {
			t.Fatalf("key roles after removing: %v", rl)
		}

		// Regenerate: shown once, the old value dead at once.
		regen := "/account/developer/keys/" + keyID + "/regenerate"
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, regen, url.Values{}); q.status != http.StatusBadRequest {
			t.Errorf("regenerate without the box: %d", q.status)
		}
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK)
		q := developerPost(t, b, "/account/developer/keys/"+keyID, regen, url.Values{"confirm": {"yes"}})
		newKey := developerSecret(q.body)
		if q.status != http.StatusOK || newKey == "" || newKey == key {
			t.Fatalf("regenerate: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusOK)

		// A user without the API key permissions: no key section, and the actions are refused pages.
		plain := e.NewUser(t, apptest.UserSpec{Password: "another good password"})
		pb := signedInBrowser(t, e, plain)
		pl := pb.get("/account/developer")
		if pl.status != http.StatusOK || strings.Contains(pl.body, "Your API keys") {
			t.Errorf("plain user's page: %d %s", pl.status, pl.body)
		}
		// The console's CSRF token, from a form the user may use.
		tok := formToken(t, pb.get("/account/developer/clients/new").body, "/account/developer/clients")
		for _, a := range []struct{ method, path string }{
			{"GET", "/account/developer/keys/new"},
			{"GET", "/account/developer/keys/" + keyID},
			{"POST", "/account/developer/keys"},
			{"POST", regen},
			{"POST", "/account/developer/keys/" + keyID + "/delete"},
			{"POST", roles},
		} {
			var form url.Values
			if a.method == "POST" {
				form = url.Values{"csrf_token": {tok}, "name": {"sneaky"}, "confirm": {"yes"}, "role_id": {"role_user"}}
			}
			r := pb.do(a.method, a.path, form)
			if r.status != http.StatusForbidden || !strings.Contains(r.body, "<html") || !strings.Contains(r.body, "missing permission api_keys:") {
				t.Errorf("%s %s by a user without the permission: %d %s", a.method, a.path, r.status, r.body)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, plain.ID); n != 0 {
			t.Errorf("the refused user has %d keys", n)
		}
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusOK)

		// Delete: needs the box, then the key is refused.
		del := "/account/developer/keys/" + keyID + "/delete"
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, del, url.Values{}); q.status != http.StatusBadRequest || keys() != 1 {
			t.Errorf("delete without the box: %d", q.status)
		}
		if q := developerPost(t, b, "/account/developer/keys/"+keyID, del, url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/account/developer" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/api-keys", newKey, nil, http.StatusUnauthorized)
		if l := b.get("/account/developer"); !strings.Contains(l.body, "The API key was deleted.") {
			t.Errorf("list after delete: %s", l.body)
		}

		// In the user's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, dev.ID)
		if l := b.get("/account/developer"); !strings.Contains(l.body, `lang="de"`) || !strings.Contains(l.body, "Ihre API-Schlüssel") || !strings.Contains(l.body, "Ihre OAuth-Clients") {
			t.Errorf("German page: %s", l.body)
		}
		if f := b.get("/account/developer/keys/new"); !strings.Contains(f.body, "API-Schlüssel erstellen") || !strings.Contains(f.body, "Läuft ab") {
			t.Errorf("German key form: %s", f.body)
		}
	})
}
