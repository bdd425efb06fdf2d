package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

// BenchmarkOAuthHotPaths measures the server's own cost (no sockets) of the
// OAuth hot paths on SQLite: UserInfo, the refresh grant, and the code flow
// (authorize with consent remembered, then the code exchange).
func BenchmarkOAuthHotPaths(b *testing.B) {
	t := &testing.T{}
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(b)})
	u := e.NewUser(b, apptest.UserSpec{})
	sess, _ := e.NewSession(b, u.ID)
	c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Bench"})
	q := authzParams(c.ID)
	tr := tokens(t, e, sess, c, q)
	serve := func(b *testing.B, method, path, tok string, form url.Values) *httptest.ResponseRecorder {
		var req *http.Request
		if form != nil {
			req = httptest.NewRequest(method, e.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(method, e.URL+path, nil)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		e.Server.ServeHTTP(w, req)
		return w
	}
	b.Run("userinfo", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if w := serve(b, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil); w.Code != http.StatusOK {
					b.Errorf("userinfo: %d %s", w.Code, w.Body)
				}
			}
		})
	})
	rt := tr["refresh_token"].(string) // rotated by each run, kept across b.N rounds
	b.Run("refresh", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			w := serve(b, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt},
				"client_id": {c.ID}, "client_secret": {c.Secret}})
			if w.Code != http.StatusOK {
				b.Fatalf("refresh: %d %s", w.Code, w.Body)
			}
			var out map[string]any
			_ = json.Unmarshal(w.Body.Bytes(), &out)
			rt = out["refresh_token"].(string)
		}
	})
	b.Run("code-flow", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w := serve(b, "GET", "/v1/oauth/authorize?"+q.Encode(), sess, nil)
				loc, _ := url.Parse(w.Header().Get("Location"))
				code := loc.Query().Get("code")
				if w.Code != http.StatusFound || code == "" {
					b.Errorf("authorize: %d %s", w.Code, w.Body)
					return
				}
				w = serve(b, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"authorization_code"}, "code": {code},
					"redirect_uri": {cb}, "client_id": {c.ID}, "client_secret": {c.Secret}})
				if w.Code != http.StatusOK {
					b.Errorf("exchange: %d %s", w.Code, w.Body)
				}
			}
		})
	})
}
