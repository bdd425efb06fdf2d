package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/db"
)

// On PostgreSQL the template is a database of its own, migrated once per
// process; each test gets a database copied from it with CREATE DATABASE …
// TEMPLATE, which copies files instead of replaying some sixty tables'
// DDL, and drops it afterwards (dropLater).
//
// A process that dies (a timeout, a kill) cannot drop what it made, so the
// databases carry their maker's token in their names (hmidttpl_TOKEN,
// hmidt_TOKEN_N), and the maker keeps a connection open whose
// application_name is hmidtest-TOKEN for as long as it lives. The first
// test of every process drops the databases of tokens that no connection
// carries any more: their makers are gone.

// pgTemplate is this process's PostgreSQL template.
var pgTemplate struct {
	once  sync.Once
	err   error
	base  *url.URL // HMID_TEST_POSTGRES_URL
	admin *sql.DB  // on the database of HMID_TEST_POSTGRES_URL; creates and drops
	owner *sql.Conn
	token string
	name  string // the template database
	n     atomic.Int64
}

// pgPrefix begins the name of every database this package makes.
const pgPrefix = "hmidt"

// preparePostgres makes this process's template database on first use.
func preparePostgres() error {
	pgTemplate.once.Do(func() { pgTemplate.err = buildPostgresTemplate() })
	return pgTemplate.err
}

func buildPostgresTemplate() error {
	ctx := context.Background()
	base, err := url.Parse(PostgresURL())
	if err != nil {
		return fmt.Errorf("HMID_TEST_POSTGRES_URL: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", withParam(base, "application_name", "hmidtest-"+token))
	if err != nil {
		return err
	}
	admin.SetMaxIdleConns(4)
	// The owner connection is never closed: it ends with the process, and
	// its application_name with it, which tells later processes that this
	// one's databases are leftovers.
	owner, err := admin.Conn(ctx)
	if err != nil {
		admin.Close()
		return fmt.Errorf("dbtest: postgres: %w", err)
	}
	if err := sweepPostgres(ctx, owner); err != nil {
		return err
	}
	name := pgPrefix + "tpl_" + token
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		return fmt.Errorf("dbtest: postgres: create the template: %w", err)
	}
	d, err := db.OpenWith(ctx, withDatabase(base, name), db.Options{})
	if err != nil {
		return fmt.Errorf("dbtest: postgres: open the template: %w", err)
	}
	err = d.Migrate(ctx)
	// A template may have no connection when it is copied: Close ends
	// every one of the pool.
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("dbtest: postgres: migrate the template: %w", err)
	}
	pgTemplate.base, pgTemplate.admin, pgTemplate.owner = base, admin, owner
	pgTemplate.token, pgTemplate.name = token, name
	return nil
}

// sweepPostgres drops the databases of makers that are gone: those whose
// token no connection's application_name carries.
func sweepPostgres(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `
		SELECT d.datname FROM pg_database d
		WHERE d.datname LIKE '`+pgPrefix+`\_%' OR d.datname LIKE '`+pgPrefix+`tpl\_%'`)
	if err != nil {
		return fmt.Errorf("dbtest: postgres: list databases: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	live := map[string]bool{}
	for _, n := range names {
		tok := pgToken(n)
		if tok == "" {
			continue
		}
		alive, ok := live[tok]
		if !ok {
			if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1)`, "hmidtest-"+tok).Scan(&alive); err != nil {
				return err
			}
			live[tok] = alive
		}
		if !alive {
			// Another process may be sweeping the same leftovers.
			_, _ = conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+n+` WITH (FORCE)`)
		}
	}
	return nil
}

// pgToken returns the maker's token in a database name of this package, or "".
func pgToken(name string) string {
	rest, ok := strings.CutPrefix(name, pgPrefix+"tpl_")
	if !ok {
		if rest, ok = strings.CutPrefix(name, pgPrefix+"_"); !ok {
			return ""
		}
		rest, _, _ = strings.Cut(rest, "_")
	}
	if len(rest) != 12 || strings.Trim(rest, "0123456789abcdef") != "" {
		return ""
	}
	return rest
}

// PostgresMigrated returns the URL of a new PostgreSQL database, a copy of
// this process's migrated template, dropped after the test; it skips the
// test when HMID_TEST_POSTGRES_URL is unset.
func PostgresMigrated(t testing.TB) string {
	t.Helper()
	if PostgresURL() == "" {
		t.Skip("HMID_TEST_POSTGRES_URL is not set")
	}
	if err := preparePostgres(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s_%s_%d", pgPrefix, pgTemplate.token, pgTemplate.n.Add(1))
	if err := copyTemplate(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropLater(name) })
	return withDatabase(pgTemplate.base, name)
}

// DROP DATABASE makes PostgreSQL checkpoint the whole cluster before it
// removes the files, which takes a good part of a second on a busy server:
// time a test would spend waiting with nothing to do. So copies are dropped
// by one goroutine behind the tests. The queue is short: when it is full,
// the test drops its copy itself, so no more than a few copies wait at any
// time; those a process leaves when it exits are swept by the next one.
var dropQueue = make(chan string, 8)

var dropperOnce sync.Once

// dropLater drops the database name behind the tests, or at once when
// the queue is full.
func dropLater(name string) {
	dropperOnce.Do(func() {
		go func() {
			for n := range dropQueue {
				dropNow(n)
			}
		}()
	})
	select {
	case dropQueue <- name:
	default:
		dropNow(name)
	}
}

// dropNow drops the database name. FORCE ends connections a test left
// open, which would otherwise make the drop fail; an error leaves the
// database to the sweep of a later process.
func dropNow(name string) {
	_, _ = pgTemplate.admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
}

// copyTemplate creates the database name as a copy of the template.
func copyTemplate(ctx context.Context, name string) error {
	// A copy is refused while anyone is connected to the template; nobody
	// should be, but a backend may linger a moment after its client left.
	var err error
	for try := 0; try < 50; try++ {
		if _, err = pgTemplate.admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+pgTemplate.name); err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("dbtest: postgres: copy the template: %w", err)
	}
	return nil
}

// withDatabase returns base naming database name instead of its own.
func withDatabase(base *url.URL, name string) string {
	u := *base
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// withParam returns base with the query parameter k set to v.
func withParam(base *url.URL, k, v string) string {
	u := *base
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}
