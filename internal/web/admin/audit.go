package admin

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clientinfo"
	"hmid/internal/httpx"
	"hmid/internal/web"
)

// AuditPages is the admin console's audit area: /admin/audit lists
// every event with the filters, sorts and paging of GET /v1/admin/audit and
// downloads the filtered events as GET /v1/admin/audit/export does;
// /admin/audit/reports is the queue of reports (GET
// /v1/admin/audit/reports) where a reviewer sets a report's status and
// notes as PATCH /v1/admin/audit/reports/{report_id} does, which mails the
// reporting user. Every page calls audit.Service, as those routes do.
type AuditPages struct {
	H     *web.Handler
	Audit *audit.Service
}

// adminAuditParams are the query parameters of GET /v1/admin/audit the log
// page reads and keeps in its links; all but page and limit go to the CSV
// download.
var adminAuditParams = []string{"user_search", "user_id", "event_type", "status", "source_service", "resource_type",
	"start_date", "end_date", "is_reported", "sort_field", "sort_direction", "page", "limit"}

// adminEventRow is one event as the admin log shows it.
type adminEventRow struct {
	audit.Entry
	What   string // the event in words
	User   string // the username, or the stored id when it is no user's
	Actor  string // who acted on the user, when someone else did
	Client string // browser and system from the user agent
	Place  string // "City, Country" when geolocated
	Source string // the service that recorded it, in words
	// OnlyUser is the log filtered to this event's user.
	OnlyUser string
}

// adminAuditView is what admin_audit.html reads.
type adminAuditView struct {
	Query       url.Values // the filter as given, to refill the form
	Active      int        // how many filters (not the sort) are set (the form is open then)
	FieldErrors map[string]string
	User        web.TextField
	UserID      web.TextField
	EventType   web.SelectField
	Status      web.SelectField
	Source      web.SelectField
	Resource    web.TextField
	Start, End  web.TextField
	Reported    web.SelectField
	Sort        web.SelectField
	Direction   web.SelectField
	Limit       web.SelectField
	Events      []adminEventRow
	web.Pager
	// CSV is the download of the events of this filter, all pages.
	CSV string
	// Pending is the number of reports waiting for review.
	Pending int
}

// List is GET /admin/audit.
func (ap *AuditPages) List(w http.ResponseWriter, r *http.Request) {
	ap.list(w, r, http.StatusOK, r.URL.Query(), nil)
}

// list shows the events matching q; failed is an error of the CSV download
// of q, shown in place of the events.
func (ap *AuditPages) list(w http.ResponseWriter, r *http.Request, status int, q url.Values, failed error) {
	ctx := r.Context()
	t := web.Translator(ap.H.UserLanguage(r, authn.From(ctx)))
	v := adminAuditView{FieldErrors: map[string]string{}}
	v.Query, v.Active = web.FilterQuery(q, adminAuditParams)
	view := web.ConsoleView{Title: "title.admin.audit", Section: "audit", Data: &v}
	f, events, total, err := ap.Audit.Admin(ctx, v.Query)
	if failed != nil {
		err = failed
	}
	status, view.Error = ap.H.Refusal(w, r, status, view.Error, err, v.FieldErrors, "admin.audit.bad.")
	v.fill(t, f)
	if err == nil {
		people, err := ap.Audit.People(ctx, eventPeople(events))
		if err != nil {
			ap.H.Fail(w, r, err)
			return
		}
		for _, e := range events {
			v.Events = append(v.Events, adminEvent(t, e, people))
		}
		v.Pager = web.NewPager(f.Page, total, len(events), "/admin/audit", v.Query)
		// Any sort can be chosen, so the links say previous and next rather
		// than newer and older.
		v.PrevLabel, v.NextLabel = "admin.audit.prev", "admin.audit.next"
		csv := url.Values{}
		for k, vals := range v.Query {
			if k != "page" && k != "limit" {
				csv[k] = vals
			}
		}
		v.CSV = "/admin/audit/export"
		if len(csv) > 0 {
			v.CSV += "?" + csv.Encode()
		}
	}
	if v.Pending, err = ap.pending(r); err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	ap.H.Console(w, r, status, "admin_audit", view)
}

