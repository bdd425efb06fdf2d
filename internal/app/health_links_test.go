package app_test

import (
	"net/http"
	"testing"

	"hmid/internal/apptest"
)

// TestHealthSameLinks: /health and /v1/health answer the same body (spec 1,
// Versioning 2), so their _links.self is the one canonical URL.
func TestHealthSameLinks(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
