package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hmid/internal/audit"
	"hmid/internal/db"
)

// The admin console's lists on big data (issue 14): the users list over
// 100,000 users and the audit log over 1,000,000 events, each a mix of the
// searches, filters and pages an operator uses, through the REST routes the
// pages call. The target is a p99 under 100 ms.
const (
	adminUsers  = 100_000
	adminEvents = 1_000_000
)

func init() {
	register(
		Scenario{Name: "admin-users-list", About: "GET /v1/users: searches by username, email and id, and deep pages, over 100,000 users",
			Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
				return e.adminRequests(ctx, "users:read", adminUsersPaths(), e.seedAdminUsers)
			}},
		Scenario{Name: "admin-audit-list", About: "GET /v1/admin/audit: filters, user search, date ranges, sorts and pages over 1,000,000 events",
			Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
				return e.adminRequests(ctx, "audit:read", adminAuditPaths(), e.seedAdminUsers, e.seedAdminAudit)
			}},
	)
}

// adminRequests runs the seeds, then makes the operation of an admin
// scenario: the paths in turn, with an API key of scope.
func (e *Env) adminRequests(ctx context.Context, scope string, paths []string, seeds ...func(context.Context) error) (func(context.Context, int) error, error) {
	for _, seed := range seeds {
		if err := seed(ctx); err != nil {
			return nil, err
		}
	}
	key, err := e.apiKey(ctx, scope)
	if err != nil {
		return nil, err
	}
	return e.rotate(key, paths), nil
}

// adminUsersPaths are the requests of admin-users-list.
func adminUsersPaths() []string {
	return []string{
		"/v1/users?search=" + url.QueryEscape("member_4242"),           // a username: 11 matches
		"/v1/users?search=" + url.QueryEscape("MEMBER.777@EXAMPLE"),    // an email, any case: 1 match
		"/v1/users?search=" + adminUserID(31337),                       // an id: 1 match
		"/v1/users?search=" + url.QueryEscape("member_9") + "&page=40", // a broad search, deep in its pages
		"/v1/users?search=nobody-is-called-this",                       // no match
		"/v1/users?page=2500",                                          // unfiltered, offset 50,000
		"/v1/users?page=1&limit=100",                                   // the first page, as the console opens
		"/v1/users?include_deleted=true&page=100",                      // soft-deleted users too
	}
}

// adminAuditPaths are the requests of admin-audit-list.
func adminAuditPaths() []string {
	week := time.Now().UTC().AddDate(0, 0, -100)
	month := time.Now().UTC().AddDate(0, 0, -30)
	return []string{
		"/v1/admin/audit?event_type=login&status=failure",
		"/v1/admin/audit?user_search=" + url.QueryEscape("MEMBER_4242"),
		"/v1/admin/audit?user_id=" + adminUserID(777),
		"/v1/admin/audit?start_date=" + week.Format(time.DateOnly) + "&end_date=" + week.AddDate(0, 0, 7).Format(time.DateOnly),
		"/v1/admin/audit?sort_field=event_type&sort_direction=asc&page=20",
		"/v1/admin/audit?event_type=login&status=success&start_date=" + url.QueryEscape(month.Format(time.RFC3339)) +
			"&sort_field=user_id&sort_direction=desc",
		"/v1/admin/audit?source_service=backend&status=failure&page=5",
		"/v1/admin/audit?is_reported=true",
		"/v1/admin/audit?resource_type=session&page=3",
		"/v1/admin/audit?page=500&limit=100",
	}
}

// rotate is an operation that GETs the paths in turn (over all workers) with
// key, so every query of the mix is measured about as often.
func (e *Env) rotate(key string, paths []string) func(ctx context.Context, worker int) error {
	ops := make([]func(context.Context, int) error, len(paths))
	for i, p := range paths {
		ops[i] = e.get(p, key)
	}
	var n atomic.Uint64
	return func(ctx context.Context, worker int) error {
		return ops[n.Add(1)%uint64(len(ops))](ctx, worker)
	}
}

// adminUserID is the id of the seeded user n (1 to adminUsers).
func adminUserID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

