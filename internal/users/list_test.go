package users

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
	lq := ParseListQuery(map[string][]string{"search": {"  ada "}, "include_deleted": {"true"}, "page": {"3"}, "limit": {"500"}})
	if lq.Search != "ada" || !lq.IncludeDeleted || lq.Page.Page != 3 || lq.Page.Limit != 100 {
		t.Errorf("ParseListQuery = %+v", lq)
	}
	if lq := ParseListQuery(map[string][]string{"include_deleted": {"yes"}}); lq.IncludeDeleted || lq.Page.Limit != 20 || lq.Page.Page != 1 {
		t.Errorf("ParseListQuery(defaults) = %+v", lq)
	}
}
