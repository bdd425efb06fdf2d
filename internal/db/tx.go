package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// Tx is a transaction on the writer, begun by DB.Tx. Its query methods
// reuse the statements DB has prepared on SQLite, where parsing SQL costs
// about as much as running a point query.
type Tx struct {
	tx *sql.Tx // unexported, so every statement goes through the methods that track writes
	d  *DB
	// missed holds query texts run unprepared in this transaction; they are
	// prepared once the connection is free again (preparing on the pool now
	// would wait for the connection this transaction holds).
	missed []string
	hooks  []func()
	wrote  []string // tables written, for Version once the transaction ends
}

var _ Querier = (*Tx)(nil)

// stmt returns the transaction's handle on the prepared statement for q, or
// nil when q is not prepared yet (it then will be after this transaction).
// Flavor is the engine of the transaction's database.
func (t *Tx) Flavor() Flavor { return t.d.Flavor }

func (t *Tx) stmt(ctx context.Context, q string) *sql.Stmt {
	if t.d.Flavor != SQLite {
		return nil
	}
	if v, ok := t.d.writeStmts.m.Load(q); ok {
		return t.tx.StmtContext(ctx, v.(*sql.Stmt))
	}
	t.missed = append(t.missed, q)
	return nil
}

// stmtCtx is the context a statement of the transaction runs under. On
// SQLite a statement interrupted by its context's end rolls back the whole
// transaction, which under group commit holds other requests' work too, so
// statements run to completion; a transaction whose request is gone is not
// started in the first place.
func (t *Tx) stmtCtx(ctx context.Context) context.Context {
	if t.d.Flavor == SQLite {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// ExecContext runs a statement in the transaction.
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return txRun(t, ctx, query, args, (*sql.Stmt).ExecContext, (*sql.Tx).ExecContext)
}

// QueryContext runs a query in the transaction.
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return txRun(t, ctx, query, args, (*sql.Stmt).QueryContext, (*sql.Tx).QueryContext)
}

// txRun runs query in t, counted, traced and its tables noted as written:
// through prepared on the statement DB has prepared, else through direct.
func txRun[T any](t *Tx, ctx context.Context, query string, args []any,
	prepared func(*sql.Stmt, context.Context, ...any) (T, error),
	direct func(*sql.Tx, context.Context, string, ...any) (T, error)) (res T, err error) {
	if err := checkArgs(args); err != nil {
		return res, err
	}
	countStatement(ctx, query)
	if end := t.d.traceStatement(ctx, query); end != nil {
		defer func() { end(err) }()
	}
	t.wrote = append(t.wrote, t.d.versions.of(query)...)
	ctx = t.stmtCtx(ctx)
	if st := t.stmt(ctx, query); st != nil {
		return prepared(st, ctx, args...)
	}
	return direct(t.tx, ctx, query, args...)
}

// QueryRowContext runs a single-row query in the transaction.
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) (row *Row) {
	if err := checkArgs(args); err != nil {
		return &Row{err: err}
	}
	countStatement(ctx, query)
	if end := t.d.traceStatement(ctx, query); end != nil {
		defer func() { row.traced = end }()
	}
	t.wrote = append(t.wrote, t.d.versions.of(query)...)
	ctx = t.stmtCtx(ctx)
	if st := t.stmt(ctx, query); st != nil {
		return &Row{Row: st.QueryRowContext(ctx, args...)}
	}
	return &Row{Row: t.tx.QueryRowContext(ctx, query, args...)}
}

// Stmt returns the transaction's handle on a statement prepared with
// DB.PrepareWrite; its tables count as written by the transaction.
func (t *Tx) Stmt(ctx context.Context, w *WriteStmt) *sql.Stmt {
	countStatement(ctx, w.query)
	t.wrote = append(t.wrote, w.tables...)
	return t.tx.StmtContext(ctx, w.stmt)
}

// Tx runs fn in a transaction on the writer: its changes are committed when
// it returns nil and discarded when it returns an error (or panics, the
// panic then continuing in the caller). On SQLite the transaction is
// serialized with every other, so read-modify-write sequences inside it
// need no further locking.
//
// On SQLite, transactions are group-committed: one goroutine owns the writer
// connection and runs the transactions that queued up while it was busy in
// one database transaction, each inside its own SAVEPOINT, then commits them
// together. A function that fails is rolled back to its savepoint alone, and
// nobody's Tx returns before the commit that makes its changes durable. The
// commit (writing the WAL frames of every page touched) is then paid once per
// batch instead of once per request, and the writer never idles while a
// descheduled request goroutine holds it.
func (d *DB) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	countTx(ctx)
	return d.observe(d.tx(ctx, fn))
}