var (
	adminUsersOnce, adminAuditOnce sync.Once
	adminUsersErr, adminAuditErr   error
)

// seriesSQL is a common table expression s(g) of the numbers 1 to the value
// bound to $1, for each engine.
func seriesSQL(f db.Flavor) string {
	if f == db.Postgres {
		return `s(g) AS (SELECT generate_series(1, $1::bigint))`
	}
	return `RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)`
}

// pad12 is the integer expression x zero-padded to 12 digits, for each engine.
func pad12(f db.Flavor, x string) string {
	if f == db.Postgres {
		return `lpad((` + x + `)::text, 12, '0')`
	}
	return `printf('%012d', ` + x + `)`
}

// seedAdminUsers writes adminUsers users straight into the database in one
// statement, created one minute apart up to now: member_<n> with the email
// Member.<n>@example.test; every 100th is soft-deleted, every 50th banned,
// every 20th has two-factor authentication on.
func (e *Env) seedAdminUsers(ctx context.Context) error {
	if e.Server == nil {
		return errors.New("the admin lists seed their data directly: run them in process")
	}
	adminUsersOnce.Do(func() {
		started := time.Now()
		d := e.Server.DB
		now := db.TS(time.Now())
		step := int64(time.Minute / time.Microsecond)
		num := `$2::bigint`
		if d.Flavor == db.SQLite {
			num = `$2`
		}
		stmts := []string{
			`WITH ` + seriesSQL(d.Flavor) + `
			INSERT INTO users (id, username, email, name, created_at, updated_at, deleted_at, scheduled_deletion_at)
			SELECT '00000000-0000-4000-8000-' || ` + pad12(d.Flavor, "g") + `, 'member_' || g, 'Member.' || g || '@example.test', 'Member ' || g,
				` + num + ` - (` + fmt.Sprint(adminUsers) + ` - g) * ` + fmt.Sprint(step) + `, ` + num + `,
				CASE WHEN g % 100 = 0 THEN ` + num + ` END, CASE WHEN g % 100 = 0 THEN ` + num + ` + 604800000000 END
			FROM s`,
			`WITH ` + seriesSQL(d.Flavor) + `
			INSERT INTO bans (id, user_id, reason, banned_at, is_permanent)
			SELECT '00000000-0000-4000-8001-' || ` + pad12(d.Flavor, "g") + `, '00000000-0000-4000-8000-' || ` + pad12(d.Flavor, "g") + `, 'bench', ` + num + `, TRUE
			FROM s WHERE g % 50 = 0`,
			`WITH ` + seriesSQL(d.Flavor) + `
			INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, enabled_at, created_at, updated_at)
			SELECT '00000000-0000-4000-8000-' || ` + pad12(d.Flavor, "g") + `, 'enabled', 'sealed', (SELECT id FROM platforms WHERE slug = 'email'), ` + num + `, ` + num + `, ` + num + `, ` + num + `
			FROM s WHERE g % 20 = 0`,
		}
		if err := seed(ctx, d, stmts, adminUsers, now); err != nil {
			adminUsersErr = fmt.Errorf("seed users: %w", err)
			return
		}
		adminUsersErr = analyze(ctx, d, "users", "bans", "two_factor")
		fmt.Printf("  seeded %d users in %s\n", adminUsers, time.Since(started).Round(time.Millisecond))
	})
	return adminUsersErr
}

