package mail

import (
	"context"
	"database/sql"
	"strconv"
	"time"
)

// Querier reads rows; *sql.DB, *sql.Conn and *db.DB satisfy it.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Kept is a mail of the outbox as the admin console shows it.
type Kept struct {
	ID, To, Subject, Kind, Locale, Text string
	CreatedAt                           time.Time
}

// Outbox lists the mails the OutboxSender kept, newest first: limit of
// them from offset, those to the address to only when it is not "", and
// how many there are.
func Outbox(ctx context.Context, q Querier, to string, limit, offset int) ([]Kept, int, error) {
	cond, args := "TRUE", []any{}
	if to != "" {
		cond, args = "LOWER(to_addr) = LOWER($1)", []any{to}
	}
	total, err := count(ctx, q, `SELECT COUNT(*) FROM mail_outbox WHERE `+cond, args...)
	if err != nil {
		return nil, 0, err
	}
	n := len(args)
	rows, err := q.QueryContext(ctx, `SELECT id, to_addr, subject, kind, locale, text_body, created_at FROM mail_outbox WHERE `+cond+
		` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []Kept{}
	for rows.Next() {
		var k Kept
		var at int64
		if err := rows.Scan(&k.ID, &k.To, &k.Subject, &k.Kind, &k.Locale, &k.Text, &at); err != nil {
			return nil, 0, err
		}
		k.CreatedAt = time.UnixMicro(at).UTC()
		out = append(out, k)
	}
	return out, total, rows.Err()
}

// count runs a query of one number.
func count(ctx context.Context, q Querier, query string, args ...any) (int, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
