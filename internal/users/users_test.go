package users

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/dbtest"
)

func TestValidUsername(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"abc": true, "A_b_9": true, strings.Repeat("x", 30): true,
		"ab": false, strings.Repeat("x", 31): false, "a-b": false, "a b": false, "äbc": false, "": false, "abc\n": false,
	} {
		if err := ValidUsername(name); (err == nil) != ok {
			t.Errorf("ValidUsername(%q) = %v", name, err)
		}
	}
}

func TestUsernameFromIsAlwaysValid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "a", "Jane Doe", "jane.doe@example.com", "😀😀😀", strings.Repeat("long-name ", 10), "--", "x@"} {
		if got := UsernameFrom(in); ValidUsername(got) != nil {
			t.Errorf("UsernameFrom(%q) = %q, not a valid username", in, got)
		}
	}
	if got := UsernameFrom("jane.doe@example.com"); got != "jane_doe" {
		t.Errorf("UsernameFrom(email) = %q", got)
	}
}

func TestLocales(t *testing.T) {
	t.Parallel()
	if !slices.Equal(SupportedLocales, []string{"en", "de"}) {
		t.Fatal("supported locales are en and de")
	}
}

func TestCreateAndFreeUsername(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		if err := SeedPlatforms(ctx, d, clock.System{}); err != nil {
			t.Fatal(err)
		}
		// Access seeding is not needed beyond the default role row.
		if _, err := d.ExecContext(ctx, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at)
			VALUES ('role_user', 'User', '', TRUE, FALSE, 0, 0) ON CONFLICT DO NOTHING`); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 3 {
			err := d.Tx(ctx, func(tx *db.Tx) error {
				id, _, err := Create(ctx, tx, 1, NewAccount{PlatformSlug: "github", PlatformUserID: "gh" + string(rune('0'+i)), Name: "Same Name"})
				ids = append(ids, id)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		rows, err := d.QueryContext(ctx, `SELECT username FROM users ORDER BY username`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			names = append(names, n)
		}
		if strings.Join(names, ",") != "Same_Name,Same_Name2,Same_Name3" {
			t.Fatalf("usernames = %v", names)
		}
		free, err := FreeUsername(ctx, d, "same_name")
		if err != nil || free != "same_name4" {
			t.Fatalf("FreeUsername = %q, %v", free, err)
		}
		// The same platform account twice is a unique violation.
		err = d.Tx(ctx, func(tx *db.Tx) error {
			_, _, err := Create(ctx, tx, 1, NewAccount{PlatformSlug: "github", PlatformUserID: "gh0", Name: "x"})
			return err
		})
		if !db.IsUniqueViolation(err) {
			t.Fatalf("duplicate account: %v", err)
		}
	})
}

func TestLocalesHook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &Service{}
	if got, _ := s.SupportedLocales(ctx); strings.Join(got, ",") != "en,de" {
		t.Fatalf("default locales = %v", got)
	}
	s.Locales = func(context.Context) ([]string, error) { return []string{"en", "fr"}, nil }
	if got, _ := s.SupportedLocales(ctx); strings.Join(got, ",") != "en,fr" {
		t.Fatalf("configured locales = %v", got)
	}
}

// TestGetNeverServesAStaleRow reads users while other goroutines change
// them through transactions and plain statements: whenever a change has
// returned, every later Get outside a transaction shows it, cache or not, and
// a caller changing what Get returned changes nothing for the next one.
func TestGetNeverServesAStaleRow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		s := &Service{DB: d, Clock: clock.System{}}
		const n = 4
		for i := range n {
			if _, err := d.ExecContext(ctx, `INSERT INTO users (id, username, name, created_at, updated_at) VALUES ($1, $1, 'v0', 0, 0)`, fmt.Sprintf("u%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range n {
			id := fmt.Sprintf("u%d", i)
			wg.Go(func() {
				for v := 1; v <= 40; v++ {
					name := fmt.Sprintf("v%d", v)
					var err error
					if v%2 == 0 {
						err = d.Tx(ctx, func(tx *db.Tx) error {
							_, err := tx.ExecContext(ctx, `UPDATE users SET name = $1 WHERE id = $2`, name, id)
							return err
						})
					} else {
						_, err = d.ExecContext(ctx, `UPDATE users SET name = $1 WHERE id = $2`, name, id)
					}
					if err != nil {
						t.Error(err)
						return
					}
					for range 3 {
						u, err := s.Get(ctx, d, id)
						if err != nil || u.Name != name {
							t.Errorf("%s after writing %s: read %q, %v", id, name, u.Name, err)
							return
						}
						u.Name = "changed by a caller"
						if u.Email == nil {
							u.Email = new(string)
						}
						*u.Email = "changed@example.com"
					}
				}
			})
		}
		wg.Wait()
		u, err := s.Get(ctx, d, "u0")
		if err != nil || u.Email != nil || u.Name != "v40" {
			t.Fatalf("final read: %+v, %v", u, err)
		}
	})
}
