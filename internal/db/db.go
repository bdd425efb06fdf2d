// Package db opens hmid's database (SQLite or PostgreSQL), applies the embedded
// migrations, and offers the few helpers every area shares: transactions,
// time encoding, error classification, reading all rows of a query (All)
// and a change of exactly one row (ExecOne).
//
// SQL is written once in the PostgreSQL dialect with $1 placeholders and runs
// unchanged on SQLite ≥ 3.35 (RETURNING, ON CONFLICT … DO UPDATE). The schema
// is kept portable instead of translated: ids are TEXT (UUID strings or role_<name>),
// timestamps are BIGINT Unix microseconds in UTC, booleans are BOOLEAN, arrays
// and free JSON are TEXT holding JSON.
//
// On SQLite the database runs in WAL mode with a single writer connection and a
// pool of query-only readers (the PocketBase layout), so writes never fight for
// the file lock inside one process. Callers therefore follow one rule: a
// statement that writes, including INSERT … RETURNING, goes through ExecContext,
// Writer or Tx; QueryContext and QueryRowContext read. Inside Tx, use only the
// transaction: asking the DB for the writer again would wait for the connection
// the transaction holds.
package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Flavor names the database engine.
type Flavor string

// The supported engines.
const (
	SQLite   Flavor = "sqlite"
	Postgres Flavor = "postgres"
)

// Querier is what both *DB and *Tx offer; area code takes it so the same
// function runs inside or outside a transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *Row
}

var _ Querier = (*DB)(nil)

// Row is the result of QueryRowContext. It is a *sql.Row that, for a
// writing statement run outside a transaction (INSERT … RETURNING), advances
// the written tables' Version once Scan has finished the statement, so a
// cache of rows never keeps a row older than a committed write.
type Row struct {
	*sql.Row
	done   func()
	traced func(error) // ends the statement's span (tracing on)
	err    error       // an argument refused before the statement ran
}

// Scan copies the row's columns into dest, as sql.Row.Scan does.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	err := r.Row.Scan(dest...)
	if r.traced != nil {
		r.traced(spanError(err))
		r.traced = nil
	}
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

// Err reports the error of the row's statement, as sql.Row.Err does.
func (r *Row) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Row.Err()
}

// DB is an open database with its flavor.
type DB struct {
	Flavor Flavor
	w      *sql.DB // writer: one connection on SQLite
	r      *sql.DB // readers; the same pool as w on PostgreSQL and in-memory SQLite

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex // in-process job locks for SQLite

	// Prepared statements by query text, SQLite only (pgx caches statements
	// per connection itself). Parsing SQL is a large part of a point query's
	// cost in SQLite; statements are prepared once and reused.
	readStmts, writeStmts stmtCache

	gc *groupCommit // SQLite: runs every Tx on the one writer connection

	versions versions // per-table write counters (Version)

	dir    string       // directory of the SQLite file ("" otherwise), for Disk
	fullAt atomic.Int64 // Unix nanoseconds of the last "disk full" write error

	watch *watchdog // PostgreSQL: bounds the wait for a server that stopped answering
}

// Options tune Open. The zero value is the default of each field.
type Options struct {
	// SQLiteSync is SQLite's synchronous setting of a database file:
	// "normal" (default; WAL commits survive a process crash, the last ones
	// may be lost in a power cut) or "full" (every commit is fsynced).
	SQLiteSync string
	// StatementTimeout is PostgreSQL's statement_timeout, the server-side
	// bound of one statement (0: 30 s). A URL that sets statement_timeout wins.
	StatementTimeout time.Duration
	// ConnectTimeout bounds a new PostgreSQL connection, dial and
	// authentication (0: DependencyTimeout). A URL that sets connect_timeout wins.
	ConnectTimeout time.Duration
	// DependencyTimeout bounds each wait for PostgreSQL to answer when it
	// has stopped answering without closing its connections (a SIGSTOPped
	// server, a network that swallows packets): a statement on a connection,
	// a connect, a wait for a free connection behind stuck ones (0: 2 s,
	// HMID_DEPENDENCY_TIMEOUT). Statements that are slow on a server that
	// answers are not cut by it; statement_timeout bounds those. See watchdog.
	DependencyTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultStatementTimeout  = 30 * time.Second
	DefaultDependencyTimeout = 2 * time.Second
)

// TCP keepalive of PostgreSQL connections: an idle connection whose peer has
// gone (a host that crashed, a NAT that forgot it) is noticed within about
// 30 s instead of the kernel's two hours, before a request picks it.
var pgKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