// seedAdminAudit writes adminEvents audit events straight into the database,
// spread evenly over the last year up to now, in time order as a real log
// grows: every event type in turn, one in ten failed, one in twenty from the
// backend, one in a thousand reported, each of a seeded user. It then adds
// them to the daily counts the audit writer keeps as it records.
func (e *Env) seedAdminAudit(ctx context.Context) error {
	adminAuditOnce.Do(func() {
		started := time.Now()
		d := e.Server.DB
		now := db.TS(time.Now())
		step := int64(365*24*time.Hour/time.Microsecond) / adminEvents
		types := make([]string, len(audit.EventTypes))
		for i, t := range audit.EventTypes {
			types[i] = fmt.Sprintf("(%d, '%s')", i, t)
		}
		num := `$2::bigint`
		if d.Flavor == db.SQLite {
			num = `$2`
		}
		q := `WITH ` + seriesSQL(d.Flavor) + `, types(k, t) AS (VALUES ` + strings.Join(types, ", ") + `)
			INSERT INTO audit_events (id, user_id, event_type, resource_type, resource_id, ip_address, user_agent, metadata, status, source_service, created_at, is_reported)
			SELECT 'bench-ev-' || ` + pad12(d.Flavor, "g") + `,
				'00000000-0000-4000-8000-' || ` + pad12(d.Flavor, "g * 7919 % "+fmt.Sprint(adminUsers)+" + 1") + `,
				types.t,
				CASE g % 4 WHEN 0 THEN 'session' WHEN 1 THEN 'user' WHEN 2 THEN 'api_key' ELSE 'oauth_client' END,
				'r-' || g, '203.0.113.' || (g % 250), 'Mozilla/5.0 (X11; Linux x86_64)', '{}',
				CASE WHEN g % 10 = 3 THEN 'failure' ELSE 'success' END,
				CASE WHEN g % 20 = 0 THEN 'backend' WHEN g % 20 = 1 THEN 'id' ELSE 'api' END,
				` + num + ` - (` + fmt.Sprint(adminEvents) + ` - g) * ` + fmt.Sprint(step) + `,
				g % 1000 = 0
			FROM s JOIN types ON types.k = g % ` + fmt.Sprint(len(types))
		if err := seed(ctx, d, []string{q}, adminEvents, now); err != nil {
			adminAuditErr = fmt.Errorf("seed audit events: %w", err)
			return
		}
		day := `created_at - (created_at % 86400000000)`
		if err := seed(ctx, d, []string{
			`INSERT INTO audit_event_counts (day, event_type, status, source_service, is_reported, resource_type, n)
			SELECT ` + day + `, event_type, status, source_service, is_reported, COALESCE(resource_type, ''), COUNT(*) FROM audit_events WHERE id LIKE 'bench-ev-%'
			GROUP BY ` + day + `, event_type, status, source_service, is_reported, COALESCE(resource_type, '')
			ON CONFLICT (day, event_type, status, source_service, is_reported, resource_type) DO UPDATE SET n = audit_event_counts.n + excluded.n`,
			`INSERT INTO audit_event_day_counts (day, status, is_reported, n)
			SELECT ` + day + `, status, is_reported, COUNT(*) FROM audit_events WHERE id LIKE 'bench-ev-%'
			GROUP BY ` + day + `, status, is_reported
			ON CONFLICT (day, status, is_reported) DO UPDATE SET n = audit_event_day_counts.n + excluded.n`,
		}); err != nil {
			adminAuditErr = fmt.Errorf("seed audit counts: %w", err)
			return
		}
		adminAuditErr = analyze(ctx, d, "audit_events", "audit_event_counts", "audit_event_day_counts")
		fmt.Printf("  seeded %d audit events in %s\n", adminEvents, time.Since(started).Round(time.Millisecond))
	})
	return adminAuditErr
}

// seed runs the statements of a bulk load in one transaction, each with
// args. On PostgreSQL the load may take longer than the statement timeout
// that bounds requests, so the transaction lifts it.
func seed(ctx context.Context, d *db.DB, stmts []string, args ...any) error {
	return d.Tx(ctx, func(tx *db.Tx) error {
		if d.Flavor == db.Postgres {
			if _, err := tx.ExecContext(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
				return err
			}
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// analyze gathers planner statistics of tables and marks their pages
// all-visible on PostgreSQL, as its autovacuum does after a bulk load
// (index-only scans depend on the latter). hmid runs no ANALYZE on SQLite,
// so the SQLite run plans as a production database does.
func analyze(ctx context.Context, d *db.DB, tables ...string) error {
	if d.Flavor != db.Postgres {
		return nil
	}
	_, err := d.ExecContext(ctx, `VACUUM ANALYZE `+strings.Join(tables, ", "))
	return err
}
