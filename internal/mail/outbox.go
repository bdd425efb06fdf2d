package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Execer runs a statement; *sql.DB, *sql.Conn and *db.Tx satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// OutboxSender is the sender used when no SMTP server is configured. It logs
// each message, body included, so that a developer running the service
// locally can follow a verification or reset link, and stores it in the
// mail_outbox table, where tests read it back (package mailtest).
//
// Because the log holds live links and tokens, a deployment with real users
// should configure an SMTP server instead.
type OutboxSender struct {
	// DB receives one INSERT per message.
	DB Execer
	// Logger gets one Info record per message.
	Logger *slog.Logger
	// Now gives the created_at of each row.
	Now func() time.Time
	// NewID gives the id of each row.
	NewID func() string
}

var _ Sender = (*OutboxSender)(nil)

// NewOutboxSender returns an OutboxSender writing to db and logger, with
// created_at from now and ids from newV7ID. All arguments are required.
func NewOutboxSender(db Execer, logger *slog.Logger, now func() time.Time) *OutboxSender {
	return &OutboxSender{DB: db, Logger: logger, Now: now, NewID: newV7ID}
}

// newV7ID returns a time-ordered UUID (RFC 9562 version 7). Outbox ids use
// it so that messages stored within the same microsecond (as with a fixed
// test clock) still read back newest first.
func newV7ID() string {
	// Since Go 1.24 crypto/rand never returns an error, so neither does NewV7.
	return uuid.Must(uuid.NewV7()).String()
}

// Send logs m and stores it in mail_outbox. It returns an error if m has no
// recipient or the insert fails; in that case the message is still logged.
func (s *OutboxSender) Send(ctx context.Context, m Message) error {
	if m.To == "" {
		return errors.New("mail: message has no recipient")
	}
	id := s.NewID()
	now := s.Now().UTC()
	s.Logger.InfoContext(ctx, "mail kept in outbox (no SMTP server configured)",
		slog.String("id", id),
		slog.String("to", m.To),
		slog.String("kind", m.Kind),
		slog.String("locale", m.Locale),
		slog.String("subject", m.Subject),
		slog.String("text", m.Text),
	)
	_, err := s.DB.ExecContext(ctx,
		`INSERT INTO mail_outbox (id, to_addr, subject, kind, locale, text_body, html_body, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		id, m.To, m.Subject, m.Kind, m.Locale, m.Text, m.HTML, now.UnixMicro())
	if err != nil {
		return fmt.Errorf("mail: store %s mail in outbox: %w", m.Kind, err)
	}
	return nil
}
