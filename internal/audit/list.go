package audit

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"hmid/internal/db"
	"hmid/internal/httpx"
)

// SortFields are the sort_field values of the admin listing; each has an
// index whose leading column it is, so any sort is an index walk.
var SortFields = []string{"event_type", "user_id", "status", "created_at"}

// Filter selects and orders audit events for a listing.
type Filter struct {
	UserID        string // exact user id
	UserSearch    string // user id, or the start of a username or email (case-insensitive)
	EventType     string
	ResourceType  string
	Status        string
	SourceService string
	Start, End    *time.Time // inclusive bounds on created_at
	IsReported    *bool
	SortField     string // one of SortFields; "" is created_at
	Asc           bool   // sort_direction=asc (default desc, newest first)
	Page          httpx.Page

	searchIDs []string  // UserSearch resolved to user ids (nil: not resolved)
	flavor    db.Flavor // the engine UserSearch was resolved on
}

// ParseUserFilter reads the query of the per-user listings (spec 2, Audit
// log): page, limit, event_type, resource_type and status. Invalid enum
// values are a ValidationError rather than an empty page, so a typo in a
// filter is noticed; each is a *FieldError naming its parameter.
func ParseUserFilter(q url.Values) (Filter, error) {
	f := Filter{Page: httpx.ParsePageValues(q.Get("page"), q.Get("limit"), 20)}
	f.EventType = q.Get("event_type")
	f.ResourceType = q.Get("resource_type")
	f.Status = q.Get("status")
	if f.EventType != "" && !IsEventType(f.EventType) {
		return f, invalidField("event_type", "event_type %q is not a known event type", f.EventType)
	}
	if f.Status != "" && f.Status != StatusSuccess && f.Status != StatusFailure {
		return f, invalidField("status", "status must be success or failure")
	}
	return f, nil
}

// ParseAdminFilter reads the query of GET /v1/admin/audit: the per-user
// parameters plus user_id, user_search, source_service, start_date, end_date
// (ISO 8601), sort_field, sort_direction and is_reported.
func ParseAdminFilter(q url.Values) (Filter, error) {
	f, err := ParseUserFilter(q)
	if err != nil {
		return f, err
	}
	f.UserID = q.Get("user_id")
	f.UserSearch = strings.TrimSpace(q.Get("user_search"))
	f.SourceService = q.Get("source_service")
	if f.SourceService != "" && !slices.Contains(SourceServices, f.SourceService) {
		return f, invalidField("source_service", "source_service must be one of %s", strings.Join(SourceServices, ", "))
	}
	if f.Start, err = parseDate(q.Get("start_date"), "start_date", false); err != nil {
		return f, err
	}
	if f.End, err = parseDate(q.Get("end_date"), "end_date", true); err != nil {
		return f, err
	}
	if f.Start != nil && f.End != nil && f.Start.After(*f.End) {
		return f, invalidField("end_date", "start_date must not be after end_date")
	}
	f.SortField = q.Get("sort_field")
	if f.SortField != "" && !slices.Contains(SortFields, f.SortField) {
		return f, invalidField("sort_field", "sort_field must be one of %s", strings.Join(SortFields, ", "))
	}
	switch q.Get("sort_direction") {
	case "", "desc":
	case "asc":
		f.Asc = true
	default:
		return f, invalidField("sort_direction", "sort_direction must be asc or desc")
	}
	if v := q.Get("is_reported"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false") {
			return f, invalidField("is_reported", "is_reported must be true or false")
		}
		f.IsReported = &b
	}
	return f, nil
}

// parseDate reads an ISO 8601 date-time (RFC 3339, fractional seconds
// allowed) or a calendar date. A calendar date as end bound means the end of
// that day (UTC), so end_date=2026-11-22 includes the whole 22nd.
func parseDate(s, name string, end bool) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return &t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			t = t.Add(24*time.Hour - time.Microsecond)
		}
		return &t, nil
	}
	return nil, invalidField(name, "%s must be an ISO 8601 date or date-time such as 2026-11-22 or 2026-11-22T12:00:00Z", name)
}