// pending counts the reports waiting for review, for the link to the queue.
func (ap *AuditPages) pending(r *http.Request) (int, error) {
	reports, err := ap.Audit.Reports(r.Context(), "pending")
	return len(reports), err
}

// eventPeople are the user ids an event list names: users and actors.
func eventPeople(events []audit.Entry) []string {
	var ids []string
	for _, e := range events {
		ids = append(ids, web.Deref(e.UserID), web.Deref(e.ActorID))
	}
	return ids
}

// adminEvent is e in words for the log, with people naming its user ids.
func adminEvent(t func(string) string, e audit.Entry, people map[string]audit.Person) adminEventRow {
	row := adminEventRow{Entry: e, What: web.EventTitle(t, e.EventType, e.Status), Source: t("activity.source." + e.SourceService)}
	if id := web.Deref(e.UserID); id != "" {
		row.User = id
		if p, ok := people[id]; ok && p.Username != "" {
			row.User = p.Username
		}
		row.OnlyUser = "/admin/audit?" + url.Values{"user_id": {id}}.Encode()
	}
	if id := web.Deref(e.ActorID); id != "" && id != web.Deref(e.UserID) {
		row.Actor = id
		if p, ok := people[id]; ok && p.Username != "" {
			row.Actor = p.Username
		}
	}
	if e.UserAgent != nil {
		c := clientinfo.Parse(*e.UserAgent)
		row.Client = web.JoinNonEmpty(" · ", c.Browser, c.OS)
	}
	row.Place = web.JoinNonEmpty(", ", web.Deref(e.City), web.Deref(e.CountryName))
	return row
}

// fill builds the selects of the filter form from the one list of each
// (audit.EventTypes, audit.SourceServices, audit.SortFields), with the
// filter f selected and the refused field's error.
func (v *adminAuditView) fill(t func(string) string, f audit.Filter) {
	q, all := v.Query, t("activity.all")
	field := func(id, name, label, all string, options []web.Choice) web.SelectField {
		return web.SelectField{ID: id, Name: name, Label: t(label), All: all, Options: options, Error: v.FieldErrors[name]}
	}
	text := func(id, name, label, typ, help string) web.TextField {
		return web.TextField{ID: id, Name: name, Label: t(label), Type: typ, Value: q.Get(name), Help: help, Error: v.FieldErrors[name]}
	}
	v.User = text("f-user", "user_search", "admin.audit.field.user", "search", t("admin.audit.help.user"))
	v.UserID = text("f-userid", "user_id", "admin.audit.field.userid", "text", "")
	v.Resource = web.ResourceField(t, q)
	v.Start = text("f-from", "start_date", "admin.audit.field.from", "date", "")
	v.End = text("f-to", "end_date", "admin.audit.field.to", "date", "")
	v.EventType, v.Status = web.EventFields(t, q, v.FieldErrors)
	v.Source = field("f-source", "source_service", "admin.audit.field.source", all,
		web.Choices(t, "admin.audit.source.", audit.SourceServices, q.Get("source_service")))
	v.Reported = field("f-reported", "is_reported", "admin.audit.field.reported", all,
		web.Choices(t, "admin.audit.reported.", []string{"true", "false"}, q.Get("is_reported")))
	// The sort has no empty choice: the listing's defaults are selected.
	sortField, dir := q.Get("sort_field"), q.Get("sort_direction")
	if sortField == "" {
		sortField = "created_at"
	}
	if dir == "" {
		dir = "desc"
	}
	v.Sort = field("f-sort", "sort_field", "admin.audit.field.sort", "", web.Choices(t, "admin.audit.sort.", audit.SortFields, sortField))
	v.Direction = field("f-dir", "sort_direction", "admin.audit.field.dir", "", web.Choices(t, "admin.audit.dir.", []string{"desc", "asc"}, dir))
	v.Limit = field("f-limit", "limit", "activity.field.limit", "", web.LimitChoices(f.Page.Limit))
}

