package users

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"hmid/internal/apperr"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/httpx"
)

// TestListPagesEveryWay checks List against a plain reading of its rule
// (the exact id, or a part of the username, name or email anywhere, any
// case; the start of them for a search shorter than three characters),
// on searches answered in one pass (at most MaxSearchMatches matches) and
// on broader ones that list the newest MaxSearchMatches, with soft-deleted users
// and ties on created_at, for every page.
func TestListPagesEveryWay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		s := &Service{DB: d}
		defer func(n int) { MaxSearchMatches = n }(MaxSearchMatches)
		MaxSearchMatches = 1000
		type row struct {
			id, username, name, email string
			created                   int64
			deleted                   bool
		}
		n := MaxSearchMatches + 200
		var all []row
		err := d.Tx(ctx, func(tx *db.Tx) error {
			for i := range n {
				r := row{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", (i*7919)%n), username: fmt.Sprintf("member_%d", i),
					name: fmt.Sprintf("Member %d", i), email: fmt.Sprintf("M%d@Example.test", i),
					// Three users share each created_at: the id breaks the tie.
					created: int64(i / 3), deleted: i%97 == 0}
				var del any
				if r.deleted {
					del = int64(1)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, username, email, name, created_at, updated_at, deleted_at) VALUES ($1, $2, $3, $4, $5, $5, $6)`,
					r.id, r.username, r.email, r.name, r.created, del); err != nil {
					return err
				}
				all = append(all, r)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(all, func(a, b row) int {
			if c := cmp.Compare(b.created, a.created); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		want := func(lq ListQuery) (ids []string) {
			q := strings.ToLower(lq.Search)
			for _, r := range all {
				if r.deleted && !lq.IncludeDeleted {
					continue
				}
				has := strings.HasPrefix
				if utf8.RuneCountInString(q) >= db.SubstringMin {
					has = strings.Contains
				}
				if q == "" || r.id == lq.Search || has(r.username, q) || has(strings.ToLower(r.name), q) || has(strings.ToLower(r.email), q) {
					ids = append(ids, r.id)
				}
			}
			if lq.Search != "" && len(ids) > MaxSearchMatches {
				ids = ids[:MaxSearchMatches] // a broad search lists its newest matches
			}
			return ids
		}
		for _, search := range []string{"", "member", "member_1", "MEMBER 42", "m7@example", "M1", all[5].id, all[5].id[:20], "nobody", "%", "_1", "42\nm", "er 1", "member_119\U0010FFFF",
			"ber_11", "7@EX", "example.test", "_%_", `"1"`} {
			for _, inc := range []bool{false, true} {
				for _, limit := range []int{7, 100} {
					lq := ListQuery{Search: search, IncludeDeleted: inc}
					ids := want(lq)
					for page := 1; page <= (len(ids)+limit-1)/limit+1; page++ {
						lq.Page = httpx.Page{Page: page, Limit: limit}
						if page > 3 && page < (len(ids)+limit-1)/limit-1 {
							continue // the first and last pages are enough
						}
						got, total, err := s.List(ctx, lq)
						if err != nil {
							t.Fatal(err)
						}
						var gotIDs []string
						for _, u := range got {
							gotIDs = append(gotIDs, u.ID)
						}
						from := min(lq.Page.Offset(), len(ids))
						wantIDs := ids[from:min(from+limit, len(ids))]
						if total != len(ids) || !slices.Equal(gotIDs, wantIDs) {
							t.Fatalf("search %q, deleted %v, page %d of %d: total %d (want %d), ids %v, want %v",
								search, inc, page, limit, total, len(ids), gotIDs, wantIDs)
						}
					}
				}
			}
		}
	})
}

func TestParseListQuery(t *testing.T) {
	t.Parallel()
	lq := ParseListQuery(map[string][]string{"search": {"  ada "}, "include_deleted": {"true"}, "page": {"3"}, "limit": {"500"}})
	if lq.Search != "ada" || !lq.IncludeDeleted || lq.Page.Page != 3 || lq.Page.Limit != 100 {
		t.Errorf("ParseListQuery = %+v", lq)
	}
	if lq := ParseListQuery(map[string][]string{"include_deleted": {"yes"}}); lq.IncludeDeleted || lq.Page.Limit != 20 || lq.Page.Page != 1 {
		t.Errorf("ParseListQuery(defaults) = %+v", lq)
	}
}

// TestListSortsAndFilters checks every sort of the list, both ways, with
// and without a search, and the status, two-factor and role filters,
// against a plain reading of them.
func TestListSortsAndFilters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		clk := clock.System{}
		s := &Service{DB: d, Clock: clk}
		if err := SeedPlatforms(ctx, d, clk); err != nil {
			t.Fatal(err)
		}
		type row struct {
			id, username, email string
			created, login      int64 // login 0: never signed in
			banned, deleting    bool
			twoFactor, role     bool
		}
		letters := "qwertyuiopasdfghjklzxcvbnm"
		var all []row
		err := d.Tx(ctx, func(tx *db.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO roles (id, name, created_at, updated_at) VALUES ('role_x', 'X', 1, 1)`); err != nil {
				return err
			}
			for i := range 60 {
				r := row{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", (i*37)%60),
					username: "usr" + string(letters[i%26]) + string(letters[(i*7)%26]) + fmt.Sprint(i%10),
					email:    string(letters[(i*11)%26]) + string(letters[i%26]) + fmt.Sprint(i%10) + "@x.test",
					created:  int64(1000 + (i*13)%20), login: int64((i * 17) % 7), banned: i%5 == 0, deleting: i%7 == 0,
					twoFactor: i%3 == 0, role: i%4 == 0}
				var email, login, sched any
				if i%9 != 0 {
					email = r.email
				} else {
					r.email = ""
				}
				if r.login != 0 {
					login = r.login
				}
				if r.deleting {
					sched = int64(5)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, username, email, name, created_at, updated_at, last_login_at, scheduled_deletion_at) VALUES ($1, $2, $3, $2, $4, $4, $5, $6)`,
					r.id, r.username, email, r.created, login, sched); err != nil {
					return err
				}
				if r.banned {
					if _, err := tx.ExecContext(ctx, `INSERT INTO bans (id, user_id, banned_at, is_permanent) VALUES ($1, $1, 1, TRUE)`, r.id); err != nil {
						return err
					}
				}
				if r.twoFactor {
					if _, err := tx.ExecContext(ctx, `INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, created_at, updated_at) VALUES ($1, 'enabled', 'x', $2, 1, 1, 1)`,
						r.id, PlatformID("email")); err != nil {
						return err
					}
				}
				if r.role {
					if _, err := tx.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, 'role_x', 1)`, r.id); err != nil {
						return err
					}
				}
				all = append(all, r)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		key := func(lq ListQuery, a, b row) int {
			c := 0
			has := func(r row) bool {
				return (lq.Sort == "email" && r.email != "") || (lq.Sort == "last_login_at" && r.login != 0) || lq.Sort == "username"
			}
			switch lq.Sort {
			case "username", "email", "last_login_at":
				c = cmp.Or(cmp.Compare(boolInt(has(a)), boolInt(has(b))), strings.Compare(a.username, b.username)*boolInt(lq.Sort == "username"),
					strings.Compare(a.email, b.email)*boolInt(lq.Sort == "email"), cmp.Compare(a.login, b.login)*boolInt(lq.Sort == "last_login_at"))
			default:
				c = cmp.Compare(a.created, b.created)
			}
			ids := strings.Compare(a.id, b.id)
			if !lq.Asc {
				c = -c
				if lq.Sort != "" && lq.Sort != "created_at" {
					ids = -ids
				}
			}
			return cmp.Or(c, ids)
		}
		for _, search := range []string{"", "usr", "us", "@x.te"} {
			for _, sort := range append([]string{""}, SortFields...) {
				for _, asc := range []bool{false, true} {
					for _, filter := range []ListQuery{{}, {Status: "banned"}, {Status: "scheduled_for_deletion"}, {TwoFactor: "on"}, {TwoFactor: "off"}, {Role: "role_x"}} {
						lq := filter
						lq.Search, lq.Sort, lq.Asc, lq.Page = search, sort, asc, httpx.Page{Page: 1, Limit: 100}
						var want []string
						rows := slices.Clone(all)
						slices.SortFunc(rows, func(a, b row) int { return key(lq, a, b) })
						for _, r := range rows {
							ok := (lq.Status != "banned" || r.banned) && (lq.Status != "scheduled_for_deletion" || r.deleting) &&
								(lq.TwoFactor != "on" || r.twoFactor) && (lq.TwoFactor != "off" || !r.twoFactor) && (lq.Role == "" || r.role)
							if ok && (search != "@x.te" || r.email != "") {
								want = append(want, r.id)
							}
						}
						got, total, err := s.List(ctx, lq)
						if err != nil {
							t.Fatal(err)
						}
						var ids []string
						for _, u := range got {
							ids = append(ids, u.ID)
						}
						if total != len(want) || !slices.Equal(ids, want) {
							t.Fatalf("%+v: total %d, ids %v\nwant %d %v", lq, total, ids, len(want), want)
						}
					}
				}
			}
		}
	})
}

