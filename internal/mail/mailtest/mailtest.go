// Package mailtest reads back the messages the outbox sender stored, so
// that tests can follow a verification or reset link.
//
// It lives apart from package mail so that only tests link it.
package mailtest

import (
	"context"
	"database/sql"
	"fmt"

	"hmid/internal/mail"
)

// Queryer runs a query; *sql.DB, *sql.Conn and *db.Tx satisfy it.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Outbox returns the messages stored for the address to, newest first. The
// address must match exactly as it was sent.
func Outbox(ctx context.Context, q Queryer, to string) ([]mail.Message, error) {
	rows, err := q.QueryContext(ctx,
		`SELECT to_addr, subject, kind, locale, text_body, html_body
		 FROM mail_outbox WHERE to_addr = $1
		 ORDER BY created_at DESC, id DESC`, to)
	if err != nil {
		return nil, fmt.Errorf("mail: read outbox: %w", err)
	}
	defer rows.Close()

	var out []mail.Message
	for rows.Next() {
		var m mail.Message
		if err := rows.Scan(&m.To, &m.Subject, &m.Kind, &m.Locale, &m.Text, &m.HTML); err != nil {
			return nil, fmt.Errorf("mail: read outbox: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mail: read outbox: %w", err)
	}
	return out, nil
}
