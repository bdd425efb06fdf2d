package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"hmid/internal/apperr"

	"github.com/google/uuid"
)

// TS encodes t for a BIGINT timestamp column (Unix microseconds, UTC).
func TS(t time.Time) int64 { return t.UnixMicro() }

// checkArgs refuses a time.Time bound as a statement argument. Every
// timestamp column is BIGINT Unix microseconds (TS): PostgreSQL refuses a
// time there, but SQLite's column affinity stores its text form and the
// mistake would stay silent on one engine. Refusing it on both makes the
// SQLite suite catch what only PostgreSQL would.
func checkArgs(args []any) error {
	for i, a := range args {
		switch a.(type) {
		case time.Time, *time.Time:
			return fmt.Errorf("db: argument %d is a %T; bind timestamps with db.TS or db.NullTS", i+1, a)
		}
	}
	return nil
}

// FromTS decodes a BIGINT timestamp column value.
func FromTS(us int64) time.Time { return time.UnixMicro(us).UTC() }

// NullTS encodes an optional time: nil or the zero time become SQL NULL.
func NullTS(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// NullTime scans a nullable BIGINT timestamp column.
type NullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (n *NullTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n = NullTime{}
	case int64:
		*n = NullTime{Time: FromTS(x), Valid: true}
	default:
		return fmt.Errorf("db: cannot scan %T into NullTime", v)
	}
	return nil
}

// Value implements driver.Valuer.
func (n NullTime) Value() (driver.Value, error) {
	if !n.Valid {
		return nil, nil
	}
	return n.Time.UnixMicro(), nil
}

// Ptr returns the time or nil.
func (n NullTime) Ptr() *time.Time {
	if !n.Valid {
		return nil
	}
	t := n.Time
	return &t
}

// JSON encodes v as JSON text for a TEXT column holding JSON.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values that cannot be JSON (channels, functions) fail; area code never stores those.
		panic(fmt.Sprintf("db: JSON of %T: %v", v, err))
	}
	return string(b)
}

// Strings scans a TEXT column holding a JSON array of strings; NULL or "" give an empty slice.
type Strings []string

// Scan implements sql.Scanner.
func (s *Strings) Scan(v any) error {
	var raw []byte
	switch x := v.(type) {
	case nil:
		*s = Strings{}
		return nil
	case string:
		raw = []byte(x)
	case []byte:
		raw = x
	default:
		return fmt.Errorf("db: cannot scan %T into Strings", v)
	}
	if len(raw) == 0 {
		*s = Strings{}
		return nil
	}
	out, ok := plainStrings(raw)
	if !ok {
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("db: Strings: %w", err)
		}
	}
	if out == nil {
		out = []string{}
	}
	*s = out
	return nil
}

// Value implements driver.Valuer.
func (s Strings) Value() (driver.Value, error) {
	if s == nil {
		return "[]", nil
	}
	return JSON([]string(s)), nil
}

// IsUniqueViolation reports whether err is a unique or primary-key constraint failure.
func IsUniqueViolation(err error) bool {
	return isViolation(err, "23505", "UNIQUE constraint failed", "PRIMARY KEY constraint failed")
}

// IsForeignKeyViolation reports whether err is a foreign-key constraint failure.
func IsForeignKeyViolation(err error) bool {
	return isViolation(err, "23503", "FOREIGN KEY constraint failed")
}

// isViolation reports whether err is a constraint failure: on PostgreSQL
// one of SQLSTATE state, on SQLite one whose message holds one of
// sqliteTexts (or a PostgreSQL error that reached us as text only).
func isViolation(err error, state string, sqliteTexts ...string) bool {
	if err == nil {
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == state
	}
	msg := err.Error()
	for _, t := range append(sqliteTexts, "SQLSTATE "+state) {
		if strings.Contains(msg, t) {
			return true
		}
	}
	return false
}

// Like escapes s for use inside a LIKE pattern with ESCAPE '\'.
func Like(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Scanner is a row to scan: *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// All runs a reading query through q and scans every row with scan, returning
// an empty (never nil) slice when there are none.
func All[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ScanString reads a row of one text column: the scan of All for a list of
// ids, names or keys.
func ScanString(row Scanner) (string, error) {
	var v string
	err := row.Scan(&v)
	return v, err
}

// ExecOne runs a statement meant to change one row, such as a DELETE by
// id; when it changes none, the error is a not-found naming what.
func ExecOne(ctx context.Context, q Querier, what, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.NotFoundf("%s not found", what)
	}
	return nil
}

// NewID returns a new row id: a UUID version 7 (RFC 9562 §5.7), whose
// leading 48 bits are the creation time in milliseconds. Ids made one after
// the other sort together, so inserts land at the right edge of the primary
// key index instead of on a random page: fewer pages dirtied per write and,
// on PostgreSQL, fewer full-page images in the WAL after each checkpoint.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// StringPtr returns the string of a nullable TEXT column, or nil for NULL.
func StringPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	return &n.String
}

// NotFoundOr turns sql.ErrNoRows, the error of a lookup that matched no row,
// into an apperr NotFound "<what> not found"; any other error passes through.
func NotFoundOr(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.NotFoundf("%s not found", what)
	}
	return err
}

// plainStrings parses the form every stored list has, a JSON array of
// strings of printable ASCII without escapes (["openid","profile"], with or
// without spaces: PostgreSQL's jsonb writes them), without encoding/json,
// whose reflection was most of what reading a token's scopes cost. ok is
// false for anything else, which encoding/json then reads. The strings are
// slices of one copy of raw, and the list is sized by its commas, so a list
// costs two allocations whatever its length.
func plainStrings(raw []byte) (out []string, ok bool) {
	text := string(raw)
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '[' {
		return nil, false
	}
	out = make([]string, 0, strings.Count(text, ",")+1)
	if i = skipSpace(text, i+1); i < len(text) && text[i] == ']' {
		return out, skipSpace(text, i+1) == len(text)
	}
	for {
		s, next, ok := plainString(text, i)
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if i = skipSpace(text, next); i >= len(text) {
			return nil, false
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case ']':
			return out, skipSpace(text, i+1) == len(text)
		default:
			return nil, false
		}
	}
}

// plainString reads the string starting at text[i], a '"', up to its
// closing quote, and returns it and the index after it; ok is false unless
// it is all printable ASCII without a backslash.
func plainString(text string, i int) (s string, next int, ok bool) {
	if i >= len(text) || text[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(text); j++ {
		switch c := text[j]; {
		case c == '"':
			return text[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", 0, false
		}
	}
	return "", 0, false
}

// skipSpace returns the index of the first byte from i on that is not JSON
// white space.
func skipSpace(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}
