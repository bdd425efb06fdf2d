package db_test

import (
	"context"
	"testing"

	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// TestEveryWritePathAdvancesVersion holds the row cache's invariant: each
// way the package offers to write a table advances that table's Version once
// the write is done, and the one way that could not (a writing statement
// through QueryContext) is refused. A new write path added to DB or Tx that
// forgets the versions fails here.
func TestEveryWritePathAdvancesVersion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		ins := `INSERT INTO settings (key, value, created_at, updated_at) VALUES ($1, '1', 1, 1)`
		writes := map[string]func(key string) error{
			"DB.ExecContext": func(k string) error { _, err := d.ExecContext(ctx, ins, k); return err },
			"DB.QueryRowContext RETURNING": func(k string) error {
				var got string
				return d.QueryRowContext(ctx, ins+` RETURNING key`, k).Scan(&got)
			},
			"Tx.ExecContext": func(k string) error {
				return d.Tx(ctx, func(tx *db.Tx) error { _, err := tx.ExecContext(ctx, ins, k); return err })
			},
			"Tx.QueryRowContext RETURNING": func(k string) error {
				return d.Tx(ctx, func(tx *db.Tx) error {
					var got string
					return tx.QueryRowContext(ctx, ins+` RETURNING key`, k).Scan(&got)
				})
			},
			"Tx.QueryContext RETURNING": func(k string) error {
				return d.Tx(ctx, func(tx *db.Tx) error {
					rows, err := tx.QueryContext(ctx, ins+` RETURNING key`, k)
					if err != nil {
						return err
					}
					return rows.Close()
				})
			},
			"Tx.Stmt of PrepareWrite": func(k string) error {
				ws, err := d.PrepareWrite(ctx, ins)
				if err != nil {
					return err
				}
				defer ws.Close()
				return d.Tx(ctx, func(tx *db.Tx) error { _, err := tx.Stmt(ctx, ws).ExecContext(ctx, k); return err })
			},
		}
		for name, write := range writes {
			before := d.Version("settings")
			if err := write("k-" + name); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if after := d.Version("settings"); after == before {
				t.Errorf("%s wrote settings without advancing its Version", name)
			}
		}
		if _, err := d.QueryContext(ctx, ins+` RETURNING key`, "k-query"); err == nil {
			t.Error("QueryContext ran a writing statement, which no Version would record")
		}
		var n int
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM settings WHERE key = $1`, "k-query").Scan(&n); err != nil || n != 0 {
			t.Errorf("refused write left %d rows (%v)", n, err)
		}
	})
}
