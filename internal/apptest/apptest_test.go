package apptest

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hmid/internal/dbtest"
)

// TestCopyStartsLikeAnEmptyFile holds an instance started on a copy of the
// migrated template to one started on an empty file, which migrates it
// itself: the same rows in every table, and a system key of its own that
// works.
func TestCopyStartsLikeAnEmptyFile(t *testing.T) {
	empty := dbtest.SQLite(t)
	if err := os.WriteFile(strings.TrimPrefix(empty, "sqlite:"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := New(t, dbtest.Engine{Name: "sqlite", URL: empty})
	copied := New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
	want, got := rowCounts(t, fresh), rowCounts(t, copied)
	if len(want) < 50 || !slices.Equal(want, got) {
		t.Fatalf("rows per table after a start on an empty file:\n%v\nand on a copy of the template:\n%v", want, got)
	}
	for _, e := range []*Env{fresh, copied} {
		if e.SystemKey == "" {
			t.Fatal("no system key printed at the first start")
		}
		e.Call(t, "GET", "/v1/roles", e.SystemKey, nil, http.StatusOK)
	}
	if fresh.SystemKey == copied.SystemKey {
		t.Fatal("two instances got the same system key")
	}
}

// rowCounts lists "table n" for every table of e's database.
func rowCounts(t *testing.T, e *Env) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := e.Server.DB.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var out []string
	for _, tb := range tables {
		var n int
		if err := e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, tb+" "+strconv.Itoa(n))
	}
	return out
}

// TestSharedIsOneInstance: every Shared scenario of a process meets the
// same instance per engine, through a copy of its Env of its own.
func TestSharedIsOneInstance(t *testing.T) {
	var first []*Env
	Shared(t, func(t *testing.T, e *Env) {
		first = append(first, e)
		e.SystemKey = "changed by one test"
	})
	i := 0
	Shared(t, func(t *testing.T, e *Env) {
		if e.Server != first[i].Server {
			t.Fatalf("%s: a second Shared got another instance", e.Engine.Name)
		}
		if e.SystemKey == "changed by one test" {
			t.Fatal("one test's change to its Env reached another's")
		}
		e.Call(t, "GET", "/v1/roles", e.SystemKey, nil, http.StatusOK)
		i++
	})
}
