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
	// Search matches a user's exact id, or a case-insensitive part of their
	// username, name or email; "" lists everyone.
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

// contains is the condition that the text expression hay contains the text
// bound to needle, on f. The position functions (SQLite's instr,
// PostgreSQL's strpos) compare plain text, which takes SQLite half the time
// of LIKE's pattern, and need no escaping of % and _.
func contains(f db.Flavor, hay, needle string) string {
	if f == db.Postgres {
		return `strpos(` + hay + `, ` + needle + `) > 0`
	}
	return `instr(` + hay + `, ` + needle + `) > 0`
}

// matches is the condition of lq's search alone on f ("TRUE" without one):
// the exact id, or a case-insensitive part of the username, name or email.
// The index users_search holds db.UserSearchHandle and LOWER(name) with
// each user's deleted_at, created_at and id, so on SQLite a search reads
// the index alone.
func (lq ListQuery) matches(f db.Flavor) (string, []any) {
	if lq.Search == "" {
		return "TRUE", nil
	}
	args := []any{lq.Search, strings.ToLower(lq.Search)}
	handle := contains(f, db.UserSearchHandle, "$2")
	if strings.Contains(lq.Search, "\n") {
		// Across the lines of db.UserSearchHandle it could match the end of the
		// username and the start of the email: each field on its own.
		handle = contains(f, "LOWER(username)", "$2") + ` OR ` + contains(f, "LOWER(COALESCE(email, ''))", "$2")
	}
	return `(id = $1 OR ` + handle + ` OR ` + contains(f, "LOWER(name)", "$2") + `)`, args
}

// maxSearchMatches bounds the matches of a search that List collects in
// one pass (an id and a time each, about a megabyte at most); broader
// searches are counted and paged by the database. A variable, so a test
// can reach both ways without seeding as many users.
var maxSearchMatches = 20_000

// List returns one page of the users lq selects, newest first (ties by id),
// and the number of all of them. GET /v1/users and the admin console's
// users list call it.
//
// A substring search cannot use an index, so each one reads every user. A
// search that finds at most maxSearchMatches users is answered from that
// one read (searchOnce): counting the matches and then walking the
// created_at order for the page would read the table twice, the walk
// fetching row after row by index to meet the few matches late.
func (s *Service) List(ctx context.Context, lq ListQuery) ([]User, int, error) {
	if lq.Search != "" {
		out, total, ok, err := s.searchOnce(ctx, lq)
		if ok || err != nil {
			return out, total, err
		}
	}
	cond, args := lq.where(s.DB.Flavor)
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if total <= lq.Page.Offset() {
		return []User{}, total, nil
	}
	// The page's ids first, then their rows: skipping to a deep page walks
	// the index of the order (users_active_created) alone, and only the rows
	// shown are read.
	n := len(args)
	out, err := s.load(ctx, `SELECT `+userCols+` FROM users WHERE id IN (SELECT id FROM users WHERE `+cond+
		` ORDER BY created_at DESC, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2)+`) ORDER BY created_at DESC, id`,
		append(args, lq.Page.Limit, lq.Page.Offset())...)
	return out, total, err
}

// load returns the users a query of userCols answers, in its order.
func (s *Service) load(ctx context.Context, q string, args ...any) ([]User, error) {
	rows, err := s.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// searchOnce answers lq's search from one read of the users: it collects
// the ids and times of the matches, orders and pages them here, and loads
// the page's rows by id. ok is false when more than maxSearchMatches users
// match. Soft-deleted users are left out here rather than in the query, so
// the database reads the table straight through instead of walking the
// index of the users who are not deleted row by row.
func (s *Service) searchOnce(ctx context.Context, lq ListQuery) (out []User, total int, ok bool, err error) {
	type match struct {
		id      string
		created int64
	}
	cond, args := lq.matches(s.DB.Flavor)
	rows, err := s.DB.QueryContext(ctx, `SELECT id, created_at, deleted_at IS NULL FROM users WHERE `+cond+` LIMIT `+strconv.Itoa(maxSearchMatches+1), args...)
	if err != nil {
		return nil, 0, false, err
	}
	var all []match
	read := 0
	for rows.Next() {
		var m match
		var live bool
		if err := rows.Scan(&m.id, &m.created, &live); err != nil {
			rows.Close()
			return nil, 0, false, err
		}
		read++
		if live || lq.IncludeDeleted {
			all = append(all, m)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	if read > maxSearchMatches {
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
