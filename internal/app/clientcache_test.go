package app_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"hmid/internal/apptest"
)

// TestClientRowCacheFollowsWrites: on SQLite the token endpoint reads its
// client from a cache of rows. Every write that changes the row must show
// at once: a new secret, a deactivation, and the owner's deletion (which
// empties owner_id through ON DELETE SET NULL, in a statement that names
// only users).
func TestClientRowCacheFollowsWrites(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, owner.Token, map[string]any{"name": "Cached App"})
		// authenticates reports whether the token endpoint accepted the
		// client's credentials: a bogus refresh token is then invalid_grant,
		// where a refused client is invalid_client.
		authenticates := func(secret string) bool {
			t.Helper()
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{"grant_type": {"refresh_token"},
				"refresh_token": {"hm_rt_bogus"}, "client_id": {c.ID}, "client_secret": {secret}}})
			switch r.Status {
			case http.StatusBadRequest:
				return true
			case http.StatusUnauthorized:
				return false
			}
			t.Fatalf("token: %d %s", r.Status, r.Body)
			return false
		}
		if !authenticates(c.Secret) || !authenticates(c.Secret) {
			t.Fatal("the client's own secret is refused")
		}
		next := e.Call(t, "POST", "/v1/oauth/clients/"+c.ID+"/regenerate-secret", owner.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)["client_secret"].(string)
		if authenticates(c.Secret) || !authenticates(next) {
			t.Fatal("after a new secret: the old one still works, or the new one does not")
		}
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, owner.Token, map[string]any{"is_active": false}, http.StatusOK)
		if authenticates(next) {
			t.Fatal("a deactivated client still authenticates")
		}
		get := func() map[string]any {
			return e.Call(t, "GET", "/v1/oauth/clients/"+c.ID, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		}
		if get()["owner_id"] != owner.ID {
			t.Fatalf("owner_id before: %v", get()["owner_id"])
		}
		if _, err := e.Server.DB.ExecContext(context.Background(), `DELETE FROM users WHERE id = $1`, owner.ID); err != nil {
			t.Fatal(err)
		}
		if o := get()["owner_id"]; o != nil {
			t.Fatalf("owner_id after the owner's deletion: %v, want null", o)
		}
	})
}
