package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// TestFirstPartySecretRegeneration: a first-party client's secret is the
// credential of an app that skips consent, so only super admins and system
// keys may replace it. A developer with oauth_clients:update is refused
// (403, nothing changed) through REST, GraphQL and the admin console alike,
// and the console does not offer it; they still may for other clients.
func TestFirstPartySecretRegeneration(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{Password: "admin good password", SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		dev := roleUserWith(t, e, apptest.UserSpec{Password: "developer good password"}, "oauth_clients:read", "oauth_clients:update")
		owner := e.NewUser(t, apptest.UserSpec{})
		first := mkClient(t, e, admin.Token, map[string]any{"name": "Our App", "is_first_party": true})
		other := mkClient(t, e, owner.Token, map[string]any{"name": "Their App"})
		secretHash := func(id string) string {
			t.Helper()
			var h string
			if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT secret_hash FROM oauth_clients WHERE id = $1`, id).Scan(&h); err != nil {
				t.Fatal(err)
			}
			return h
		}
		regenerated := func() int {
			return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'client_secret_regenerated' AND resource_id = $1`, first.ID)
		}
		before := secretHash(first.ID)

		// REST: 403, nothing changed.
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients/" + first.ID + "/regenerate-secret", Token: dev.Token})
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "first-party") {
			t.Fatalf("developer REST: %d %s", r.Status, r.Body)
		}
		// GraphQL: the payload's failure, nothing changed.
		const regen = `mutation($id: ID!) { regenerateOauthClientSecret(id: $id) { success clientSecret error } }`
		wantPayloadFailure(t, gqlData(t, e, dev.Token, regen, map[string]any{"id": first.ID})["regenerateOauthClientSecret"])
		// Console: no regenerate form on the page, and a crafted POST (with a
		// valid token of the regen form from another client's page) is refused.
		b := signedInBrowser(t, e, dev)
		if p := b.get("/admin/clients/" + first.ID); p.status != http.StatusOK || strings.Contains(p.body, "/secret") {
			t.Fatalf("developer's page of the first-party client: %d, offers a new secret: %v", p.status, strings.Contains(p.body, "/secret"))
		}
		otherPage := b.get("/admin/clients/" + other.ID)
		p := b.do("POST", "/admin/clients/"+first.ID+"/secret", url.Values{
			"csrf_token": {formToken(t, otherPage.body, "/admin/clients/"+other.ID+"/secret")}, "confirm": {"yes"}})
		if p.status != http.StatusForbidden || developerSecret(p.body) != "" {
			t.Fatalf("developer console POST: %d %s", p.status, p.body)
		}
		if secretHash(first.ID) != before || regenerated() != 0 {
			t.Fatal("a refused regeneration changed the first-party client's secret")
		}
		// The developer may still regenerate a client that is not first-party.
		if r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients/" + other.ID + "/regenerate-secret", Token: dev.Token}); r.Status != http.StatusOK {
			t.Fatalf("developer, ordinary client: %d %s", r.Status, r.Body)
		}

		// A super admin (REST, GraphQL, console) and a system key may.
		for i, regenerate := range []func() string{
			func() string {
				return e.Call(t, "POST", "/v1/oauth/clients/"+first.ID+"/regenerate-secret", admin.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
			},
			func() string {
				return e.Call(t, "POST", "/v1/oauth/clients/"+first.ID+"/regenerate-secret", e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
			},
			func() string {
				out := gqlData(t, e, admin.Token, regen, map[string]any{"id": first.ID})["regenerateOauthClientSecret"].(map[string]any)
				s, _ := out["clientSecret"].(string)
				return s
			},
			func() string {
				ab := signedInBrowser(t, e, admin)
				page := "/admin/clients/" + first.ID
				return developerSecret(developerPost(t, ab, page, page+"/secret", url.Values{"confirm": {"yes"}}).body)
			},
		} {
			prev := secretHash(first.ID)
			if s := regenerate(); !strings.HasPrefix(s, "hm_sec_") || secretHash(first.ID) == prev {
				t.Fatalf("way %d: secret %q, stored hash changed: %v", i, s, secretHash(first.ID) != prev)
			}
		}
		if n := regenerated(); n != 4 {
			t.Fatalf("client_secret_regenerated events: %d, want 4", n)
		}
	})
}
