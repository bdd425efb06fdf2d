package db

import (
	"context"
	"database/sql"
	"errors"

	"hmid/internal/telemetry"
)

// traceStatement starts the span of a statement when tracing is on (see
// package telemetry) and returns the function that ends it; nil when off,
// which leaves a statement with one atomic load more. The span covers the
// statement until its call returns (for QueryRowContext, until Scan):
// reading the rows of QueryContext is the caller's time.
func (d *DB) traceStatement(ctx context.Context, query string) func(error) {
	if !telemetry.On() {
		return nil
	}
	system := "sqlite"
	if d.Flavor == Postgres {
		system = "postgresql"
	}
	return telemetry.StartStatement(ctx, system, query)
}

// spanError is the error a row's span records: no row is an answer, not a
// failure of the statement.
func spanError(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