func (d *DB) tx(ctx context.Context, fn func(tx *Tx) error) error {
	if d.gc != nil {
		return d.gc.run(ctx, fn)
	}
	stx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := &Tx{tx: stx, d: d}
	defer func() {
		// A panicking fn must not leave the transaction, its locks and its
		// connection behind.
		if v := recover(); v != nil {
			_ = stx.Rollback()
			panic(v)
		}
	}()
	err = fn(tx)
	if err == nil {
		err = stx.Commit()
	} else {
		_ = stx.Rollback()
	}
	d.versions.bump(tx.wrote)
	if err != nil {
		return err
	}
	for _, h := range tx.hooks {
		h()
	}
	return nil
}

// AfterCommit registers f to run once tx commits, in the caller of DB.Tx
// before Tx returns; it is dropped when the transaction rolls back. Side
// effects that must not be seen for a rolled-back operation (notifications,
// the authentication epoch) use it.
func (tx *Tx) AfterCommit(f func()) {
	tx.hooks = append(tx.hooks, f)
}

// maxGroup bounds how many transactions one commit carries, and so how long
// the last of them waits for the first.
const maxGroup = 64

// ErrClosed is returned by Tx once the database is closing.
var ErrClosed = errors.New("db: database is closed")

// groupCommit is the SQLite writer loop behind DB.Tx.
type groupCommit struct {
	d       *DB
	reqs    chan *txReq // unbuffered: a request sent is a request the loop runs
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// txReq is one call of Tx waiting for the writer loop.
type txReq struct {
	ctx   context.Context
	fn    func(*Tx) error
	tx    *Tx
	err   error
	panic any // what fn panicked with, and where
	done  chan struct{}
}

func startGroupCommit(d *DB) *groupCommit {
	g := &groupCommit{d: d, reqs: make(chan *txReq), stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.loop()
	return g
}

// close stops the loop after the batch it is running.
func (g *groupCommit) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.stopped
}

// run hands fn to the loop and waits for its outcome. It waits even when ctx
// ends meanwhile: fn may be running, on the caller's variables.
func (g *groupCommit) run(ctx context.Context, fn func(*Tx) error) error {
	r := &txReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-g.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-r.done
	if r.tx != nil {
		g.d.versions.bump(r.tx.wrote)
	}
	if r.panic != nil {
		panic(r.panic)
	}
	if r.err != nil {
		return r.err
	}
	for _, h := range r.tx.hooks {
		h()
	}
	return nil
}

func (g *groupCommit) loop() {
	defer close(g.stopped)
	batch := make([]*txReq, 0, maxGroup)
	for {
		select {
		case r := <-g.reqs:
			batch = append(batch[:0], r)
		case <-g.stop:
			return
		}
	collect:
		for len(batch) < maxGroup {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		g.commit(batch)
	}
}

// commit runs batch in one transaction and reports to each request.
func (g *groupCommit) commit(batch []*txReq) {
	d := g.d
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	ctx := context.Background()
	stx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	// Control statements go through a Tx of their own, so they too are
	// prepared once and reused.
	ctl := &Tx{tx: stx, d: d}
	ok := false // some request's changes await the commit
	for _, r := range batch {
		r.tx = &Tx{tx: stx, d: d}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if len(batch) == 1 {
			g.call(r)
			ok = r.err == nil
			break
		}
		if _, err := ctl.ExecContext(ctx, "SAVEPOINT tx"); err != nil {
			g.abort(stx, batch, err)
			return
		}
		g.call(r)
		if r.err == nil {
			_, err = ctl.ExecContext(ctx, "RELEASE tx")
			ok = ok || err == nil
		} else {
			_, err = ctl.ExecContext(ctx, "ROLLBACK TO tx")
			if err == nil {
				_, err = ctl.ExecContext(ctx, "RELEASE tx")
			}
		}
		if err != nil {
			// The transaction itself is gone (SQLite rolls back the whole of
			// it on I/O errors and a full disk): nothing of this batch stays.
			g.abort(stx, batch, err)
			return
		}
	}
	if !ok {
		_ = stx.Rollback()
	} else if err := stx.Commit(); err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
	for _, t := range append([]*Tx{ctl}, txs(batch)...) {
		for _, q := range t.missed {
			d.writeStmts.get(ctx, d.w, q)
		}
	}
}

// txs returns the transactions handed to batch's functions.
func txs(batch []*txReq) []*Tx {
	out := make([]*Tx, len(batch))
	for i, r := range batch {
		out[i] = r.tx
	}
	return out
}

// call runs r's function, turning a panic into an error for the batch and a
// panic value for the caller.
func (g *groupCommit) call(r *txReq) {
	defer func() {
		if v := recover(); v != nil {
			r.panic = fmt.Sprintf("%v\n\n[in a transaction function]\n%s", v, debug.Stack())
			r.err = fmt.Errorf("db: transaction function panicked: %v", v)
		}
	}()
	r.err = r.fn(r.tx)
}

// abort rolls the batch back and fails every request of it that had no
// error of its own: their work is lost, or they had not run.
func (g *groupCommit) abort(stx *sql.Tx, batch []*txReq, err error) {
	_ = stx.Rollback()
	for _, r := range batch {
		if r.err == nil {
			r.err = fmt.Errorf("db: transaction rolled back: %w", err)
		}
	}
}
