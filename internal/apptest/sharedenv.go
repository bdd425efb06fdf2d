package apptest

import (
	"sync"
	"testing"

	"hmid/internal/dbtest"
)

// sharedEnvs holds the instance of each engine that Shared hands out,
// started on first use.
var sharedEnvs struct {
	mu   sync.Mutex
	envs map[string]*sharedEnv
}

// sharedEnv is one engine's shared instance, or why it could not start.
type sharedEnv struct {
	once sync.Once
	env  *Env
	err  error
}

// Shared runs fn once per engine, like Each, but on one instance per engine
// that every test of the process calling Shared uses, at once when they run
// in parallel: starting an instance costs more than most scenarios do.
//
// A scenario may share only if another one running beside it cannot change
// its outcome, nor it theirs. So it neither moves the clock (Env.Advance,
// Env.Clock; Shared fails a test that did) nor needs options; it asserts
// only on what it made itself (its own users, clients and keys, found by id),
// never on counts of a whole table, lists of everything or the audit log at
// large; it changes nothing instance-wide (settings, policies, platforms,
// system roles, signing keys, the system key, the first administrator); and
// it stays clear of limits counted per client address, which every test
// shares (failed sign-ins, registrations, password resets). Anything else
// takes Each. Shared runs fn with a copy of the Env, so a test may change
// the copy's fields (SystemKey, Client) for itself.
//
// The instance is never stopped: it lasts as long as the test process, and
// what it leaves on disk or in PostgreSQL is removed by a later test process
// (dbtest.Lasting).
func Shared(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	names := []string{"sqlite"}
	if dbtest.PostgresURL() != "" {
		names = append(names, "postgres")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			base, err := sharedInstance(name)
			if err != nil {
				t.Fatal(err)
			}
			e := *base
			e.T = t
			fn(t, &e)
			if now := e.Clock.Now(); !now.Equal(Start) {
				t.Errorf("the clock of the shared instance moved to %v: a test that moves the clock takes apptest.Each", now)
			}
		})
	}
}

// sharedInstance returns the shared instance of the engine name, starting
// it on first use.
func sharedInstance(name string) (*Env, error) {
	sharedEnvs.mu.Lock()
	if sharedEnvs.envs == nil {
		sharedEnvs.envs = map[string]*sharedEnv{}
	}
	s := sharedEnvs.envs[name]
	if s == nil {
		s = &sharedEnv{}
		sharedEnvs.envs[name] = s
	}
	sharedEnvs.mu.Unlock()
	s.once.Do(func() {
		eng, err := dbtest.Lasting(name)
		if err != nil {
			s.err = err
			return
		}
		e := newEnv(eng)
		if err := e.start(baseConfig(eng, e.URL), dbtest.Key()); err != nil {
			s.err = err
			return
		}
		s.env = e
	})
	return s.env, s.err
}