// stmtCache keeps prepared statements of one pool, up to maxStmts texts (past
// that, queries with generated texts are simply not cached).
type stmtCache struct {
	m sync.Map // string → *sql.Stmt
	n atomic.Int32
}

const maxStmts = 1024

func (c *stmtCache) get(ctx context.Context, pool *sql.DB, q string) *sql.Stmt {
	if v, ok := c.m.Load(q); ok {
		return v.(*sql.Stmt)
	}
	if c.n.Load() >= maxStmts {
		return nil
	}
	st, err := pool.PrepareContext(ctx, q)
	if err != nil {
		// Let the plain call report the error.
		return nil
	}
	if prev, loaded := c.m.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	c.n.Add(1)
	return st
}

func (c *stmtCache) close() {
	c.m.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
}

// OpenWith opens the database named by url: "sqlite:PATH", "memory" or
// "postgres://…". It does not migrate; call Migrate.
func OpenWith(ctx context.Context, url string, o Options) (*DB, error) {
	d := &DB{locks: map[string]*sync.Mutex{}}
	switch {
	case url == "memory":
		d.Flavor = SQLite
		w, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
		if err != nil {
			return nil, err
		}
		// An in-memory database lives as long as its one connection.
		w.SetMaxOpenConns(1)
		w.SetMaxIdleConns(1)
		w.SetConnMaxIdleTime(0)
		w.SetConnMaxLifetime(0)
		d.w, d.r = w, w
	case strings.HasPrefix(url, "sqlite:"):
		d.Flavor = SQLite
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return nil, errors.New("db: sqlite URL needs a path, as in sqlite:./data/hmid.db")
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("db: create %s: %w", dir, err)
			}
		}
		syncMode, err := sqliteSync(o.SQLiteSync)
		if err != nil {
			return nil, err
		}
		d.dir = filepath.Dir(path)
		base := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(" + syncMode + ")"
		w, err := sql.Open("sqlite", base+"&_txlock=immediate")
		if err != nil {
			return nil, err
		}
		w.SetMaxOpenConns(1)
		w.SetMaxIdleConns(1)
		w.SetConnMaxIdleTime(0)
		r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
		if err != nil {
			w.Close()
			return nil, err
		}
		n := max(4, 2*runtime.GOMAXPROCS(0))
		r.SetMaxOpenConns(n)
		r.SetMaxIdleConns(n)
		d.w, d.r = w, r
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		d.Flavor = Postgres
		cfg, err := pgx.ParseConfig(postgresURL(url, o))
		if err != nil {
			return nil, fmt.Errorf("db: PostgreSQL URL: %w", err)
		}
		bound := cmp.Or(o.DependencyTimeout, DefaultDependencyTimeout)
		if u, err := neturl.Parse(url); err == nil && !u.Query().Has("connect_timeout") {
			cfg.ConnectTimeout = cmp.Or(o.ConnectTimeout, bound)
		}
		dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAliveConfig: pgKeepAlive}
		cfg.DialFunc = dialer.DialContext
		d.watch = newWatchdog(&cfg.Config, bound)
		p := stdlib.OpenDB(*cfg)
		p.SetMaxOpenConns(32)
		p.SetMaxIdleConns(32)
		p.SetConnMaxIdleTime(5 * time.Minute)
		d.w, d.r = p, p
	default:
		return nil, fmt.Errorf("db: unsupported database URL %q", url)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.w.PingContext(pctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	if d.Flavor == SQLite {
		d.gc = startGroupCommit(d)
	}
	return d, nil
}

// sqliteSync maps HMID_SQLITE_SYNC to the PRAGMA synchronous value.
func sqliteSync(v string) (string, error) {
	switch strings.ToLower(v) {
	case "", "normal":
		return "NORMAL", nil
	case "full":
		return "FULL", nil
	}
	return "", fmt.Errorf("db: SQLite synchronous setting must be normal or full, got %q", v)
}

