package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// The shape of a list page with filters and paging (the account's
// activity, the admin audit log, the admin lists): the filter is read from
// the query and kept as given (FilterQuery) to refill its form
// (SelectField, TextField, Choices) and to carry in the pager's links
// (NewPager); a filter value the service refuses is said at its field with
// the status the REST listing answers (Refusal).

// activityLimits are the page sizes offered; the listing accepts 1 to 100.
var activityLimits = []int{10, 20, 50, 100}

// Choice is one choice of a select.
type Choice struct {
	Value, Label string
	Selected     bool
}

// SelectField is a select of a form as parts_events.html draws it.
type SelectField struct {
	ID, Name, Label string
	All             string // the label of the empty choice; "" for none
	Options         []Choice
	Error           string // the field's error, if any
}

// TextField is an input of a form as parts_events.html draws it.
type TextField struct {
	ID, Name, Label string
	Type            string // text, search, date
	Value           string
	Help            string // a hint beneath, if any
	Error           string // the field's error, if any
}

// Field is a field of a filter form: a SelectField or a TextField.
type Field interface{ IsSelect() bool }

// IsSelect tells the "filter-box" part to draw a select.
func (SelectField) IsSelect() bool { return true }

// IsSelect tells the "filter-box" part to draw an input.
func (TextField) IsSelect() bool { return false }

// FilterBox is the filter form of a list page as the "filter-box" part
// draws it: folded away unless a filter is set or refused.
type FilterBox struct {
	Action  string // the page's path, also the link that clears the filter
	Active  int    // how many filters are set
	Invalid bool   // a filter value was refused
	Fields  []Field
}

// ResourceField is the resource type filter of the query q: free text, as
// the listings take any value.
func ResourceField(t func(string) string, q url.Values) TextField {
	return TextField{ID: "f-resource", Name: "resource_type", Label: t("activity.field.resource"), Type: "text",
		Value: q.Get("resource_type"), Help: t("activity.help.resource")}
}

// EventTypeChoices are the options of an event type select, from the one
// list (audit.EventTypes), in words, with selected selected.
func EventTypeChoices(t func(string) string, selected string) []Choice {
	out := make([]Choice, 0, len(audit.EventTypes))
	for _, typ := range audit.EventTypes {
		out = append(out, Choice{Value: typ, Label: EventText(t, typ), Selected: typ == selected})
	}
	return out
}

// EventFields are the event type and the status select of a filter of
// audit events q, with the refusals errs at their fields: the same on
// every page that lists events.
func EventFields(t func(string) string, q url.Values, errs map[string]string) (eventType, status SelectField) {
	eventType = SelectField{ID: "f-event", Name: "event_type", Label: t("activity.field.event"), All: t("activity.all"),
		Options: EventTypeChoices(t, q.Get("event_type")), Error: errs["event_type"]}
	status = SelectField{ID: "f-status", Name: "status", Label: t("activity.field.status"), All: t("activity.all"),
		Options: Choices(t, "activity.status.", []string{audit.StatusSuccess, audit.StatusFailure}, q.Get("status")),
		Error:   errs["status"]}
	return eventType, status
}

// Choices are the options of a select of values, each labelled with the
// text prefix+value, with selected selected.
func Choices(t func(string) string, prefix string, values []string, selected string) []Choice {
	out := make([]Choice, 0, len(values))
	for _, s := range values {
		out = append(out, Choice{Value: s, Label: t(prefix + s), Selected: s == selected})
	}
	return out
}

// LimitChoices are the page sizes offered (activityLimits, and limit when
// the query asked for another size the listing accepts), limit selected.
func LimitChoices(limit int) []Choice {
	limits := activityLimits
	if limit > 0 && !slices.Contains(limits, limit) {
		limits = append(slices.Clone(limits), limit)
		slices.Sort(limits)
	}
	out := make([]Choice, 0, len(limits))
	for _, n := range limits {
		out = append(out, Choice{Value: strconv.Itoa(n), Label: strconv.Itoa(n), Selected: n == limit})
	}
	return out
}

