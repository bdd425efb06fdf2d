package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/faultproxy"
)

// TestSQLiteSyncReachesConnections opens SQLite with each HMID_SQLITE_SYNC
// value and reads PRAGMA synchronous back on the writer and a reader.
func TestSQLiteSyncReachesConnections(t *testing.T) {
	ctx := context.Background()
	for mode, want := range map[string]int{"": 1, "normal": 1, "full": 2} { // NORMAL = 1, FULL = 2
		d, err := db.OpenWith(ctx, dbtest.SQLite(t), db.Options{SQLiteSync: mode})
		if err != nil {
			t.Fatal(err)
		}
		var r, w int
		if err := d.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&r); err != nil {
			t.Fatal(err)
		}
		err = d.Tx(ctx, func(tx *db.Tx) error { return tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&w) })
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r != want || w != want {
			t.Errorf("sync %q: reader synchronous=%d, writer %d, want %d", mode, r, w, want)
		}
	}
	if _, err := db.OpenWith(ctx, dbtest.SQLite(t), db.Options{SQLiteSync: "off"}); err == nil {
		t.Fatal("synchronous=off was accepted")
	}
}

// TestPostgresStatementTimeout checks that the statement timeout reaches
// every connection and that a statement cancelled by it is an outage.
func TestPostgresStatementTimeout(t *testing.T) {
	ctx := context.Background()
	u := dbtest.Postgres(t)
	d, err := db.OpenWith(ctx, u, db.Options{StatementTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var st string
	if err := d.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&st); err != nil || st != "500ms" {
		t.Fatalf("statement_timeout = %q, %v; want 500ms", st, err)
	}
	var x any
	err = d.QueryRowContext(ctx, "SELECT pg_sleep(2)").Scan(&x)
	if err == nil || !db.IsUnavailable(err) || apperr.KindOf(err) != apperr.ServiceUnavailable {
		t.Fatalf("a statement over the timeout: %v (unavailable %v)", err, db.IsUnavailable(err))
	}
	// The default, and a URL that sets its own.
	d2, err := db.OpenWith(ctx, u, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if err := d2.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&st); err != nil || st != "30s" {
		t.Fatalf("default statement_timeout = %q, %v; want 30s", st, err)
	}
	d3, err := db.OpenWith(ctx, u+"&statement_timeout=7000", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if err := d3.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&st); err != nil || st != "7s" {
		t.Fatalf("the URL's statement_timeout = %q, %v; want 7s", st, err)
	}
}

// TestSQLiteFullDisk makes SQLite run out of pages and expects the failed
// write to be an outage that Disk reports, and a constraint failure not to be.
func TestSQLiteFullDisk(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}.Open(t)
	if st := d.Disk(); !st.Known || st.Full || st.TotalBytes == 0 {
		t.Fatalf("disk before = %+v", st)
	}
	insert := func(key string, size int) error {
		_, err := d.ExecContext(ctx, `INSERT INTO settings (key, value, created_at, updated_at) VALUES ($1, $2, 1, 1)`, key, strings.Repeat("x", size))
		return err
	}
	if err := insert("dup", 1); err != nil {
		t.Fatal(err)
	}
	if err := insert("dup", 1); err == nil || db.IsUnavailable(err) || apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("a unique violation: %v, classified unavailable", err)
	}
	var pages int
	if err := d.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	err := insert("big", 1<<20)
	if err == nil || !db.IsUnavailable(err) || apperr.KindOf(err) != apperr.ServiceUnavailable {
		t.Fatalf("a write on a full database: %v", err)
	}
	if !d.Disk().Full {
		t.Fatalf("disk after a full write = %+v, want Full", d.Disk())
	}
}

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
