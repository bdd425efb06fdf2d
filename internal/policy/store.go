package policy

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	"hmid/internal/cache"
	"hmid/internal/db"
)

// Store holds the current policy of this instance in memory. Readers call
// Current, which never touches the database. A change made here (Changed)
// reloads the snapshot at once; other instances see it through Run:
//
//   - with a shared cache (Redis), a version counter is bumped on change and
//     Run reads it every tick (one cheap Redis call), reloading from the
//     database only when it moved;
//   - on PostgreSQL without Redis (Poll), Run re-reads the dozen policy rows
//     every tick;
//   - on SQLite there is one instance: Changed alone is enough.
type Store struct {
	DB *db.DB
	// Shared is the cache the version counter lives in (nil: none).
	Shared cache.Cache
	// Poll re-reads the rows every tick of Run (several instances sharing
	// a database without a shared cache).
	Poll bool

	cur     atomic.Pointer[Policy]
	version atomic.Int64
}

// versionKey is the shared cache's counter of policy changes.
const versionKey = "policy:version"

// Current returns the policy snapshot (Default before the first Load, and
// for a nil Store, so a service built without one keeps the defaults).
func (s *Store) Current() *Policy {
	if s == nil {
		return &Default
	}
	if p := s.cur.Load(); p != nil {
		return p
	}
	return &Default
}

// Set replaces the snapshot (tests and the first load).
func (s *Store) Set(p *Policy) { s.cur.Store(p) }

// loadSQL reads every policy row in one statement.
var loadSQL = func() string {
	ph := make([]string, len(Entries))
	for i := range Entries {
		ph[i] = "$" + itoa(i+1)
	}
	return `SELECT key, value, updated_at FROM system_config WHERE key IN (` + strings.Join(ph, ", ") + `)`
}()

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Load reads the policy rows and replaces the snapshot.
func (s *Store) Load(ctx context.Context) error {
	args := make([]any, len(Entries))
	for i, e := range Entries {
		args[i] = e.Key
	}
	rows, err := s.DB.QueryContext(ctx, loadSQL, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	got := map[string]Row{}
	for rows.Next() {
		var (
			key, value string
			updated    int64
		)
		if err := rows.Scan(&key, &value, &updated); err != nil {
			return err
		}
		got[key] = Row{Value: json.RawMessage(value), UpdatedAt: db.FromTS(updated)}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.cur.Store(Build(got))
	return nil
}

// Changed is called after a policy entry was written: this instance reloads
// at once, and the shared version moves so that the others reload at their
// next tick. A shared cache that cannot be reached is not an error: the
// change is in the database, and Run's next successful read of the version
// (which then differs from the one an instance saw before the outage, or
// not, when nothing moved) or a restart picks it up.
func (s *Store) Changed(ctx context.Context) error {
	if s.Shared != nil {
		if n, err := s.Shared.Incr(ctx, versionKey, 1, 0); err == nil {
			s.version.Store(n)
		}
	}
	return s.Load(ctx)
}

// Tick checks once whether another instance changed a policy and reloads
// if so (see Store).
func (s *Store) Tick(ctx context.Context) error {
	switch {
	case s.Shared != nil:
		n, err := s.Shared.Incr(ctx, versionKey, 0, 0)
		if err != nil {
			return err
		}
		if s.version.Swap(n) == n {
			return nil
		}
	case !s.Poll:
		return nil
	}
	return s.Load(ctx)
}

// Run calls Tick every interval until ctx ends, reporting failures to
// report (a failure keeps the last snapshot: policies never fall back to
// defaults because a store hiccuped).
func (s *Store) Run(ctx context.Context, every time.Duration, report func(error)) {
	db.Every(ctx, every, func() {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			report(err)
		}
	})
}
