package app_test

import (
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

// Every route of routes.go is described in api/openapi.yaml with its method,
// so the contract cannot miss an endpoint that no scenario happens to call.
func TestEveryRouteIsInTheContract(t *testing.T) {
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
	doc, err := apptest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e.Server.Routes() {
		method, path, _ := strings.Cut(r, " ")
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