// postgresURL adds the statement timeout to url unless it sets it. pgx
// sends parameters it does not know, such as statement_timeout, to the
// server as run-time settings of each connection.
func postgresURL(raw string, o Options) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return raw // pgx.ParseConfig reports it
	}
	q := u.Query()
	if q.Get("statement_timeout") == "" {
		q.Set("statement_timeout", strconv.FormatInt(cmp.Or(o.StatementTimeout, DefaultStatementTimeout).Milliseconds(), 10))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Close closes every pool.
func (d *DB) Close() error {
	if d.gc != nil {
		d.gc.close()
	}
	if d.watch != nil {
		defer d.watch.Close()
	}
	d.readStmts.close()
	d.writeStmts.close()
	err := d.w.Close()
	if d.r != d.w {
		err = errors.Join(err, d.r.Close())
	}
	return err
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.w.PingContext(ctx); err != nil {
		return err
	}
	var one int
	return d.r.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// ExecContext runs a writing statement on the writer.
func (d *DB) ExecContext(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	countStatement(ctx, query)
	if end := d.traceStatement(ctx, query); end != nil {
		defer func() { end(err) }()
	}
	defer d.versions.bump(d.versions.of(query))
	if d.Flavor == SQLite {
		if st := d.writeStmts.get(ctx, d.w, query); st != nil {
			res, err = st.ExecContext(ctx, args...)
			return res, d.observe(err)
		}
	}
	res, err = d.w.ExecContext(ctx, query, args...)
	return res, d.observe(err)
}

// QueryContext runs a reading query on the reader pool. A writing statement
// is refused: its tables' Version could not advance when it completes, so
// writes go through ExecContext, QueryRowContext or a transaction.
func (d *DB) QueryContext(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	countStatement(ctx, query)
	if end := d.traceStatement(ctx, query); end != nil {
		defer func() { end(err) }()
	}
	if w := d.versions.of(query); len(w) > 0 {
		return nil, fmt.Errorf("db: QueryContext is for reads; %v is written through ExecContext, QueryRowContext or Tx", w)
	}
	if d.Flavor == SQLite {
		if st := d.readStmts.get(ctx, d.r, query); st != nil {
			return st.QueryContext(ctx, args...)
		}
	}
	return d.r.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a single-row query: a read on the reader pool, a
// writing statement (INSERT/UPDATE/DELETE … RETURNING) on the writer, whose
// tables' Version advances once the row is scanned.
func (d *DB) QueryRowContext(ctx context.Context, query string, args ...any) (row *Row) {
	if err := checkArgs(args); err != nil {
		return &Row{err: err}
	}
	countStatement(ctx, query)
	if end := d.traceStatement(ctx, query); end != nil {
		defer func() { row.traced = end }()
	}
	if w := d.versions.of(query); len(w) > 0 {
		done := func() { d.versions.bump(w) }
		if d.Flavor == SQLite {
			if st := d.writeStmts.get(ctx, d.w, query); st != nil {
				return &Row{Row: st.QueryRowContext(ctx, args...), done: done}
			}
		}
		return &Row{Row: d.w.QueryRowContext(ctx, query, args...), done: done}
	}
	if d.Flavor == SQLite {
		if st := d.readStmts.get(ctx, d.r, query); st != nil {
			return &Row{Row: st.QueryRowContext(ctx, args...)}
		}
	}
	return &Row{Row: d.r.QueryRowContext(ctx, query, args...)}
}

// WriteStmt is a writing statement prepared once on the writer, for a hot
// path that runs it in many transactions (Tx.Stmt); it knows the tables it
// writes, so running it advances their Version like any other write.
type WriteStmt struct {
	stmt   *sql.Stmt
	tables []string
	query  string
}

// PrepareWrite prepares query on the writer.
func (d *DB) PrepareWrite(ctx context.Context, query string) (*WriteStmt, error) {
	st, err := d.w.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &WriteStmt{stmt: st, tables: d.versions.of(query), query: query}, nil
}

// Close releases the prepared statement.
func (w *WriteStmt) Close() error { return w.stmt.Close() }

// Every calls tick every interval, the first time one interval from now,
// until ctx ends: the loop of the jobs that poll the database (purges,
// reloads, the connection watchdog).
func Every(ctx context.Context, interval time.Duration, tick func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tick()
		}
	}
}

// TryLock takes a named, non-blocking lock shared by every instance on the same
// database, for background jobs that must run on one instance at a time. On
// PostgreSQL it is a session-level advisory lock held on a dedicated connection;
// on SQLite, which one process owns, an in-process mutex. ok is false when
// another holder has it. Call release when done.
func (d *DB) TryLock(ctx context.Context, name string) (release func(), ok bool, err error) {
	if d.Flavor == SQLite {
		d.locksMu.Lock()
		m := d.locks[name]
		if m == nil {
			m = &sync.Mutex{}
			d.locks[name] = m
		}
		d.locksMu.Unlock()
		if !m.TryLock() {
			return nil, false, nil
		}
		return m.Unlock, true, nil
	}
	conn, err := d.w.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", name).Scan(&ok); err != nil || !ok {
		conn.Close()
		return nil, false, err
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", name)
		conn.Close()
	}, true, nil
}
