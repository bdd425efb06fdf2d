package users

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"hmid/internal/db"
	"hmid/internal/httpx"
)

// ListQuery selects a page of GET /v1/users.
type ListQuery struct {
	// Search matches a user's exact id, or the start of their username, name
	// or email, ignoring case; "" lists everyone.
	Search string
	// IncludeDeleted also lists soft-deleted users.
	IncludeDeleted bool
	Page           httpx.Page
}

// ParseListQuery reads the query parameters of GET /v1/users: page, limit
// (default 20), search and include_deleted (a boolean; anything else is
// false, as the listing has always read it).
func ParseListQuery(q url.Values) ListQuery {
	inc, _ := strconv.ParseBool(q.Get("include_deleted"))
	return ListQuery{Search: strings.TrimSpace(q.Get("search")), IncludeDeleted: inc,
		Page: httpx.ParsePageValues(q.Get("page"), q.Get("limit"), 20)}
}

// where is the condition lq selects users by on f, and its arguments.
func (lq ListQuery) where(f db.Flavor) (string, []any) {
	cond, args := lq.matches(f)
	if !lq.IncludeDeleted {
		cond += " AND deleted_at IS NULL"
	}
	return cond, args
}

// matches is the condition of lq's search alone on f ("TRUE" without one):
// the exact id, or a username, name or email starting with the search,
// ignoring case (db.UserMatch; each is a range of an index).
func (lq ListQuery) matches(f db.Flavor) (string, []any) {
	if lq.Search == "" {
		return "TRUE", nil
	}
	return db.UserMatch(f, lq.Search, 1, "username", "email", "name")
}

// MaxSearchMatches is the most users a search lists: a search that
// matches more (a letter or two) lists the newest MaxSearchMatches of its
// matches and counts that many. Counting all of them exactly would read
// every match (all users, for the letter that all usernames start with),
// which no index shortens; an operator refines such a search instead, as
// the admin console says. A variable, so a test can reach the bound
// without seeding as many users.
var MaxSearchMatches = 20_000

// List returns one page of the users lq selects, newest first (ties by id),
// and the number of all of them (of a search: at most MaxSearchMatches).
// GET /v1/users and the admin console's users list call it.
//
// A search finds its users through the indexes of the compared texts and
// the id. One that finds at most MaxSearchMatches users is answered from
// that one read (searchOnce): counting the matches and then walking the
// created_at order for the page would read them twice, the walk fetching
// row after row to meet the few matches late. A broader search is paged by
// that walk (broadSearch), where its matches are dense.
func (s *Service) List(ctx context.Context, lq ListQuery) ([]User, int, error) {
	if lq.Search != "" {
		out, total, ok, err := s.searchOnce(ctx, lq)
		if ok || err != nil {
			return out, total, err
		}
		return s.broadSearch(ctx, lq)
	}
	cond, args := lq.where(s.DB.Flavor)
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	return s.page(ctx, lq, total, lq.Page.Limit, "")
}

// broadSearch answers a search matching more than MaxSearchMatches users:
// the page of the newest MaxSearchMatches matches, of which there are that
// many. It walks the users in the listing's order and tests each, stopping
// at the page's end: at least one in five users match such a search of
// 100,000 (and it stops within the first MaxSearchMatches matches), so the
// walk is short, where the search's indexes would hand over every match to
// be sorted. SQLite is told to take the index of that order, as it plans
// without statistics and would take the search's indexes;
// PostgreSQL's statistics tell it how many users the search matches.
func (s *Service) broadSearch(ctx context.Context, lq ListQuery) ([]User, int, error) {
	total := MaxSearchMatches
	limit := min(lq.Page.Limit, max(total-lq.Page.Offset(), 0))
	hint := ""
	if s.DB.Flavor == db.SQLite {
		hint = " INDEXED BY users_active_created"
		if lq.IncludeDeleted {
			hint = " INDEXED BY users_created_at"
		}
	}
	return s.page(ctx, lq, total, limit, hint)
}

// page returns the page of lq of the total users it selects, at most limit
// of them (lq's page size, less at the bound of a broad search), reading
// the users table through hint (an SQLite INDEXED BY clause, or "").
func (s *Service) page(ctx context.Context, lq ListQuery, total, limit int, hint string) ([]User, int, error) {
	if total <= lq.Page.Offset() || limit == 0 {
		return []User{}, total, nil
	}
	// The page's ids first, then their rows: skipping to a deep page walks
	// the index of the order (users_active_created) alone, and only the rows
	// shown are read.
	cond, args := lq.where(s.DB.Flavor)
	n := len(args)
	out, err := s.load(ctx, `SELECT `+userCols+` FROM users WHERE id IN (SELECT id FROM users`+hint+` WHERE `+cond+
		` ORDER BY created_at DESC, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2)+`) ORDER BY created_at DESC, id`,
		append(args, limit, lq.Page.Offset())...)
	return out, total, err
}

// load returns the users a query of userCols answers, in its order.
func (s *Service) load(ctx context.Context, q string, args ...any) ([]User, error) {
	return db.All(ctx, s.DB, scanUser, q, args...)
}

// searchOnce answers lq's search from one read of the users: it collects
// the ids and times of the matches, orders and pages them here, and loads
// the page's rows by id. ok is false when more than MaxSearchMatches users
// match.
func (s *Service) searchOnce(ctx context.Context, lq ListQuery) (out []User, total int, ok bool, err error) {
	type match struct {
		id      string
		created int64
	}
	cond, args := lq.where(s.DB.Flavor)
	rows, err := s.DB.QueryContext(ctx, `SELECT id, created_at FROM users WHERE `+cond+` LIMIT `+strconv.Itoa(MaxSearchMatches+1), args...)
	if err != nil {
		return nil, 0, false, err
	}
	var all []match
	for rows.Next() {
		var m match
		if err := rows.Scan(&m.id, &m.created); err != nil {
			rows.Close()
			return nil, 0, false, err
		}
		all = append(all, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	if len(all) > MaxSearchMatches {
		return nil, 0, false, nil
	}
	// The listing's order: created_at descending, then id (user ids are
	// UUIDs, which sort the same bytewise as in a database collation).
	slices.SortFunc(all, func(a, b match) int {
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	from := min(lq.Page.Offset(), len(all))
	page := all[from:min(from+lq.Page.Limit, len(all))]
	if len(page) == 0 {
		return []User{}, len(all), true, nil
	}
	ids := make([]any, len(page))
	marks := make([]string, len(page))
	for i, m := range page {
		ids[i], marks[i] = m.id, "$"+strconv.Itoa(i+1)
	}
	out, err = s.load(ctx, `SELECT `+userCols+` FROM users WHERE id IN (`+strings.Join(marks, ", ")+`) ORDER BY created_at DESC, id`, ids...)
	return out, len(all), true, err
}