// Export is GET /admin/audit/export: the CSV file of the filter, streamed
// as the REST route streams it. A refused filter is shown on the log page.
func (ap *AuditPages) Export(w http.ResponseWriter, r *http.Request) {
	if err := ap.Audit.WriteCSV(w, r); err != nil {
		ap.list(w, r, http.StatusOK, r.URL.Query(), err)
	}
}

// adminReportRow is one report of the queue with what it is about.
type adminReportRow struct {
	audit.Report
	ReasonText string
	Reporter   audit.Person
	Event      *adminEventRow // nil when the event is no longer stored
	Reviewer   string         // who reviewed last: a username or a key id
	// Log is the audit log of the reporting user's reported events.
	Log      string
	Statuses []web.Choice
	// Errors and Notes are those of a refused review of this report.
	Errors map[string]string
	Notes  string
	Open   bool // the review form is shown open
}

// adminReportsView is what admin_audit_reports.html reads.
type adminReportsView struct {
	Status      string // the status filter
	Filter      web.SelectField
	FieldErrors map[string]string
	Reports     []adminReportRow
	Pending     int
	// CanReview shows the review forms: the caller holds the permission of
	// the review route.
	CanReview bool
	MaxNotes  int
}

// reviewRefused is a review the service refused, shown again at its form.
type reviewRefused struct {
	ReportID string
	Errors   map[string]string
	Input    audit.ReviewInput
	Page     string // an error of the whole request
}

// Reports is GET /admin/audit/reports: the queue, pending reports first.
func (ap *AuditPages) Reports(w http.ResponseWriter, r *http.Request) {
	ap.reports(w, r, http.StatusOK, r.URL.Query().Get("status"), reviewRefused{})
}

// reports shows the reports with status ("" for all) and the refused
// review rf if any.
func (ap *AuditPages) reports(w http.ResponseWriter, r *http.Request, status int, filter string, rf reviewRefused) {
	ctx := r.Context()
	p := authn.From(ctx)
	t := web.Translator(ap.H.UserLanguage(r, p))
	v := adminReportsView{Status: filter, FieldErrors: map[string]string{}, CanReview: p != nil && p.Can("audit:write"),
		MaxNotes: audit.MaxReportText}
	view := web.ConsoleView{Title: "title.admin.reports", Section: "audit", Error: rf.Page, Data: &v}
	reports, err := ap.Audit.Reports(ctx, filter)
	status, view.Error = ap.H.Refusal(w, r, status, view.Error, err, v.FieldErrors, "admin.audit.bad.report_")
	v.Filter = web.SelectField{ID: "r-status", Name: "status", Label: t("admin.reports.field.status"), All: t("activity.all"),
		Options: web.Choices(t, "activity.rstatus.", audit.ReportStatuses, filter), Error: v.FieldErrors["status"]}
	if err == nil {
		if err := ap.fillReports(r, t, &v, reports, rf); err != nil {
			ap.H.Fail(w, r, err)
			return
		}
	}
	if v.Pending, err = ap.pending(r); err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	ap.H.Console(w, r, status, "admin_audit_reports", view)
}