// Pager is the position of one page of a listing of audit events and
// the links to its neighbours, which keep the filter.
type Pager struct {
	Total      int
	Page       int
	TotalPages int
	From, To   int // positions of the first and last event shown
	Newer      string
	Older      string
	First      string // the first page, when the page asked for is past the end
	// PrevLabel and NextLabel are the message keys of the links to the
	// previous and the next page.
	PrevLabel, NextLabel string
}

// NewPager places the page pg of a listing at path with the filter q,
// which shows shown of total events.
func NewPager(pg httpx.Page, total, shown int, path string, q url.Values) Pager {
	link := func(n int) string { return WithParam(path, q, "page", strconv.Itoa(n)) }
	v := Pager{Total: total, Page: pg.Page, TotalPages: pg.TotalPages(total), PrevLabel: "activity.newer", NextLabel: "activity.older"}
	if shown > 0 {
		v.From = pg.Offset() + 1
		v.To = pg.Offset() + shown
	}
	if v.Page > 1 && v.Page <= v.TotalPages {
		v.Newer = link(v.Page - 1)
	}
	if v.Page < v.TotalPages {
		v.Older = link(v.Page + 1)
	}
	if shown == 0 && total > 0 {
		v.First = link(1)
	}
	return v
}

// WithParam is the address path?q with q's key set to value: a link of a
// list page that keeps the rest of its query (the filter, the other list's
// page).
func WithParam(path string, q url.Values, key, value string) string {
	c := url.Values{}
	for k, vals := range q {
		c[k] = vals
	}
	c.Set(key, value)
	return path + "?" + c.Encode()
}

// FilterQuery is the query q of a listing reduced to its parameters params
// (the filter as given, to refill the form and keep in links), with the
// number of filters set: all of them but the paging and the sort.
func FilterQuery(q url.Values, params []string) (url.Values, int) {
	out, active := url.Values{}, 0
	for _, k := range params {
		if s := q.Get(k); s != "" {
			out.Set(k, s)
			if !slices.Contains([]string{"page", "limit", "sort_field", "sort_direction"}, k) {
				active++
			}
		}
	}
	return out, active
}

// refusal shows the error err of a listing on its page: a filter value the
// listing refuses is said at its field in fields (the text prefix+field),
// with the status the API answers, and no list; any other error is the
// page's. It returns the page's status and error (status and pageErr when
// err is nil).
func (h *Handler) Refusal(w http.ResponseWriter, r *http.Request, status int, pageErr string, err error, fields map[string]string, prefix string) (int, string) {
	var fe *audit.FieldError
	switch {
	case errors.As(err, &fe):
		fields[fe.Field] = FieldErrorText(Translator(h.UserLanguage(r, authn.From(r.Context()))), prefix, fe)
		return http.StatusBadRequest, pageErr
	case err != nil:
		return h.Status(w, err), h.ErrorText(r, err)
	}
	return status, pageErr
}

// FieldErrorText is the text of a refused field: the page's own sentence
// (the message prefix+field) for the fields it knows, else the service's
// message.
func FieldErrorText(t func(string) string, prefix string, fe *audit.FieldError) string {
	key := prefix + fe.Field
	if HasText(key) {
		return t(key)
	}
	return t("err.invalid") + " " + fe.Err.Message
}

// EventText is an event type in words; a type without a text (none in
// audit.EventTypes, a test checks it) shows as it is stored.
func EventText(t func(string) string, eventType string) string {
	key := "activity.event." + eventType
	if !HasText(key) {
		return eventType
	}
	return t(key)
}

// EventTitle is an event in words, by its type and status: a failure has
// a title of its own where the success's would say the opposite (a rejected
// second factor is not "Second factor confirmed").
func EventTitle(t func(string) string, eventType, status string) string {
	if status == audit.StatusFailure && HasText("activity.event."+eventType+".failure") {
		return t("activity.event." + eventType + ".failure")
	}
	return EventText(t, eventType)
}

// Deref is the string *s points to, "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// JoinNonEmpty joins the non-empty parts with sep.
func JoinNonEmpty(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}

// ActivityFieldError is the text of a refused field of the activity page.
func ActivityFieldError(t func(string) string, fe *audit.FieldError) string {
	return FieldErrorText(t, "activity.bad.", fe)
}
