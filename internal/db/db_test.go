package db_test

import (
	"context"
	"errors"
	"testing"

	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// eachDB runs test on a migrated database of each engine.
func eachDB(t *testing.T, test func(t *testing.T, ctx context.Context, d *db.DB)) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		test(t, context.Background(), eng.Open(t))
	})
}

func TestMigrateTxAndHooks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d, err := db.OpenWith(ctx, eng.URL, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		ran := 0
		err = d.Tx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { ran++ })
			_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ('a', '1', 1, 1)`)
			return err
		})
		if err != nil || ran != 1 {
			t.Fatalf("commit: ran %d, %v", ran, err)
		}
		boom := errors.New("boom")
		err = d.Tx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { ran++ })
			if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ('b', '1', 1, 1)`); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || ran != 1 {
			t.Fatalf("rollback: ran %d, %v", ran, err)
		}
		var n int
		if err := d.QueryRowContext(ctx, `SELECT COUNT(*) FROM settings`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows = %d, %v", n, err)
		}
		// A duplicate key is classified as a unique violation on both engines.
		_, err = d.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ('a', '1', 1, 1)`)
		if !db.IsUniqueViolation(err) {
			t.Fatalf("unique violation not recognised: %v", err)
		}
		// One holder of a job lock at a time.
		release, ok, err := d.TryLock(ctx, "job")
		if err != nil || !ok {
			t.Fatalf("first lock: %v %v", ok, err)
		}
		if _, ok2, _ := d.TryLock(ctx, "job"); ok2 {
			t.Fatal("second holder got the lock")
		}
		release()
	})
}
