package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/faultproxy"
)

// TestFrozenPostgresIsBounded puts PostgreSQL behind a proxy and expects a
// statement that is slow on a server that answers to run to its end, a
// statement sent to a frozen server to fail as unavailable within the
// dependency timeout, the next ones at once, and the pool to work again
// once the server answers, without reopening the database.
func TestFrozenPostgresIsBounded(t *testing.T) {
	pg := dbtest.Postgres(t)
	// An application_name of the test's own tells its watchdog connection
	// from those of tests running beside it.
	name := "t" + strings.TrimSuffix(strings.TrimPrefix(dbtest.Key(), "hmidtest:"), ":")
	pg += "&application_name=" + name
	px := faultproxy.New(t, faultproxy.HostOf(t, pg))
	const bound = time.Second
	ctx := context.Background()
	d, err := db.OpenWith(ctx, px.Via(t, pg), db.Options{DependencyTimeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// Slow for good reasons is not frozen: the watchdog asks the server,
	// which answers, and the statement goes on.
	start := time.Now()
	var x any
	if err := d.QueryRowContext(ctx, "SELECT pg_sleep(2.5)").Scan(&x); err != nil {
		t.Fatalf("a statement of 2.5s with a timeout of %v: %v", bound, err)
	}
	if took := time.Since(start); took < 2500*time.Millisecond {
		t.Fatalf("pg_sleep(2.5) took %v", took)
	}
	// The watchdog's own connection, closed by the server meanwhile (as
	// idle_session_timeout or a restart would), is replaced, not taken for
	// a frozen server.
	var ended int
	if err := d.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		name+" "+db.ProbeApplicationName).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ending the watchdog's connection: %d, %v", ended, err)
	}
	if err := d.QueryRowContext(ctx, "SELECT pg_sleep(1.5)").Scan(&x); err != nil {
		t.Fatalf("a slow statement after the watchdog's connection ended: %v", err)
	}

	px.Freeze()
	for i, within := range []time.Duration{bound + 500*time.Millisecond, 100 * time.Millisecond} {
		start := time.Now()
		var one int
		err := d.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		took := time.Since(start)
		t.Logf("statement %d on a frozen server: %v after %v", i+1, err, took)
		if err == nil || !db.IsUnavailable(err) || apperr.KindOf(err) != apperr.ServiceUnavailable {
			t.Fatalf("statement %d on a frozen server: %v, want unavailable", i+1, err)
		}
		if took > within {
			t.Fatalf("statement %d on a frozen server took %v, want under %v", i+1, took, within)
		}
	}
	start = time.Now()
	err = d.Tx(ctx, func(tx *db.Tx) error {
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	})
	if !db.IsUnavailable(err) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("a transaction on a frozen server: %v after %v", err, time.Since(start))
	}
	if err := d.Ping(ctx); !db.IsUnavailable(err) {
		t.Fatalf("Ping on a frozen server: %v", err)
	}

	px.Thaw()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var one int
		err := d.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !db.IsUnavailable(err) {
			t.Fatalf("after the server thawed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("Ping after the server thawed: %v", err)
	}

	// A stopped server (connections cut and refused) is bounded the same way.
	px.Close()
	start = time.Now()
	var one int
	err = d.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	t.Logf("a statement on a stopped server: %v after %v", err, time.Since(start))
	if !db.IsUnavailable(err) || time.Since(start) > bound {
		t.Fatalf("a statement on a stopped server: %v after %v, want unavailable within %v", err, time.Since(start), bound)
	}
}
