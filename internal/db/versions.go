package db

import (
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// writeTarget finds the tables a statement writes: the names after INSERT
// INTO, UPDATE and DELETE FROM, wherever they stand (data-modifying CTEs
// included). A false match such as ON CONFLICT … DO UPDATE SET only bumps a
// version nobody reads.
var writeTarget = regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*)`)

// versions counts, per table, the writes this process has made to it. It is
// what an in-process cache of rows checks, on SQLite, where one process owns
// the database and so sees every write. Every statement reaches the database
// through DB or Tx methods that classify its text here (the pools and the
// transaction's *sql.Tx are unexported, and DB.QueryContext refuses writes),
// so no write can leave its table's version behind; versions_test.go holds
// each path to that.
type versions struct {
	tables  sync.Map // table name → *atomic.Uint64
	targets sync.Map // statement text → []string, the tables it writes
}

// of returns the tables query writes, from a cache of statement texts.
func (v *versions) of(query string) []string {
	if t, ok := v.targets.Load(query); ok {
		return t.([]string)
	}
	var out []string
	for _, m := range writeTarget.FindAllStringSubmatch(query, -1) {
		out = append(out, strings.ToLower(m[1]))
	}
	v.targets.Store(query, out)
	return out
}

// bump advances the versions of tables.
func (v *versions) bump(tables []string) {
	for _, t := range tables {
		c, ok := v.tables.Load(t)
		if !ok {
			c, _ = v.tables.LoadOrStore(t, new(atomic.Uint64))
		}
		c.(*atomic.Uint64).Add(1)
	}
}

// Version returns a number that changes after every write to table made
// through this DB (ExecContext, QueryRowContext, a transaction), once that write has
// committed (or rolled back). A cache reads it before loading a row and
// keeps the row only while it is unchanged, so the row can never be older
// than the last committed write. It covers this process's writes only: on
// PostgreSQL, which several instances share, it says nothing about the
// others.
func (d *DB) Version(table string) uint64 {
	if c, ok := d.versions.tables.Load(table); ok {
		return c.(*atomic.Uint64).Load()
	}
	return 0
}