// fillReports puts reports on v, pending ones first (each group newest
// first, as the service lists them), with their events and people.
func (ap *AuditPages) fillReports(r *http.Request, t func(string) string, v *adminReportsView, reports []audit.Report, rf reviewRefused) error {
	ctx := r.Context()
	slices.SortStableFunc(reports, func(a, b audit.Report) int {
		return boolOrder(a.Status != "pending") - boolOrder(b.Status != "pending")
	})
	var eventIDs, userIDs []string
	for _, rp := range reports {
		eventIDs = append(eventIDs, rp.AuditEventID)
		userIDs = append(userIDs, rp.UserID, web.Deref(rp.ReviewedBy))
	}
	events, err := ap.Audit.Events(ctx, eventIDs)
	if err != nil {
		return err
	}
	for _, e := range events {
		userIDs = append(userIDs, web.Deref(e.ActorID))
	}
	people, err := ap.Audit.People(ctx, userIDs)
	if err != nil {
		return err
	}
	for _, rp := range reports {
		row := adminReportRow{Report: rp, ReasonText: t("activity.reason." + rp.Reason), Reporter: people[rp.UserID],
			Log: "/admin/audit?" + url.Values{"user_id": {rp.UserID}, "is_reported": {"true"}}.Encode()}
		if e, ok := events[rp.AuditEventID]; ok {
			ev := adminEvent(t, e, people)
			row.Event = &ev
		}
		if by := web.Deref(rp.ReviewedBy); by != "" {
			row.Reviewer = by
			if p, ok := people[by]; ok && p.Username != "" {
				row.Reviewer = p.Username
			}
		}
		selected := rp.Status
		row.Notes = web.Deref(rp.ResolutionNotes)
		if rp.ID == rf.ReportID {
			row.Open, row.Errors = true, rf.Errors
			selected, row.Notes = rf.Input.Status.Value, rf.Input.ResolutionNotes.Value
		}
		row.Statuses = web.Choices(t, "activity.rstatus.", audit.ReportStatuses, selected)
		v.Reports = append(v.Reports, row)
	}
	return nil
}

