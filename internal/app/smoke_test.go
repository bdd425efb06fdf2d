package app_test

import (
	"net/http"
	"testing"

	"hmid/internal/apptest"
)

func TestHealthAndInfo(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
