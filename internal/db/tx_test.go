package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// TestConcurrentTxIsolatesFailures runs many transactions at once, as group
// commit batches them on SQLite: those that fail (by error, by a constraint
// violation, by panicking) leave nothing behind, the others all commit, and
// after-commit hooks run exactly for the committed ones.
func TestConcurrentTxIsolatesFailures(t *testing.T) {
	eachDB(t, func(t *testing.T, ctx context.Context, d *db.DB) {
		if _, err := d.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ('taken', '1', 1, 1)`); err != nil {
			t.Fatal(err)
		}
		const n = 120
		boom := errors.New("boom")
		var hooks atomic.Int32
		errs := make([]error, n)
		panics := make([]any, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				defer func() { panics[i] = recover() }()
				errs[i] = d.Tx(ctx, func(tx *db.Tx) error {
					tx.AfterCommit(func() { hooks.Add(1) })
					if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ($1, '1', 1, 1)`, fmt.Sprintf("k%03d", i)); err != nil {
						return err
					}
					switch i % 4 {
					case 1:
						return boom
					case 2:
						// A second row whose key is taken: the first insert must go too.
						_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ('taken', '1', 1, 1)`)
						return err
					case 3:
						if i%8 == 3 {
							panic("tx function panics")
						}
					}
					return nil
				})
			})
		}
		wg.Wait()
		committed := 0
		for i := range n {
			switch {
			case i%4 == 1 && !errors.Is(errs[i], boom):
				t.Errorf("tx %d: %v, want boom", i, errs[i])
			case i%4 == 2 && !db.IsUniqueViolation(errs[i]):
				t.Errorf("tx %d: %v, want a unique violation", i, errs[i])
			case i%8 == 3 && panics[i] == nil:
				t.Errorf("tx %d: the panic did not reach the caller", i)
			case (i%4 == 0 || i%8 == 7) && (errs[i] != nil || panics[i] != nil):
				t.Errorf("tx %d: %v %v, want success", i, errs[i], panics[i])
			}
			if i%4 == 0 || i%8 == 7 {
				committed++
			}
		}
		var rows int
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM settings WHERE key LIKE 'k%'`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != committed || int(hooks.Load()) != committed {
			t.Fatalf("%d rows and %d hooks, want %d of each", rows, hooks.Load(), committed)
		}
	})
}

// TestTxAfterContextEnds: a transaction whose context has ended is not run.
func TestTxAfterContextEnds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		d := eng.Open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		err := d.Tx(ctx, func(*db.Tx) error { ran = true; return nil })
		if err == nil || ran {
			t.Fatalf("ran %v, err %v; want context error and no run", ran, err)
		}
	})
}

// TestEveryWritePathAdvancesVersion holds the row cache's invariant: each
// way the package offers to write a table advances that table's Version once
// the write is done, and the one way that could not (a writing statement
// through QueryContext) is refused. A new write path added to DB or Tx that
// forgets the versions fails here.
func TestEveryWritePathAdvancesVersion(t *testing.T) {
	eachDB(t, func(t *testing.T, ctx context.Context, d *db.DB) {
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

// TestTimeArgumentRefused: a time.Time bound where every timestamp column is
// BIGINT microseconds is refused on every path and engine, before the
// statement runs, so SQLite cannot silently store its text.
func TestTimeArgumentRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		d := eng.Open(t)
		ctx := context.Background()
		if _, err := d.ExecContext(ctx, `CREATE TABLE args_probe (at BIGINT)`); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		const ins = `INSERT INTO args_probe (at) VALUES ($1)`
		if _, err := d.ExecContext(ctx, ins, now); err == nil {
			t.Error("DB.ExecContext accepted a time.Time")
		}
		if _, err := d.QueryContext(ctx, `SELECT at FROM args_probe WHERE at = $1`, &now); err == nil {
			t.Error("DB.QueryContext accepted a *time.Time")
		}
		var n int64
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM args_probe WHERE at < $1`, now).Scan(&n); err == nil {
			t.Error("DB.QueryRowContext accepted a time.Time")
		}
		err := d.Tx(ctx, func(tx *db.Tx) error {
			if _, err := tx.ExecContext(ctx, ins, now); err == nil {
				t.Error("Tx.ExecContext accepted a time.Time")
			}
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM args_probe WHERE at < $1`, now).Scan(&n); err == nil {
				t.Error("Tx.QueryRowContext accepted a time.Time")
			}
			_, err := tx.ExecContext(ctx, ins, db.TS(now))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM args_probe`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows = %d, %v; want only the one bound with db.TS", n, err)
		}
	})
}
