package app_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

// BenchmarkHotPaths measures the server's own cost per request (no sockets)
// for the API-key authenticated reads of the foundation scenarios.
func BenchmarkHotPaths(b *testing.B) {
	e := apptest.New(&testing.T{}, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(b)})
	u := e.NewUser(b, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin"}})
	key, _ := e.NewAPIKey(b, u.ID, "roles:read")
	for _, path := range []string{"/health", "/v1/roles", "/v1/users/me"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest("GET", path, nil)
					req.Header.Set("Authorization", "Bearer "+key)
					w := httptest.NewRecorder()
					e.Server.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Errorf("%s: %d %s", path, w.Code, w.Body)
					}
				}
			})
		})
	}
}