// where builds the WHERE clause and its arguments.
func (f Filter) where() (string, []any) {
	var w whereList
	w.addText("user_id = ?", f.UserID)
	switch {
	case f.searchIDs != nil:
		marks := make([]string, len(f.searchIDs))
		for i, id := range f.searchIDs {
			w.args = append(w.args, id)
			marks[i] = "$" + strconv.Itoa(len(w.args))
		}
		w.conds = append(w.conds, "user_id IN ("+strings.Join(marks, ", ")+")")
	case f.UserSearch != "":
		sub, subArgs := userSearchSQL(f.flavor, f.UserSearch, len(w.args)+1)
		w.args = append(w.args, subArgs...)
		w.conds = append(w.conds, `user_id IN (`+sub+`)`)
	}
	w.addText("event_type = ?", f.EventType)
	w.addText("resource_type = ?", f.ResourceType)
	w.addText("status = ?", f.Status)
	w.addText("source_service = ?", f.SourceService)
	if f.Start != nil {
		w.add("created_at >= ?", db.TS(*f.Start))
	}
	if f.End != nil {
		w.add("created_at <= ?", db.TS(*f.End))
	}
	if f.IsReported != nil {
		// A literal, not a parameter, so the planner can match the partial
		// index on reported events.
		if *f.IsReported {
			w.conds = append(w.conds, "is_reported = TRUE")
		} else {
			w.conds = append(w.conds, "is_reported = FALSE")
		}
	}
	return w.clause(), w.args
}

// whereList collects the conditions of a WHERE clause and their numbered
// arguments, for the event list and the day counts alike.
type whereList struct {
	conds []string
	args  []any
}

// add appends cond, its ? replaced by the placeholder of v.
func (w *whereList) add(cond string, v any) {
	w.args = append(w.args, v)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

// addText adds cond with v unless v is empty (the filter is not set).
func (w *whereList) addText(cond, v string) {
	if v != "" {
		w.add(cond, v)
	}
}

// clause returns " WHERE " and the conditions joined by AND, or "" when
// there are none.
func (w *whereList) clause() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// orderBy returns the ORDER BY clause. Ties on the sort column are broken by
// created_at and id in the same direction, so pages are stable and the
// (column, created_at) index serves the whole order.
func (f Filter) orderBy() string {
	dir := " DESC"
	if f.Asc {
		dir = " ASC"
	}
	switch f.SortField {
	case "event_type", "user_id", "status":
		return " ORDER BY " + f.SortField + dir + ", created_at" + dir + ", id" + dir
	default:
		return " ORDER BY created_at" + dir + ", id" + dir
	}
}

// userSearchSQL selects the ids of users matching a user_search on f, and
// its arguments from $first: the exact id, or a username or email starting with
// the search, ignoring case (db.UserMatch, which the users list's search
// shares), each found through an index of users.
func userSearchSQL(f db.Flavor, search string, first int) (string, []any) {
	cond, args := db.UserMatch(f, search, first, "username", "email")
	return `SELECT id FROM users WHERE ` + cond, args
}

// maxSearchIDs bounds how many matching user ids a user_search spells out in
// the query; broader searches keep the subquery.
const maxSearchIDs = 500

// resolveSearch turns user_search into the list of matching user ids. The
// users table is small next to the log, and with the ids spelled out the
// planner reads the log per user through (user_id, created_at) instead of
// walking all of it in time order hoping to meet the user.
func resolveSearch(ctx context.Context, d *db.DB, f Filter) (Filter, error) {
	if f.UserSearch == "" {
		return f, nil
	}
	f.flavor = d.Flavor
	query, args := userSearchSQL(d.Flavor, f.UserSearch, 1)
	ids, err := db.All(ctx, d, db.ScanString, query+` LIMIT `+strconv.Itoa(maxSearchIDs+1), args...)
	if err != nil {
		return f, err
	}
	if len(ids) <= maxSearchIDs {
		f.searchIDs = ids
	}
	return f, nil
}

// List returns one page of the events matching f and the number of all of them.
func List(ctx context.Context, d *db.DB, f Filter) ([]Entry, int, error) {
	f, err := resolveSearch(ctx, d, f)
	if err != nil {
		return nil, 0, err
	}
	out := []Entry{}
	if f.searchIDs != nil && len(f.searchIDs) == 0 {
		return out, 0, nil
	}
	total, err := count(ctx, d, f)
	if err != nil {
		return nil, 0, err
	}
	where, args := f.where()
	if total <= f.Page.Offset() {
		return out, total, nil
	}
	n := len(args)
	out, err = db.All(ctx, d, scanEntry, `SELECT `+entryCols+` FROM audit_events`+where+f.orderBy()+
		` LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, f.Page.Limit, f.Page.Offset())...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// EventPage is the listing envelope of spec 2 (Audit log):
// {events, total_count, page, limit, total_pages, _links}.
type EventPage struct {
	Events     []Entry     `json:"events"`
	TotalCount int         `json:"total_count"`
	Page       int         `json:"page"`
	Limit      int         `json:"limit"`
	TotalPages int         `json:"total_pages"`
	Links      httpx.Links `json:"_links"`
}
