package db

import (
	"context"
	"sync"
	"sync/atomic"
)

// counting is set once a StatementCounter exists (tests only). Until then
// counting a statement costs one atomic load and no context lookup.
var counting atomic.Bool

type counterKey struct{}

// StatementCounter records the SQL statements run under a context, for the
// tests that pin how many statements a hot request costs: a statement count
// is deterministic where a timing is not. A statement prepared with
// PrepareWrite counts once per Tx.Stmt, however often the handle then runs.
type StatementCounter struct {
	mu    sync.Mutex
	stmts []string
	txs   int
}

// WithStatementCounter returns ctx with a new counter attached: every
// statement run through DB or Tx under the returned context (or one derived
// from it) is recorded in it.
func WithStatementCounter(ctx context.Context) (context.Context, *StatementCounter) {
	counting.Store(true)
	c := &StatementCounter{}
	return context.WithValue(ctx, counterKey{}, c), c
}

// Statements returns the texts of the statements recorded so far, in order.
func (c *StatementCounter) Statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.stmts...)
}

// Transactions returns how many transactions were run (DB.Tx calls).
func (c *StatementCounter) Transactions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txs
}

// Reset forgets what was recorded.
func (c *StatementCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts, c.txs = nil, 0
}

// counterOf returns the counter of ctx, nil when there is none.
func counterOf(ctx context.Context) *StatementCounter {
	if !counting.Load() {
		return nil
	}
	c, _ := ctx.Value(counterKey{}).(*StatementCounter)
	return c
}

// countStatement records query in ctx's counter, if any.
func countStatement(ctx context.Context, query string) {
	if c := counterOf(ctx); c != nil {
		c.mu.Lock()
		c.stmts = append(c.stmts, query)
		c.mu.Unlock()
	}
}

// countTx records a transaction in ctx's counter, if any.
func countTx(ctx context.Context) {
	if c := counterOf(ctx); c != nil {
		c.mu.Lock()
		c.txs++
		c.mu.Unlock()
	}
}
