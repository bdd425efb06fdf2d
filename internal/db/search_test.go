package db_test

import (
	"context"
	"slices"
	"testing"

	"hmid/internal/db"
)

// TestUserMatch checks the user search's rule on both engines: the exact
// id, or the start of a listed column, ASCII letters in any case, other
// characters as written; LIKE's wildcards are plain characters, and a
// search ending in the greatest code point still has its range.
func TestUserMatch(t *testing.T) {
	eachDB(t, func(t *testing.T, ctx context.Context, d *db.DB) {
		users := []struct{ id, username, email, name string }{
			{"u1", "member_1", "Member.One@Example.test", "Ærø Ødegaard"},
			{"u2", "member_10", "", "Zoë"},
			{"u3", "member_2", "two@example.test", "a\U0010FFFFb"},
			{"u4", "x_100", "percent%@example.test", "b"},
			{"u5", "u1", "", "\uD7FFz"},
		}
		for _, u := range users {
			var email any
			if u.email != "" {
				email = u.email
			}
			if _, err := d.ExecContext(ctx, `INSERT INTO users (id, username, email, name, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, 1)`,
				u.id, u.username, email, u.name); err != nil {
				t.Fatal(err)
			}
		}
		for search, want := range map[string][]string{
			"MEMBER_1":                 {"u1", "u2"},
			"member_":                  {"u1", "u2", "u3"},
			"member.one@EX":            {"u1"},
			"Ærø":                      {"u1"},
			"Zoë":                      {"u2"},
			"u1":                       {"u1", "u5"}, // the id u1, and the username u1
			"ne@":                      nil,          // a part inside, not the start
			"percent%":                 {"u4"},
			"x%":                       nil,
			"_":                        nil,
			"a\U0010FFFF":              {"u3"},
			"\U0010FFFF":               nil,
			"\uD7FF":                   {"u5"},
			"nobody":                   nil,
			"Member.One@Example.test.": nil,
		} {
			cond, args := db.UserMatch(d.Flavor, search, 1, "username", "email", "name")
			rows, err := d.QueryContext(ctx, `SELECT id FROM users WHERE `+cond+` ORDER BY id`, args...)
			if err != nil {
				t.Fatalf("%q: %v", search, err)
			}
			var got []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				got = append(got, id)
			}
			rows.Close()
			if !slices.Equal(got, want) {
				t.Errorf("search %q: %v, want %v", search, got, want)
			}
		}
	})
}
