package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A database that lives as long as the test process, for an instance that
// many tests share (apptest.Shared), belongs to no test, so no test's
// cleanup removes it. The process cannot remove it either: a test binary
// has no hook at exit. So what a process leaves behind is removed by a
// later one: SQLite files lie in a directory named after the process id,
// removed once no process of that id runs; PostgreSQL databases carry the
// token of sweepPostgres.

// processDir is this process's directory for lasting SQLite files.
var processDir struct {
	once sync.Once
	path string
	err  error
}

// processDirPrefix begins the names of the directories of processDir.
const processDirPrefix = "hmid-process-"

func lastingDir() (string, error) {
	processDir.once.Do(func() {
		sweepProcessDirs()
		processDir.path, processDir.err = os.MkdirTemp("", processDirPrefix+strconv.Itoa(os.Getpid())+"-")
	})
	return processDir.path, processDir.err
}

// sweepProcessDirs removes the directories of processes that have ended.
// A directory younger than a minute is left alone whatever its id says:
// its maker may have just made it.
func sweepProcessDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), processDirPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), processDirPrefix), "-", 2)[0])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if fi, err := os.Stat(d); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// lastingCount numbers this process's lasting databases.
var lastingCount struct {
	sync.Mutex
	n int
}

// Lasting returns an engine named name ("sqlite" or "postgres") whose
// database, a copy of the migrated template, lives as long as the test
// process; a later process removes it. It is for an instance that many
// tests share, which no single test's cleanup may end. On "postgres" it
// needs HMID_TEST_POSTGRES_URL, and carries HMID_TEST_REDIS_URL along.
func Lasting(name string) (Engine, error) {
	lastingCount.Lock()
	lastingCount.n++
	n := lastingCount.n
	lastingCount.Unlock()
	switch name {
	case "sqlite":
		dir, err := lastingDir()
		if err != nil {
			return Engine{}, err
		}
		data, err := migratedSQLite()
		if err != nil {
			return Engine{}, err
		}
		path := filepath.Join(dir, fmt.Sprintf("shared-%d.db", n))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return Engine{}, err
		}
		return Engine{Name: name, URL: "sqlite:" + path}, nil
	case "postgres":
		if PostgresURL() == "" {
			return Engine{}, fmt.Errorf("dbtest: HMID_TEST_POSTGRES_URL is not set")
		}
		if err := preparePostgres(); err != nil {
			return Engine{}, err
		}
		dbname := fmt.Sprintf("%s_%s_lasting%d", pgPrefix, pgTemplate.token, n)
		if err := copyTemplate(context.Background(), dbname); err != nil {
			return Engine{}, err
		}
		return Engine{Name: name, URL: withDatabase(pgTemplate.base, dbname), RedisURL: RedisURL()}, nil
	}
	return Engine{}, fmt.Errorf("dbtest: unknown engine %q", name)
}
