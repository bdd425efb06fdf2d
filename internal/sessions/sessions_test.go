package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/token"
)

// TestCreateAndEnd: a session stores only its token's hash; EndAll ends
// the active sessions but the one kept, End one session of its own user
// once; each bumps the epoch after the commit, and a rolled-back
// transaction or a session that did not end bumps nothing.
func TestCreateAndEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		if _, err := d.ExecContext(ctx, `INSERT INTO users (id, username, created_at, updated_at) VALUES ('u1', 'u1', 0, 0)`); err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		a, err := Create(ctx, d, now, New{UserID: "u1", Provider: "email", UserAgent: "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X)"})
		if err != nil {
			t.Fatal(err)
		}
		if !token.HasShape(a.Token, token.PrefixSession) || !a.ExpiresAt.Equal(now.Add(DefaultTTL)) {
			t.Fatalf("created = %+v", a)
		}
		// Only the hash is stored.
		var stored, device string
		if err := d.QueryRowContext(ctx, `SELECT token_hash, device_type FROM sessions WHERE id = $1`, a.ID).Scan(&stored, &device); err != nil {
			t.Fatal(err)
		}
		if stored != token.Hash(a.Token) || stored == a.Token || device != "tablet" {
			t.Fatalf("stored %q, device %q", stored, device)
		}
		b, _ := Create(ctx, d, now, New{UserID: "u1"})
		_, _ = Create(ctx, d, now, New{UserID: "u1", ExpiresAt: now.Add(time.Minute)})
		later := now.Add(time.Hour)
		ep := &authn.MemoryEpoch{}
		epoch := func() int64 { n, _ := ep.Current(ctx); return n }

		rollback := errors.New("roll back")
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			if n, err := EndAll(ctx, tx, ep, "u1", "", later); err != nil || n != 2 {
				t.Fatalf("EndAll in a rolled-back tx = %d, %v", n, err)
			}
			return rollback
		}); !errors.Is(err, rollback) || epoch() != 0 {
			t.Fatalf("rolled back: %v, epoch %d", err, epoch())
		}

		var n int64
		if err := d.Tx(ctx, func(tx *db.Tx) (err error) {
			n, err = EndAll(ctx, tx, ep, "u1", b.ID, later)
			if epoch() != 0 {
				t.Fatal("the epoch was bumped before the commit")
			}
			return err
		}); err != nil || n != 1 || epoch() != 1 {
			t.Fatalf("EndAll = %d, %v, epoch %d (the expired session does not count)", n, err, epoch())
		}

		end := func(userID, id string) bool {
			var ended bool
			if err := d.Tx(ctx, func(tx *db.Tx) (err error) {
				ended, err = End(ctx, tx, ep, userID, id, later)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return ended
		}
		if end("u2", b.ID) || epoch() != 1 {
			t.Fatalf("another user's session ended (epoch %d)", epoch())
		}
		if !end("u1", b.ID) || epoch() != 2 {
			t.Fatalf("End of the kept session: epoch %d", epoch())
		}
		if end("u1", b.ID) || epoch() != 2 {
			t.Fatalf("End twice: epoch %d", epoch())
		}
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			n, err := EndAll(ctx, tx, ep, "u1", "", later)
			if n != 0 {
				t.Fatalf("EndAll with none left = %d", n)
			}
			return err
		}); err != nil || epoch() != 2 {
			t.Fatalf("EndAll with none left: %v, epoch %d", err, epoch())
		}
	})
}
