package store

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hmid/internal/db"
)

// purgedTables are the tables Purge keeps small, reported by TableSizes.
var purgedTables = []string{"oauth_tokens", "oauth_codes", "oauth_pending_authorizations", "oauth_client_tokens", "oauth_device_authorizations"}

// TableSizes returns a Prometheus collector of the row counts of the token
// tables, as the gauge hmid_oauth_table_rows{table}, read at each scrape:
// an exact COUNT(*) on SQLite, the planner's estimate (pg_class.reltuples,
// kept by autovacuum) on PostgreSQL, where counting a large table would cost
// a full scan. A table that cannot be read is left out of that scrape.
func (s *Store) TableSizes() prometheus.Collector {
	return &tableSizes{db: s.db, desc: prometheus.NewDesc("hmid_oauth_table_rows",
		"Rows of the OAuth token tables (an estimate on PostgreSQL).", []string{"table"}, nil)}
}

type tableSizes struct {
	db   *db.DB
	desc *prometheus.Desc
}

var _ prometheus.Collector = (*tableSizes)(nil)

// Describe implements prometheus.Collector.
func (c *tableSizes) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *tableSizes) Collect(ch chan<- prometheus.Metric) {
	// A scrape has no request context; bound it so a stuck database cannot
	// hold the metrics endpoint.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, table := range purgedTables {
		n, err := c.rows(ctx, table)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), table)
	}
}

// rows counts table's rows; on PostgreSQL it reads the estimate, counting
// only a table never analyzed yet (reltuples -1).
func (c *tableSizes) rows(ctx context.Context, table string) (int64, error) {
	var n int64
	if c.db.Flavor == db.Postgres {
		if err := c.db.QueryRowContext(ctx, `SELECT reltuples::BIGINT FROM pg_class WHERE oid = to_regclass($1)`, table).Scan(&n); err != nil {
			return 0, err
		}
		if n >= 0 {
			return n, nil
		}
	}
	err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n)
	return n, err
}
