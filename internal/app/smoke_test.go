package app_test

import (
	"net/http"
	"strings"
	"testing"

	_ "hmid/internal/app" // every room of the web layer adds its pages
	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/sessions"
	"hmid/internal/web"
)

func TestHealthAndInfo(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		for _, p := range []string{"/health", "/v1/health"} {
			r := e.Call(t, "GET", p, "", nil, http.StatusOK)
			m := r.JSON()
			if m["status"] != "ok" {
				t.Fatalf("%s status = %v", p, m["status"])
			}
		}
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1", Header: map[string]string{
			"User-Agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"}})
		c := r.JSON()["client"].(map[string]any)
		if c["browser"] != "Chrome" || c["os"] == "" || c["ip"] != "127.0.0.1" {
			t.Fatalf("client = %v", c)
		}
		e.Call(t, "GET", "/nope", "", nil, http.StatusNotFound)
		e.Call(t, "PUT", "/health", "", nil, http.StatusMethodNotAllowed)
	})
}

func TestRolesNeedPermission(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/roles", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/roles", "hm_st_bogus", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/roles", u.Token, nil, http.StatusForbidden)
		r := e.Call(t, "GET", "/v1/roles", e.SystemKey, nil, http.StatusOK)
		if n := len(r.JSON()["data"].([]any)); n != 6 {
			t.Fatalf("roles = %d", n)
		}
	})
}

// TestHealthSameLinks: /health and /v1/health answer the same body (spec 1,
// Versioning 2), so their _links.self is the one canonical URL.
func TestHealthSameLinks(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		var links []any
		for _, path := range []string{"/health", "/v1/health", "/health?probe=1"} {
			l := e.Call(t, "GET", path, "", nil, http.StatusOK).JSON()["_links"].(map[string]any)
			links = append(links, l["self"])
		}
		if links[0] != e.URL+"/v1/health" || links[1] != links[0] || links[2] != links[0] {
			t.Fatalf("self links %v", links)
		}
	})
}

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

// Every route of routes.go is described in api/openapi.yaml with its method,
// so the contract cannot miss an endpoint that no scenario happens to call.
// The consoles (/account, /admin) are pages for people, not an interface
// for programs: each calls the service of a documented REST route, and
// README lists them (docs/decisions.md, "The consoles").
func TestEveryRouteIsInTheContract(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
	doc, err := apptest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e.Server.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if path == "/account" || strings.HasPrefix(path, "/account/") || path == "/admin" || strings.HasPrefix(path, "/admin/") {
			continue
		}
		item := doc.Paths.Find(path)
		if item == nil {
			t.Errorf("%s is not in api/openapi.yaml", r)
			continue
		}
		if item.GetOperation(method) == nil {
			t.Errorf("%s: the path is in api/openapi.yaml but not this method", r)
		}
	}
}

// Every operation of api/openapi.yaml has a unique operationId and at least
// one tag declared in the top-level tags list, so generated clients get stable
// method names and generated docs group each operation under a described area.
func TestEveryOperationHasIdAndTags(t *testing.T) {
	t.Parallel()
	doc, err := apptest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		if tag.Description == "" {
			t.Errorf("tag %q has no description", tag.Name)
		}
		declared[tag.Name] = true
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share the operationId %q", where, other, op.OperationID)
			} else {
				ids[op.OperationID] = where
			}
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tags", where)
			}
			for _, tag := range op.Tags {
				if !declared[tag] {
					t.Errorf("%s: tag %q is not in the top-level tags list", where, tag)
				}
			}
		}
	}
}

// TestEveryPageParses parses every page of every room in every language:
// pages are parsed when first drawn, so a page that does not parse must fail
// here rather than on a person's request.
func TestEveryPageParses(t *testing.T) {
	t.Parallel()
	if err := web.ParseAll(); err != nil {
		t.Fatal(err)
	}
}

// TestFavicon: /favicon.ico is the embedded icon, not a 404.
func TestFavicon(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/favicon.ico"})
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "image/x-icon" || len(r.Body) < 100 || string(r.Body[:4]) != "\x00\x00\x01\x00" {
			t.Fatalf("favicon: %d %s %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
		}
	})
}
