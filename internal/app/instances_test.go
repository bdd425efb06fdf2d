package app_test

import (
	"net/http"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/sessions"
)

// TestTwoInstancesShareState runs two hmid instances on one PostgreSQL (with
// the authentication epoch in Redis when HMID_TEST_REDIS_URL is set, and in
// the database without it): each sees the other's writes, and a revocation on
// one is refused by the other on its very next request, cache or not.
func TestTwoInstancesShareState(t *testing.T) {
	t.Parallel()
	if dbtest.PostgresURL() == "" {
		t.Skip("HMID_TEST_POSTGRES_URL is not set")
	}
	epochs := map[string]string{"db-epoch": ""}
	if r := dbtest.RedisURL(); r != "" {
		epochs["redis-epoch"] = r
	}
	for name, redisURL := range epochs {
		t.Run(name, func(t *testing.T) {
			a, b := apptest.NewPair(t, redisURL)
			u := a.NewUser(t, apptest.UserSpec{Username: "shared_user"})
			admin := a.Admin(t)

			// A session made on A works on B; B caches the principal.
			var rec sessions.Record
			a.Call(t, "POST", "/v1/sessions", a.SystemKey, map[string]any{"userId": u.ID}, http.StatusCreated).Decode(t, &rec)
			b.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, b.SystemKey, nil, http.StatusOK)
			b.Call(t, "GET", "/v1/users/me", rec.SessionToken, nil, http.StatusOK)

			// A write on A is read on B.
			a.Call(t, "PATCH", "/v1/users/"+u.ID+"/username", u.Token, map[string]any{"username": "renamed_on_a"}, http.StatusOK)
			if d := data(t, b.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)); d["username"] != "renamed_on_a" {
				t.Fatalf("B sees %v", d["username"])
			}

			// Revoked on A: refused on B at once, without waiting for B's cache.
			a.Call(t, "DELETE", "/v1/sessions/"+rec.SessionToken+"?reason=revoked", a.SystemKey, nil, http.StatusNoContent)
			b.Call(t, "GET", "/v1/users/me", rec.SessionToken, nil, http.StatusUnauthorized)
			b.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, b.SystemKey, nil, http.StatusNotFound)

			// A self-service revocation on B is refused on A.
			tok2, id2 := a.NewSession(t, u.ID)
			a.Call(t, "GET", "/v1/users/me", tok2, nil, http.StatusOK)
			b.Call(t, "DELETE", "/v1/users/me/sessions/"+id2, u.Token, nil, http.StatusOK)
			a.Call(t, "GET", "/v1/users/me", tok2, nil, http.StatusUnauthorized)

			// A role given on A is effective on B; taking it away on B is effective on A.
			b.Call(t, "GET", "/v1/users", u.Token, nil, http.StatusForbidden)
			reader := roleWith(t, a, "users:read")
			a.Call(t, "POST", "/v1/users/"+u.ID+"/roles", admin.Token, map[string]any{"role_id": reader}, http.StatusCreated)
			b.Call(t, "GET", "/v1/users", u.Token, nil, http.StatusOK)
			a.Call(t, "GET", "/v1/users", u.Token, nil, http.StatusOK)
			b.Call(t, "DELETE", "/v1/users/"+u.ID+"/roles/"+reader, admin.Token, nil, http.StatusNoContent)
			a.Call(t, "GET", "/v1/users", u.Token, nil, http.StatusForbidden)

			// Deleting the user on B ends their session on A.
			b.Call(t, "DELETE", "/v1/users/"+u.ID, admin.Token, nil, http.StatusNoContent)
			a.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		})
	}
}
