package db

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"hmid/internal/apperr"
)

// The database's "cannot answer now" errors are ServiceUnavailable for every
// caller: areas return driver errors as they come, and the HTTP and OAuth
// error writers turn them into 503 through apperr.IsUnavailable.
func init() { apperr.RegisterUnavailable(IsUnavailable) }

// IsUnavailable reports whether err means the database cannot answer now —
// unreachable, its connection lost, out of time, not answering at all
// (ErrNotAnswering), busy past the busy timeout, out of disk space or
// memory — rather than that the statement is wrong. It knows the errors of
// database/sql, pgx and SQLite.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, ErrClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, ErrNotAnswering) ||
		pgconn.Timeout(err) || errors.As(err, &ce) {
		return true
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return unavailableState(coded.SQLState())
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code; extended codes add bits above
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
			return true
		}
	}
	return false
}

// unavailableState reports whether a PostgreSQL SQLSTATE is an outage: class
// 08 (connection exception), 53 (insufficient resources: disk full, out of
// memory, too many connections), 58 (system error: I/O), and the cancels of
// statement_timeout (57014), lock_timeout (55P03), idle-in-transaction
// timeout (25P03) and server shutdown (57P01–57P03).
func unavailableState(state string) bool {
	switch {
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "53"), strings.HasPrefix(state, "58"):
		return true
	}
	switch state {
	case "57014", "55P03", "25P03", "57P01", "57P02", "57P03":
		return true
	}
	return false
}

// isDiskFull reports whether err is the database running out of space
// (SQLITE_FULL, or PostgreSQL's disk_full 53100).
func isDiskFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) && coded.SQLState() == "53100"
}

// observe notes a disk-full write error for Disk and returns err unchanged.
func (d *DB) observe(err error) error {
	if err != nil && isDiskFull(err) {
		d.fullAt.Store(time.Now().UnixNano())
	}
	return err
}

// fullMemory is how long a failed write keeps the disk reported full: long
// enough for a health probe to see it, short enough to clear soon after
// the operator frees space.
const fullMemory = 30 * time.Second

// lowDiskBytes is the free space under which a SQLite database's disk is
// reported full before writes start failing: a WAL checkpoint and a few
// batches of writes need about this much.
const lowDiskBytes = 32 << 20

// DiskStatus is what Disk knows about the space the database writes to.
type DiskStatus struct {
	Known      bool   // free and total space were measured (SQLite on a file system that reports them)
	FreeBytes  uint64 // available to hmid
	TotalBytes uint64
	Full       bool // writes fail or are about to: a write failed for lack of space lately, or FreeBytes < 32 MiB
}

// Disk reports the space of the SQLite database's directory and whether the
// database is out of space: a write failed with "disk full" within the last
// 30 seconds (both engines), or the directory has less than 32 MiB free.
func (d *DB) Disk() DiskStatus {
	var s DiskStatus
	if d.dir != "" {
		s.FreeBytes, s.TotalBytes, s.Known = freeSpace(d.dir)
	}
	recent := time.Since(time.Unix(0, d.fullAt.Load())) < fullMemory
	s.Full = recent || (s.Known && s.FreeBytes < lowDiskBytes)
	return s
}
