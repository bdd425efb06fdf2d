package app_test

import (
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

// Every route of routes.go is described in api/openapi.yaml with its method,
// so the contract cannot miss an endpoint that no scenario happens to call.
// The consoles (/account, /admin) are pages for people, not an interface
// for programs: each calls the service of a documented REST route, and
// README lists them (docs/decisions.md, "The consoles").
func TestEveryRouteIsInTheContract(t *testing.T) {
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
