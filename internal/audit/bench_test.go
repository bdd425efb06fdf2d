package audit_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/dbtest"
)

// benchEventsFlag is the size of the audit log the listing is measured on
// (smaller values give a quick look while working on a query).
var benchEventsFlag = flag.Int("audit-events", 1_000_000, "audit events seeded by BenchmarkAdminAuditList")

// benchEngineFlag limits the benchmark to one engine ("sqlite" or "postgres").
var benchEngineFlag = flag.String("audit-engine", "", "run BenchmarkAdminAuditList on this engine only")

const benchUsers = 1_000

var benchStart = time.Date(2025, 11, 22, 0, 0, 0, 0, time.UTC)

// seedAuditLog fills a fresh database with benchUsers users and benchEvents
// events spread evenly over one year, in one transaction of multi-row INSERTs.
func seedAuditLog(b *testing.B, url string) *db.DB {
	b.Helper()
	ctx := context.Background()
	d := dbtest.Engine{URL: url}.Open(b)
	benchEvents := *benchEventsFlag
	if d.Flavor == db.SQLite {
		// One large transaction: a page cache that holds the indexes being
		// filled keeps SQLite from spilling them to the WAL over and over.
		if _, err := d.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	started := time.Now()
	err := d.Tx(ctx, func(tx *db.Tx) error {
		for u := range benchUsers {
			if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, username, email, created_at, updated_at) VALUES ($1, $2, $3, 0, 0)`,
				benchUserID(u), fmt.Sprintf("user_%04d", u), fmt.Sprintf("User.%04d@Example.test", u)); err != nil {
				return err
			}
		}
		const cols, batch = 11, 500
		var sb strings.Builder
		sb.WriteString(`INSERT INTO audit_events (id, user_id, event_type, resource_type, ip_address, user_agent, metadata, status, source_service, created_at, is_reported) VALUES `)
		for r := range batch {
			if r > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for c := range cols {
				if c > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "$%d", r*cols+c+1)
			}
			sb.WriteString(")")
		}
		insert := sb.String()
		// Events arrive in time order, as a real log's do.
		step := int64(365*24*time.Hour/time.Microsecond) / int64(benchEvents)
		resources := []string{"session", "user", "api_key", "oauth_client", "command"}
		args := make([]any, 0, cols*batch)
		for i := 0; i < benchEvents; i += batch {
			args = args[:0]
			for j := range batch {
				n := i + j
				status, source := "success", "api"
				if rng.IntN(10) == 0 {
					status = "failure"
				}
				if rng.IntN(20) == 0 {
					source = audit.SourceServices[1+rng.IntN(len(audit.SourceServices)-1)]
				}
				args = append(args, fmt.Sprintf("ev-%08d", n), benchUserID(rng.IntN(benchUsers)),
					audit.EventTypes[rng.IntN(len(audit.EventTypes))], resources[rng.IntN(len(resources))],
					"203.0.113.1", "Mozilla/5.0", `{"k":1}`, status, source,
					db.TS(benchStart)+int64(n)*step+rng.Int64N(step), rng.IntN(1000) == 0)
			}
			if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
				return err
			}
		}
		// The writer keeps the daily counts as it records; rows inserted
		// directly get theirs the way the migration fills them.
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_event_counts (day, event_type, status, source_service, is_reported, resource_type, n)
			SELECT created_at - (created_at % 86400000000), event_type, status, source_service, is_reported, COALESCE(resource_type, ''), COUNT(*)
			FROM audit_events GROUP BY created_at - (created_at % 86400000000), event_type, status, source_service, is_reported, COALESCE(resource_type, '')`)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO audit_event_day_counts (day, status, is_reported, n)
			SELECT created_at - (created_at % 86400000000), status, is_reported, COUNT(*)
			FROM audit_events GROUP BY created_at - (created_at % 86400000000), status, is_reported`)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	// Statistics as a running database has them: autovacuum gathers them on
	// PostgreSQL; hmid runs no ANALYZE on SQLite, whose planner then prefers
	// the (column, created_at) indexes by their shape.
	if d.Flavor == db.Postgres {
		if _, err := d.ExecContext(ctx, `VACUUM ANALYZE audit_events`); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s: seeded %d events in %s", d.Flavor, benchEvents, time.Since(started).Round(time.Second))
	return d
}

func benchUserID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// BenchmarkAdminAuditList measures GET /v1/admin/audit's queries (the count
// and the page) on a log of one million events, per filter, reporting the
// 99th-percentile latency. Target: p99 below 50 ms on both engines.
func BenchmarkAdminAuditList(b *testing.B) {
	var engines []struct{ name, url string }
	if *benchEngineFlag != "postgres" {
		engines = append(engines, struct{ name, url string }{"sqlite", dbtest.SQLite(b)})
	}
	if dbtest.PostgresURL() != "" && *benchEngineFlag != "sqlite" {
		engines = append(engines, struct{ name, url string }{"postgres", dbtest.Postgres(b)})
	}
	week := benchStart.Add(200 * 24 * time.Hour)
	scenarios := []struct{ name, query string }{
		{"type+status", "event_type=login&status=failure"},
		{"user_search", "user_search=USER_0500"},
		{"date_range_7d", "start_date=" + week.Format(time.RFC3339) + "&end_date=" + week.Add(7*24*time.Hour).Format(time.RFC3339)},
		{"sort_event_type_asc", "sort_field=event_type&sort_direction=asc"},
		{"all_filters_sorted", "event_type=login&status=success&start_date=" + week.Format(time.DateOnly) +
			"&end_date=" + week.Add(30*24*time.Hour).Format(time.DateOnly) + "&sort_field=event_type&sort_direction=asc"},
		{"unfiltered_page_50", "page=50"},
	}
	for _, eng := range engines {
		d := seedAuditLog(b, eng.url)
		for _, sc := range scenarios {
			q, _ := url.ParseQuery(sc.query)
			f, err := audit.ParseAdminFilter(q)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(eng.name+"/"+sc.name, func(b *testing.B) {
				ctx := context.Background()
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					events, total, err := audit.List(ctx, d, f)
					lat = append(lat, time.Since(t0))
					if err != nil || total == 0 || len(events) == 0 {
						b.Fatalf("%s: %d events of %d, %v", sc.name, len(events), total, err)
					}
				}
				slices.Sort(lat)
				ms := func(p float64) float64 {
					return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
				}
				b.ReportMetric(ms(0.50), "p50-ms")
				b.ReportMetric(ms(0.99), "p99-ms")
			})
		}
	}
}