func TestListQueryCheck(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"sort_field=name", "sort_direction=up", "status=gone", "two_factor=maybe"} {
		v, _ := url.ParseQuery(q)
		if err := ParseListQuery(v).Check(v); apperr.KindOf(err) != apperr.Validation || apperr.FieldOf(err) == "" {
			t.Errorf("%s: %v", q, err)
		}
	}
	v, _ := url.ParseQuery("sort_field=email&sort_direction=asc&status=banned&two_factor=off&role_id=r")
	if lq := ParseListQuery(v); lq.Check(v) != nil || !lq.Asc || lq.Sort != "email" || lq.Role != "r" {
		t.Errorf("valid query refused: %+v", lq)
	}
}

// TestSearchFollowsChanges checks that the search index follows a user's
// rename, a new address and a purge (the FTS5 triggers on SQLite).
func TestSearchFollowsChanges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		s := &Service{DB: d, Clock: clock.System{}}
		find := func(search string) int {
			t.Helper()
			_, n, err := s.List(ctx, ListQuery{Search: search, Page: httpx.Page{Page: 1, Limit: 10}})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := d.ExecContext(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		for i, name := range []string{"ada_lovelace", "grace_hopper"} {
			exec(`INSERT INTO users (id, username, email, name, created_at, updated_at) VALUES ($1, $2, $3, $2, $4, $4)`,
				fmt.Sprint("u", i), name, name+"@example.test", i+1)
		}
		if find("lovelace") != 1 || find("HOPPER@EX") != 1 {
			t.Fatal("the seeded users are not found")
		}
		exec(`UPDATE users SET username = 'countess_ada', name = 'Ada', email = 'ada@analytical.test' WHERE id = 'u0'`)
		if find("lovelace") != 0 || find("countess") != 1 || find("analytical") != 1 || find("hopper") != 1 {
			t.Fatal("the search did not follow the rename")
		}
		exec(`DELETE FROM users WHERE id = 'u0'`)
		exec(`INSERT INTO users (id, username, email, name, created_at, updated_at) VALUES ('u2', 'third_one', NULL, 'Third', 3, 3)`)
		if find("countess") != 0 || find("hopper") != 1 || find("third_o") != 1 {
			t.Fatal("the search did not follow the purge")
		}
	})
}
