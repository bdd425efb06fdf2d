package users

import (
	"cmp"
	"context"
	"database/sql"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// ListQuery selects a page of GET /v1/users.
type ListQuery struct {
	// Search matches a user's exact id, or a part of their username, name
	// or email anywhere, ignoring case (db.UserSubstring: a search shorter
	// than db.SubstringMin matches the start); "" lists everyone.
	Search string
	// IncludeDeleted also lists soft-deleted users.
	IncludeDeleted bool
	// Sort is the column of the order (SortFields; "" is created_at) and
	// Asc its direction (the default is descending).
	Sort string
	Asc  bool
	// Status keeps only banned users (a ban in force) or those scheduled
	// for deletion (Statuses; "" is everyone).
	Status string
	// TwoFactor keeps only users with two-factor authentication "on" or
	// "off" ("" is everyone).
	TwoFactor string
	// Role keeps only the holders of the role with this id.
	Role string
	Page httpx.Page
}

// SortFields are the columns the list sorts by: the columns the admin
// console lists.
var SortFields = []string{"created_at", "username", "email", "last_login_at"}

// Statuses are the values of the status filter.
var Statuses = []string{"banned", "scheduled_for_deletion"}

// ParseListQuery reads the query parameters of GET /v1/users: page, limit
// (default 20), search, include_deleted (a boolean; anything else is
// false, as the listing has always read it), sort_field, sort_direction,
// status, two_factor and role_id. Check refuses the values it does not know.
func ParseListQuery(q url.Values) ListQuery {
	inc, _ := strconv.ParseBool(q.Get("include_deleted"))
	return ListQuery{Search: strings.TrimSpace(q.Get("search")), IncludeDeleted: inc,
		Sort: q.Get("sort_field"), Asc: q.Get("sort_direction") == "asc", Status: q.Get("status"),
		TwoFactor: q.Get("two_factor"), Role: strings.TrimSpace(q.Get("role_id")),
		Page: httpx.ParsePageValues(q.Get("page"), q.Get("limit"), 20)}
}

// Check refuses a sort field, direction or filter value the list does not
// know; q is the query ParseListQuery read lq from. Errors: Validation on
// the field.
func (lq ListQuery) Check(q url.Values) error {
	if lq.Sort != "" && !slices.Contains(SortFields, lq.Sort) {
		return apperr.OnField("sort_field", apperr.Invalid("sort_field must be one of %s", strings.Join(SortFields, ", ")))
	}
	if d := q.Get("sort_direction"); d != "" && d != "asc" && d != "desc" {
		return apperr.OnField("sort_direction", apperr.Invalid("sort_direction must be asc or desc"))
	}
	if lq.Status != "" && !slices.Contains(Statuses, lq.Status) {
		return apperr.OnField("status", apperr.Invalid("status must be one of %s", strings.Join(Statuses, ", ")))
	}
	if lq.TwoFactor != "" && lq.TwoFactor != "on" && lq.TwoFactor != "off" {
		return apperr.OnField("two_factor", apperr.Invalid("two_factor must be on or off"))
	}
	return nil
}

// where is the condition lq selects users by on f at time now, and its
// arguments.
func (lq ListQuery) where(f db.Flavor, now time.Time) (string, []any) {
	return lq.whereOf(f, now, false)
}

// whereOf is where, with the search tested on each row (rowwise, for a
// walk in the list's order: db.UserSubstringRow) or through its indexes.
func (lq ListQuery) whereOf(f db.Flavor, now time.Time, rowwise bool) (string, []any) {
	cond, args := lq.matches(f)
	if rowwise && lq.Search != "" {
		cond, args = db.UserSubstringRow(f, lq.Search, 1)
	}
	if !lq.IncludeDeleted {
		cond += " AND deleted_at IS NULL"
	}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch lq.Status {
	case "banned":
		// db.ActiveBanSQL binds the time as $2; here it gets its own number.
		cond += " AND id IN (SELECT user_id FROM bans WHERE unbanned_at IS NULL AND (expires_at IS NULL OR expires_at > " + arg(db.TS(now)) + "))"
	case "scheduled_for_deletion":
		cond += " AND scheduled_deletion_at IS NOT NULL"
	}
	switch lq.TwoFactor {
	case "on":
		cond += " AND id IN (SELECT user_id FROM two_factor WHERE status = 'enabled')"
	case "off":
		cond += " AND id NOT IN (SELECT user_id FROM two_factor WHERE status = 'enabled')"
	}
	if lq.Role != "" {
		cond += " AND id IN (SELECT user_id FROM user_roles WHERE role_id = " + arg(lq.Role) + ")"
	}
	return cond, args
}

// filtered reports whether lq has a filter beyond the search and deletion.
func (lq ListQuery) filtered() bool { return lq.Status != "" || lq.TwoFactor != "" || lq.Role != "" }

// matches is the condition of lq's search alone on f ("TRUE" without one):
// the exact id, or a part of the username, name or email (db.UserSubstring).
func (lq ListQuery) matches(f db.Flavor) (string, []any) {
	if lq.Search == "" {
		return "TRUE", nil
	}
	return db.UserSubstring(f, lq.Search, 1)
}

// orderBy is the ORDER BY clause of lq on f: its column, then the id.
// Users without an email or a sign-in count as the least (first ascending,
// last descending) on both engines: SQLite orders NULLs so by itself, and
// is told nothing, since an explicit NULLS clause keeps it from walking an
// index; PostgreSQL is told. The id runs the column's way, so one index of
// (column, id) serves both directions, but for the default order, newest
// first with the ids ascending, which users_active_created holds.
func (lq ListQuery) orderBy(f db.Flavor) string {
	dir, nulls := " DESC", " NULLS LAST"
	if lq.Asc {
		dir, nulls = " ASC", " NULLS FIRST"
	}
	if f != db.Postgres {
		nulls = ""
	}
	switch lq.Sort {
	case "username":
		return "LOWER(username)" + dir + ", id" + dir
	case "email":
		return "LOWER(email)" + dir + nulls + ", id" + dir
	case "last_login_at":
		return "last_login_at" + dir + nulls + ", id" + dir
	}
	return "created_at" + dir + ", id"
}

// MaxSearchMatches is the most users a search lists: a search that
// matches more (a letter or two, or a part most addresses share) lists the
// first MaxSearchMatches of its matches in the list's order and counts that
// many. Counting all of them exactly would read every match (all users, for
// the letter that all usernames start with), which no index shortens; an
// operator refines such a search instead, as the admin console says. It was
// 20,000 with the prefix search; a trigram search hands over its matches
// only all at once, and reading 20,000 of them took hundreds of
// milliseconds at 100,000 users (docs/decisions.md, issue 22). A variable,
// so a test can reach the bound without seeding as many users.
var MaxSearchMatches = 2_000

// List returns one page of the users lq selects in its order (ties by id),
// and the number of all of them (of a search: at most MaxSearchMatches).
// GET /v1/users and the admin console's users list call it.
//
// A search (or a filter) finds its users through the indexes of the
// compared texts and the id (or the filter's table). One that finds at most
// MaxSearchMatches users is answered from that one read (searchOnce): counting the matches and then walking the
// list's order for the page would read them twice, the walk fetching row
// after row to meet the few matches late. A broader search is paged by
// that walk (broadSearch), where its matches are dense.
func (s *Service) List(ctx context.Context, lq ListQuery) ([]User, int, error) {
	if lq.Search != "" || lq.filtered() {
		out, total, ok, err := s.searchOnce(ctx, lq)
		if ok || err != nil {
			return out, total, err
		}
		if lq.Search != "" {
			return s.broadSearch(ctx, lq)
		}
		// A filter matching more users than a search lists is counted
		// exactly and paged in the list's order, as the whole list is.
	}
	cond, args := lq.where(s.DB.Flavor, s.now())
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	return s.page(ctx, lq, total, lq.Page.Limit, "")
}

// now is the service's time, for the ban filter.
func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// broadSearch answers a search matching more than MaxSearchMatches users:
// the page of the first MaxSearchMatches matches, of which there are that
// many. It walks the users in the listing's order and tests each (a part
// by LIKE, db.UserSubstringRow), stopping
// at the page's end: at least one in five users match such a search of
// 100,000 (and it stops within the first MaxSearchMatches matches), so the
// walk is short, where the search's indexes would hand over every match to
// be sorted. SQLite is told to take the index of the default order, as it
// plans without statistics and would take the search's indexes;
// PostgreSQL's statistics tell it how many users the search matches.
func (s *Service) broadSearch(ctx context.Context, lq ListQuery) ([]User, int, error) {
	total := MaxSearchMatches
	limit := min(lq.Page.Limit, max(total-lq.Page.Offset(), 0))
	hint := ""
	if s.DB.Flavor == db.SQLite && (lq.Sort == "" || lq.Sort == "created_at") && !lq.Asc && !lq.filtered() {
		hint = " INDEXED BY users_active_created"
		if lq.IncludeDeleted {
			hint = " INDEXED BY users_created_at"
		}
	}
	return s.pageOf(ctx, lq, total, limit, hint, true)
}

// page returns the page of lq of the total users it selects, at most limit
// of them (lq's page size, less at the bound of a broad search), reading
// the users table through hint (an SQLite INDEXED BY clause, or "").
func (s *Service) page(ctx context.Context, lq ListQuery, total, limit int, hint string) ([]User, int, error) {
	return s.pageOf(ctx, lq, total, limit, hint, false)
}

// pageOf is page, with the search tested on each row when rowwise.
func (s *Service) pageOf(ctx context.Context, lq ListQuery, total, limit int, hint string, rowwise bool) ([]User, int, error) {
	if total <= lq.Page.Offset() || limit == 0 {
		return []User{}, total, nil
	}
	// The page's ids first, then their rows: skipping to a deep page walks
	// the index of the order alone, and only the rows shown are read.
	cond, args := lq.whereOf(s.DB.Flavor, s.now(), rowwise)
	n := len(args)
	order := lq.orderBy(s.DB.Flavor)
	out, err := s.load(ctx, `SELECT `+userCols+` FROM users WHERE id IN (SELECT id FROM users`+hint+` WHERE `+cond+
		` ORDER BY `+order+` LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2)+`) ORDER BY `+order,
		append(args, limit, lq.Page.Offset())...)
	return out, total, err
}

// load returns the users a query of userCols answers, in its order.
func (s *Service) load(ctx context.Context, q string, args ...any) ([]User, error) {
	return db.All(ctx, s.DB, scanUser, q, args...)
}

// match is a user a search found, with the keys of the list's orders.
type match struct {
	id       string
	created  int64
	text     string // LOWER(username) or LOWER(email), by the sort
	num      int64  // last_login_at
	hasValue bool   // the text or number of the sort is not NULL
}

// sortKeys are the columns searchOnce reads for lq's order.
func (lq ListQuery) sortKeys() string {
	switch lq.Sort {
	case "username":
		return "LOWER(username), 0"
	case "email":
		return "LOWER(email), 0"
	case "last_login_at":
		return "NULL, last_login_at"
	}
	return "NULL, 0"
}

// compare orders two matches as orderBy orders their rows: by the sort's
// key (absent ones the least), then the id.
func (lq ListQuery) compare(a, b match) int {
	c := 0
	switch lq.Sort {
	case "username", "email", "last_login_at":
		c = cmp.Compare(boolInt(a.hasValue), boolInt(b.hasValue))
		if c == 0 {
			c = cmp.Or(strings.Compare(a.text, b.text), cmp.Compare(a.num, b.num))
		}
	default:
		c = cmp.Compare(a.created, b.created)
	}
	ids := strings.Compare(a.id, b.id)
	if !lq.Asc {
		c = -c
		if lq.Sort == "username" || lq.Sort == "email" || lq.Sort == "last_login_at" {
			ids = -ids
		}
	}
	return cmp.Or(c, ids)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// searchOnce answers lq's search from one read of the users: it collects
// the ids and order keys of the matches, orders and pages them here, and
// loads the page's rows by id. ok is false when more than MaxSearchMatches
// users match.
func (s *Service) searchOnce(ctx context.Context, lq ListQuery) (out []User, total int, ok bool, err error) {
	cond, args := lq.where(s.DB.Flavor, s.now())
	all, err := s.matchKeys(ctx, lq, cond, args)
	if err != nil || len(all) > MaxSearchMatches {
		return nil, 0, false, err
	}
	// User ids are UUIDs, which sort the same bytewise as in a database
	// collation.
	slices.SortFunc(all, lq.compare)
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
	got, err := s.load(ctx, `SELECT `+userCols+` FROM users WHERE id IN (`+strings.Join(marks, ", ")+`)`, ids...)
	if err != nil {
		return nil, 0, false, err
	}
	// The page in the order of its matches.
	at := map[string]User{}
	for _, u := range got {
		at[u.ID] = u
	}
	out = make([]User, 0, len(page))
	for _, m := range page {
		if u, ok := at[m.id]; ok {
			out = append(out, u)
		}
	}
	return out, len(all), true, nil
}

// matchKeys reads the matches of cond (at most MaxSearchMatches+1) with
// the keys of lq's order.
func (s *Service) matchKeys(ctx context.Context, lq ListQuery, cond string, args []any) ([]match, error) {
	scan := func(row db.Scanner) (match, error) {
		var m match
		var text sql.NullString
		var num sql.NullInt64
		err := row.Scan(&m.id, &m.created, &text, &num)
		m.text, m.num = text.String, num.Int64
		m.hasValue = text.Valid || (lq.Sort == "last_login_at" && num.Valid)
		return m, err
	}
	return db.All(ctx, s.DB, scan, `SELECT id, created_at, `+lq.sortKeys()+` FROM users WHERE `+cond+` LIMIT `+strconv.Itoa(MaxSearchMatches+1), args...)
}
