package sessions

import (
	"context"
	"testing"
	"time"

	"hmid/internal/dbtest"
	"hmid/internal/token"
)

func TestCreateAndRevokeUser(t *testing.T) {
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
		n, err := RevokeUser(ctx, d, "u1", b.ID, later)
		if err != nil || n != 1 {
			t.Fatalf("RevokeUser = %d, %v (the expired session does not count)", n, err)
		}
		if n, _ := RevokeUser(ctx, d, "u1", "", later); n != 1 {
			t.Fatalf("second RevokeUser = %d", n)
		}
	})
}
