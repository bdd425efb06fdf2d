package httpx

import (
	"net/http"
	"net/url"
	"strconv"
)

// Links is the _links object of a response.
type Links struct {
	Self  string  `json:"self"`
	First *string `json:"first,omitempty"`
	Prev  *string `json:"prev,omitempty"`
	Next  *string `json:"next,omitempty"`
	Last  *string `json:"last,omitempty"`
}

// Resource is the single-resource envelope {data, _links: {self}} (ResourceResponse<T>).
type Resource struct {
	Data  any   `json:"data"`
	Links Links `json:"_links"`
}

// Pagination is the pagination block of a paginated list.
type Pagination struct {
	Page       int `json:"page"`
	Limit      int `json:"limit"`
	Total      int `json:"total"`
	TotalPages int `json:"total_pages"`
}

// ListPage is the paginated list envelope.
type ListPage struct {
	Data       any        `json:"data"`
	Pagination Pagination `json:"pagination"`
	Links      Links      `json:"_links"`
}

// SelfURL returns the absolute URL of the current request on the public base URL.
func SelfURL(r *http.Request) string { return BaseURL(r.Context()) + r.URL.RequestURI() }

// URL returns the absolute public URL of path.
func URL(r *http.Request, path string) string { return BaseURL(r.Context()) + path }

// WriteResource writes {data, _links: {self}} with the given status.
func WriteResource(w http.ResponseWriter, r *http.Request, status int, data any) {
	JSON(w, status, Resource{Data: data, Links: Links{Self: SelfURL(r)}})
}

// WriteResourceAt writes {data, _links: {self: selfPath}}, for creations whose
// self link is the new resource rather than the collection.
func WriteResourceAt(w http.ResponseWriter, r *http.Request, status int, data any, selfPath string) {
	JSON(w, status, Resource{Data: data, Links: Links{Self: URL(r, selfPath)}})
}

// WriteList writes a paginated list. data must be a slice (never nil, so it
// encodes as []).
func WriteList(w http.ResponseWriter, r *http.Request, data any, p Page, total int) {
	JSON(w, http.StatusOK, ListPage{Data: data, Pagination: p.Block(total), Links: p.Links(r, total)})
}

// Page is a parsed page/limit pair.
type Page struct {
	Page  int
	Limit int
}

// Offset is the SQL offset of the page.
func (p Page) Offset() int { return (p.Page - 1) * p.Limit }

// Block returns the pagination block for total items.
func (p Page) Block(total int) Pagination {
	return Pagination{Page: p.Page, Limit: p.Limit, Total: total, TotalPages: p.TotalPages(total)}
}

// TotalPages is ceil(total/limit), at least 1 so that "last" always names a page.
func (p Page) TotalPages(total int) int {
	if total <= 0 {
		return 1
	}
	return (total + p.Limit - 1) / p.Limit
}

// Links builds absolute self/first/prev/next/last links keeping the other query parameters.
func (p Page) Links(r *http.Request, total int) Links {
	last := p.TotalPages(total)
	at := func(n int) *string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		q.Set("limit", strconv.Itoa(p.Limit))
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		s := BaseURL(r.Context()) + u.RequestURI()
		return &s
	}
	l := Links{Self: *at(p.Page), First: at(1), Last: at(last)}
	if p.Page > 1 {
		l.Prev = at(min(p.Page-1, last))
	}
	if p.Page < last {
		l.Next = at(p.Page + 1)
	}
	return l
}

// ParsePage reads page and limit from the query: page below 1 (or unparsable)
// becomes 1, limit is clamped to 1..100 with def when absent or unparsable.
func ParsePage(r *http.Request, def int) Page {
	return ParsePageValues(r.URL.Query().Get("page"), r.URL.Query().Get("limit"), def)
}

// ParsePageValues is ParsePage on raw strings; the fuzz test drives it.
func ParsePageValues(page, limit string, def int) Page {
	p := Page{Page: 1, Limit: def}
	if n, err := strconv.Atoi(page); err == nil && n > 1 {
		p.Page = n
	}
	// Keep offset arithmetic far from integer overflow.
	if p.Page > 10_000_000 {
		p.Page = 10_000_000
	}
	if n, err := strconv.Atoi(limit); err == nil {
		p.Limit = n
	}
	p.Limit = max(1, min(100, p.Limit))
	return p
}

// ParseLimitOffset reads limit and offset from the query for the lists that
// page by offset, with the rule of ParsePage: limit is clamped to 1..100 with
// def when absent or unparsable, offset below 0 (or unparsable) becomes 0.
func ParseLimitOffset(r *http.Request, def int) (limit, offset int) {
	q := r.URL.Query()
	limit = def
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		limit = n
	}
	if n, err := strconv.Atoi(q.Get("offset")); err == nil {
		// Keep offset arithmetic far from integer overflow, as ParsePageValues does.
		offset = min(max(0, n), 1_000_000_000)
	}
	return max(1, min(100, limit)), offset
}
