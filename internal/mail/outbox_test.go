package mail_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
)

// openOutboxDB returns a fresh SQLite database with the mail_outbox table
// created by the package's migration.
func openOutboxDB(t *testing.T) *sql.DB {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("..", "db", "migrations", "0050_mail.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(string(ddl)); err != nil {
		t.Fatalf("apply migration: %v", err)
	}
	return db
}

func TestOutboxSenderStoresAndLogs(t *testing.T) {
	db := openOutboxDB(t)
	ctx := context.Background()
	var logBuf bytes.Buffer
	now := time.Date(2026, time.March, 5, 14, 7, 30, 123456789, time.FixedZone("CET", 3600))
	s := mail.NewOutboxSender(db, slog.New(slog.NewJSONHandler(&logBuf, nil)), func() time.Time { return now })

	reset, err := mail.Render(mail.KindPasswordReset, "de", mail.FullData())
	if err != nil {
		t.Fatal(err)
	}
	reset.To = "anna@example.org"
	enabled, err := mail.Render(mail.KindTwoFactorEnabled, "en", mail.FullData())
	if err != nil {
		t.Fatal(err)
	}
	enabled.To = "anna@example.org"
	other := enabled
	other.To = "bob@example.org"

	// All three share one clock reading: the order must still be kept.
	for _, m := range []mail.Message{reset, enabled, other} {
		if err := s.Send(ctx, m); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}

	got, err := mailtest.Outbox(ctx, db, "anna@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != enabled || got[1] != reset {
		t.Fatalf("mailtest.Outbox(anna) = %+v\nwant newest first: %+v, %+v", got, enabled, reset)
	}
	if got, err := mailtest.Outbox(ctx, db, "bob@example.org"); err != nil || len(got) != 1 || got[0] != other {
		t.Fatalf("mailtest.Outbox(bob) = %+v, %v", got, err)
	}
	if got, err := mailtest.Outbox(ctx, db, "nobody@example.org"); err != nil || len(got) != 0 {
		t.Fatalf("mailtest.Outbox(nobody) = %+v, %v", got, err)
	}

	rows, err := db.QueryContext(ctx, `SELECT id, created_at FROM mail_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		var created int64
		if err := rows.Scan(&id, &created); err != nil {
			t.Fatal(err)
		}
		if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
			t.Errorf("id %q is not a version 7 UUID (%v)", id, err)
		}
		ids[id] = true
		if created != now.UnixMicro() {
			t.Errorf("created_at = %d, want %d (Unix microseconds of the injected clock)", created, now.UnixMicro())
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Errorf("%d distinct ids for 3 messages", len(ids))
	}

	// One JSON log record per message, carrying what a developer needs to
	// follow the mail: recipient, kind and the text with its link.
	var records []map[string]any
	sc := bufio.NewScanner(&logBuf)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		records = append(records, r)
	}
	if len(records) != 3 {
		t.Fatalf("%d log records, want 3", len(records))
	}
	r := records[0]
	if r["to"] != "anna@example.org" || r["kind"] != mail.KindPasswordReset || r["locale"] != "de" ||
		r["subject"] != reset.Subject || !ids[r["id"].(string)] ||
		!strings.Contains(r["text"].(string), "https://id.example.org/verify?token=tok123") {
		t.Errorf("log record = %v", r)
	}
}

func TestOutboxSenderErrors(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	now := func() time.Time { return time.Unix(0, 0) }

	db := openOutboxDB(t)
	s := mail.NewOutboxSender(db, logger, now)
	if err := s.Send(ctx, mail.Message{Subject: "x", Text: "x"}); err == nil {
		t.Error("Send without recipient succeeded")
	}
	if got, _ := mailtest.Outbox(ctx, db, ""); len(got) != 0 {
		t.Errorf("message without recipient was stored: %+v", got)
	}

	// A database without the table: both sides report it.
	empty, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	err = mail.NewOutboxSender(empty, logger, now).Send(ctx, mail.Message{To: "a@example.org", Kind: mail.KindPasswordReset})
	if err == nil || !strings.Contains(err.Error(), "store password_reset mail in outbox") {
		t.Errorf("Send to a database without outbox: %v", err)
	}
	if _, err := mailtest.Outbox(ctx, empty, "a@example.org"); err == nil {
		t.Error("Outbox on a database without outbox succeeded")
	}
}
