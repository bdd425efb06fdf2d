package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/authn"
	"hmid/internal/db"
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

// countedReq serves one request straight to the server's handler (no
// socket, so the request's context reaches every statement) and returns the
// response and the SQL statements it ran.
func countedReq(t *testing.T, e *apptest.Env, method, path, tok string, body any) (*httptest.ResponseRecorder, []string) {
	t.Helper()
	var rd *bytes.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case url.Values:
		rd, ctype = bytes.NewReader([]byte(b.Encode())), "application/x-www-form-urlencoded"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(raw), "application/json"
	}
	req := httptest.NewRequest(method, e.URL+path, rd)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	ctx, c := db.WithStatementCounter(req.Context())
	w := httptest.NewRecorder()
	e.Server.ServeHTTP(w, req.WithContext(ctx))
	return w, c.Statements()
}

// wantStatements fails unless got ran exactly the statements whose texts
// start with the prefixes of want, in order.
func wantStatements(t *testing.T, what string, got []string, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(squash(got[i]), want[i])
	}
	if !ok {
		var b strings.Builder
		for i, q := range got {
			b.WriteString("\n  ")
			b.WriteString(string(rune('1' + i)))
			b.WriteString(": ")
			b.WriteString(squash(q))
		}
		t.Fatalf("%s ran %d statements, want %d (%q):%s", what, len(got), len(want), want, b.String())
	}
}

// squash folds a query's white space, so prefixes compare across line breaks.
func squash(q string) string { return strings.Join(strings.Fields(q), " ") }

// TestHotPathStatementCounts pins the number of SQL statements each hot
// request runs, on a warmed cache: a statement added to a hot path shows up
// here as a failure, deterministically, where a benchmark only drifts.
// Each expected statement is named by the start of its text.
func TestHotPathStatementCounts(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		sess, _ := e.NewSession(t, u.ID)
		c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Counted"})
		key, _ := e.NewAPIKey(t, u.ID, "users:read")
		gpsKey, _ := e.NewAPIKey(t, "", "gps:write")
		q := authzParams(c.ID)
		// Consent once; the counted flows below find it remembered.
		tokens(t, e, sess, c, q)

		for round := 0; round < 2; round++ { // the first round warms the caches
			w, authz := countedReq(t, e, "GET", "/v1/oauth/authorize?"+q.Encode(), sess, nil)
			if w.Code != http.StatusFound {
				t.Fatalf("authorize: %d %s", w.Code, w.Body)
			}
			loc, _ := url.Parse(w.Header().Get("Location"))
			code := loc.Query().Get("code")
			w, exch := countedReq(t, e, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {cb}, "client_id": {c.ID}, "client_secret": {c.Secret}})
			if w.Code != http.StatusOK {
				t.Fatalf("exchange: %d %s", w.Code, w.Body)
			}
			var tr map[string]any
			_ = json.Unmarshal(w.Body.Bytes(), &tr)
			w, ui := countedReq(t, e, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil)
			if w.Code != http.StatusOK {
				t.Fatalf("userinfo: %d %s", w.Code, w.Body)
			}
			w, ref := countedReq(t, e, "POST", "/v1/oauth/token", "", url.Values{"grant_type": {"refresh_token"},
				"refresh_token": {tr["refresh_token"].(string)}, "client_id": {c.ID}, "client_secret": {c.Secret}})
			if w.Code != http.StatusOK {
				t.Fatalf("refresh: %d %s", w.Code, w.Body)
			}
			w, me := countedReq(t, e, "GET", "/v1/users/me", key, nil)
			if w.Code != http.StatusOK {
				t.Fatalf("users/me: %d %s", w.Code, w.Body)
			}
			w, gps := countedReq(t, e, "POST", "/v1/gps", gpsKey, map[string]any{"latitude": 50.94, "longitude": 6.96, "altitude": 50, "heading": 0,
				"timestamp": e.Clock.Now().Add(-time.Minute).Unix(), "speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0})
			if w.Code != http.StatusCreated {
				t.Fatalf("gps: %d %s", w.Code, w.Body)
			}
			e.Clock.Advance(3 * time.Second)
			if round == 0 {
				continue
			}
			pg := e.Engine.Name == "postgres"
			// Without Redis, several instances on PostgreSQL share the
			// authentication epoch through the database: a request
			// authenticated from the resolver's cache (a session, an API key)
			// then reads it once (authn.DBEpoch).
			var epoch []string
			if _, ok := e.Server.Epoch.(authn.DBEpoch); ok {
				epoch = []string{"SELECT epoch FROM auth_epoch"}
			}
			// The client (authentication or redirect URI): on SQLite it comes
			// from the cache of rows, which no write in between changed.
			var client []string
			if pg {
				client = []string{"SELECT id, owner_id, name, description"}
			}
			wantStatements(t, "authorize (consent remembered)", authz, slices.Concat(client, epoch, []string{
				"SELECT scopes FROM oauth_consents", // the remembered consent
				"INSERT INTO oauth_codes",           // the code, with its session and authentication context
			})) // the session itself comes from the resolver's cache
			wantStatements(t, "code exchange", exch, slices.Concat(client, []string{
				"UPDATE oauth_codes SET used_at", // burn the code, returning it with its user's state
				"INSERT INTO oauth_tokens",       // the access and refresh token, one statement
				"INSERT INTO oauth_session_grants",
				"SELECT u.username", // the user's claims for the ID token
			}))
			wantStatements(t, "userinfo", ui, []string{
				"SELECT t.id, t.user_id", // token, client, user, claims and context in one
			})
			rotation := []string{"WITH r AS"} // spend, revoke the paired access token, insert the pair: one statement
			if !pg {
				rotation = []string{
					"UPDATE oauth_tokens SET revoked_at = $1, rotated_at = CASE", // spend, and revoke the paired access token
					"INSERT INTO oauth_tokens",                                   // the new pair
				}
			}
			wantStatements(t, "refresh", ref, slices.Concat(client, []string{
				"SELECT t.id, t.client_id", // token, user state, session, context and claims in one
			}, rotation))
			var meWant []string // SQLite: the user comes from the cache of rows
			if pg {
				meWant = []string{"SELECT id, username, email"}
			}
			wantStatements(t, "GET /v1/users/me (API key)", me, slices.Concat(epoch, meWant)) // the key comes from the resolver's cache
			// The point itself is written by the ingest batcher, outside the
			// request's context, in one transaction shared by the requests of
			// a batch; the request runs only the device lookup.
			wantStatements(t, "POST /v1/gps", gps, slices.Concat(epoch, []string{"SELECT id FROM devices WHERE api_key_id"}))
		}
	})
}

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