// boolOrder is 1 for true and 0 for false, to sort by a condition.
func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Review is POST /admin/audit/reports/{id}: the reviewer's status and notes.
func (ap *AuditPages) Review(w http.ResponseWriter, r *http.Request) {
	p := ap.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	// The form carries the filter of the queue it is on, so the answer
	// shows that queue again.
	filter := r.PostForm.Get("list_status")
	id := chi.URLParam(r, "id")
	// The form always sends both fields: an emptied notes field clears the
	// notes, as null does in the API.
	in := audit.ReviewInput{
		Status:          httpx.Opt[string]{Set: true, Value: r.PostForm.Get("status")},
		ResolutionNotes: httpx.Opt[string]{Set: true, Value: r.PostForm.Get("resolution_notes")},
	}
	if _, err := ap.Audit.Review(r.Context(), p, id, in); err != nil {
		t := web.Translator(ap.H.UserLanguage(r, p))
		var fe *audit.FieldError
		if errors.As(err, &fe) {
			ap.reports(w, r, http.StatusBadRequest, filter, reviewRefused{ReportID: id, Input: in,
				Errors: map[string]string{fe.Field: web.FieldErrorText(t, "admin.audit.bad.report_", fe)}})
			return
		}
		ap.reports(w, r, ap.H.Status(w, err), filter, reviewRefused{Page: ap.H.ErrorText(r, err)})
		return
	}
	to := "/admin/audit/reports"
	if filter != "" {
		to += "?" + url.Values{"status": {filter}}.Encode()
	}
	ap.H.Done(w, r, to+"#report-"+id, "admin.audit.reviewed")
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.admin.audit":                       "Audit log",
			"title.admin.reports":                     "Reported events",
			"admin.audit.tabs":                        "Audit",
			"admin.audit.log":                         "Log",
			"admin.audit.queue":                       "Reports",
			"admin.audit.pending":                     "%d pending",
			"admin.audit.intro":                       "Every event hmid and the services around it recorded. Filter by user, event, result, source, resource and date, sort, and download the filtered events as a CSV file.",
			"admin.audit.field.user":                  "User",
			"admin.audit.help.user":                   "Id, or the start of a username or email (any case).",
			"admin.audit.field.userid":                "Exact user id",
			"admin.audit.field.source":                "Recorded by",
			"admin.audit.field.from":                  "From",
			"admin.audit.field.to":                    "To (inclusive)",
			"admin.audit.field.reported":              "Reported",
			"admin.audit.field.sort":                  "Sort by",
			"admin.audit.field.dir":                   "Order",
			"admin.audit.csv":                         "Download CSV",
			"admin.audit.csv.help":                    "The CSV file holds every event of this filter, not only this page.",
			"admin.audit.col.user":                    "User",
			"admin.audit.col.resource":                "Resource",
			"admin.audit.prev":                        "← Previous",
			"admin.audit.next":                        "Next →",
			"admin.audit.onlyof":                      "Only the events of %s",
			"admin.audit.by":                          "by %s",
			"admin.audit.reportedbadge":               "Reported",
			"admin.audit.nouser":                      "no user",
			"admin.audit.source.api":                  "API",
			"admin.audit.source.id":                   "hmid website",
			"admin.audit.source.backend":              "Admin console",
			"admin.audit.source.policies":             "Policies website",
			"admin.audit.source.chat_platform_bot":    "Chat bot",
			"admin.audit.source.stream_platform_bot":  "Stream bot",
			"admin.audit.reported.true":               "Reported only",
			"admin.audit.reported.false":              "Not reported",
			"admin.audit.sort.created_at":             "Time",
			"admin.audit.sort.event_type":             "Event",
			"admin.audit.sort.user_id":                "User id",
			"admin.audit.sort.status":                 "Result",
			"admin.audit.dir.desc":                    "Descending",
			"admin.audit.dir.asc":                     "Ascending",
			"admin.audit.bad.event_type":              "Choose an event from the list.",
			"admin.audit.bad.status":                  "Choose Succeeded or Failed.",
			"admin.audit.bad.source_service":          "Choose a source from the list.",
			"admin.audit.bad.start_date":              "Enter a date such as 2026-11-22.",
			"admin.audit.bad.end_date":                "Enter a date such as 2026-11-22, not before the start.",
			"admin.audit.bad.sort_field":              "Choose a sort from the list.",
			"admin.audit.bad.sort_direction":          "Choose ascending or descending.",
			"admin.audit.bad.is_reported":             "Choose reported or not reported.",
			"admin.audit.bad.report_status":           "Choose a status from the list.",
			"admin.audit.bad.report_resolution_notes": "The notes are too long.",
			"admin.reports.intro":                     "Users report events of their account they do not recognize. Pending reports come first. Set a status and write what you found: the user gets an email whenever the status or the notes change.",
			"admin.reports.show":                      "Show",
			"admin.reports.field.status":              "Status",
			"admin.reports.none":                      "No reports.",
			"admin.reports.by":                        "Reported by",
			"admin.reports.event":                     "Event",
			"admin.reports.reason":                    "Reason",
			"admin.reports.review":                    "Review",
			"admin.reports.reviewed":                  "Last reviewed %s by %s",
			"admin.reports.notes":                     "Notes to the user",
			"admin.reports.notes.help":                "Sent to the user by email with the status. Leave empty for none.",
			"admin.reports.save":                      "Save and notify the user",
			"admin.reports.readonly":                  "You can read the reports; reviewing them needs the audit:write permission.",
			"admin.reports.log":                       "The user's reported events in the log",
			"admin.audit.reviewed":                    "The review is saved. The reporting user is emailed about any change of the status or the notes.",
		},
		"de": {
			"title.admin.audit":                       "Audit-Protokoll",
			"title.admin.reports":                     "Gemeldete Ereignisse",
			"admin.audit.tabs":                        "Audit",
			"admin.audit.log":                         "Protokoll",
			"admin.audit.queue":                       "Meldungen",
			"admin.audit.pending":                     "%d offen",
			"admin.audit.intro":                       "Jedes Ereignis, das hmid und die Dienste darum aufgezeichnet haben. Filtern Sie nach Person, Ereignis, Ergebnis, Quelle, Ressource und Datum, sortieren Sie und laden Sie die gefilterten Ereignisse als CSV-Datei herunter.",
			"admin.audit.field.user":                  "Person",
			"admin.audit.help.user":                   "ID oder Anfang eines Benutzernamens oder einer E-Mail-Adresse (Groß- und Kleinschreibung egal).",
			"admin.audit.field.userid":                "Genaue Benutzer-ID",
			"admin.audit.field.source":                "Aufgezeichnet von",
			"admin.audit.field.from":                  "Von",
			"admin.audit.field.to":                    "Bis (einschließlich)",
			"admin.audit.field.reported":              "Gemeldet",
			"admin.audit.field.sort":                  "Sortieren nach",
			"admin.audit.field.dir":                   "Reihenfolge",
			"admin.audit.csv":                         "CSV herunterladen",
			"admin.audit.csv.help":                    "Die CSV-Datei enthält alle Ereignisse dieses Filters, nicht nur diese Seite.",
			"admin.audit.col.user":                    "Person",
			"admin.audit.col.resource":                "Ressource",
			"admin.audit.prev":                        "← Zurück",
			"admin.audit.next":                        "Weiter →",
			"admin.audit.onlyof":                      "Nur die Ereignisse von %s",
			"admin.audit.by":                          "durch %s",
			"admin.audit.reportedbadge":               "Gemeldet",
			"admin.audit.nouser":                      "keine Person",
			"admin.audit.source.api":                  "API",
			"admin.audit.source.id":                   "hmid-Website",
			"admin.audit.source.backend":              "Admin-Konsole",
			"admin.audit.source.policies":             "Richtlinien-Website",
			"admin.audit.source.chat_platform_bot":    "Chat-Bot",
			"admin.audit.source.stream_platform_bot":  "Stream-Bot",
			"admin.audit.reported.true":               "Nur gemeldete",
			"admin.audit.reported.false":              "Nicht gemeldete",
			"admin.audit.sort.created_at":             "Zeit",
			"admin.audit.sort.event_type":             "Ereignis",
			"admin.audit.sort.user_id":                "Benutzer-ID",
			"admin.audit.sort.status":                 "Ergebnis",
			"admin.audit.dir.desc":                    "Absteigend",
			"admin.audit.dir.asc":                     "Aufsteigend",
			"admin.audit.bad.event_type":              "Wählen Sie ein Ereignis aus der Liste.",
			"admin.audit.bad.status":                  "Wählen Sie „Erfolgreich“ oder „Fehlgeschlagen“.",
			"admin.audit.bad.source_service":          "Wählen Sie eine Quelle aus der Liste.",
			"admin.audit.bad.start_date":              "Geben Sie ein Datum wie 2026-11-22 ein.",
			"admin.audit.bad.end_date":                "Geben Sie ein Datum wie 2026-11-22 ein, nicht vor dem Beginn.",
			"admin.audit.bad.sort_field":              "Wählen Sie eine Sortierung aus der Liste.",
			"admin.audit.bad.sort_direction":          "Wählen Sie aufsteigend oder absteigend.",
			"admin.audit.bad.is_reported":             "Wählen Sie gemeldet oder nicht gemeldet.",
			"admin.audit.bad.report_status":           "Wählen Sie einen Status aus der Liste.",
			"admin.audit.bad.report_resolution_notes": "Die Anmerkungen sind zu lang.",
			"admin.reports.intro":                     "Personen melden Ereignisse ihres Kontos, die sie nicht kennen. Offene Meldungen stehen oben. Setzen Sie einen Status und schreiben Sie, was Sie herausgefunden haben: Die Person erhält eine E-Mail, sobald sich Status oder Anmerkungen ändern.",
			"admin.reports.show":                      "Anzeigen",
			"admin.reports.field.status":              "Status",
			"admin.reports.none":                      "Keine Meldungen.",
			"admin.reports.by":                        "Gemeldet von",
			"admin.reports.event":                     "Ereignis",
			"admin.reports.reason":                    "Grund",
			"admin.reports.review":                    "Prüfen",
			"admin.reports.reviewed":                  "Zuletzt geprüft %s von %s",
			"admin.reports.notes":                     "Anmerkungen an die Person",
			"admin.reports.notes.help":                "Geht mit dem Status per E-Mail an die Person. Leer lassen für keine.",
			"admin.reports.save":                      "Speichern und Person benachrichtigen",
			"admin.reports.readonly":                  "Sie können die Meldungen lesen; zum Prüfen brauchen Sie die Berechtigung audit:write.",
			"admin.reports.log":                       "Die gemeldeten Ereignisse der Person im Protokoll",
			"admin.audit.reviewed":                    "Die Prüfung ist gespeichert. Die meldende Person erhält eine E-Mail über jede Änderung von Status oder Anmerkungen.",
		},
	})
}
