package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clientinfo"
	"hmid/internal/httpx"
)

// ActivityPages is /account/activity: the user's own audit log with the
// filters and paging of GET /v1/users/me/audit, and "this wasn't me"
// reports as POST /v1/users/me/audit/{event_id}/report files them. It calls
// audit.Service, as those routes do.
type ActivityPages struct {
	H     *Handler
	Audit *audit.Service
}

// activityParams are the query parameters of the listing (spec 2, Audit
// log) the page reads and keeps in its links and forms.
var activityParams = []string{"event_type", "resource_type", "status", "page", "limit"}

// activityLimits are the page sizes offered; the listing accepts 1 to 100.
var activityLimits = []int{10, 20, 50, 100}

// Choice is one choice of a select.
type Choice struct {
	Value, Label string
	Selected     bool
}

// activityHidden is a hidden form field.
type activityHidden struct{ Name, Value string }

// activityRow is one event as the page shows it.
type activityRow struct {
	audit.Entry
	What   string // the event in words
	Client string // browser and system from the user agent
	Place  string // "City, Country" when geolocated
	Source string // the service that recorded it, in words
	// ByOther: someone else acted on the account (an administrator).
	ByOther bool
	Report  *audit.Report
}

// reportRow is one of the user's reports with the event it is about.
type reportRow struct {
	audit.Report
	What       string // the reported event in words ("" when it is gone)
	EventAt    any    // when the event happened (nil when it is gone)
	ReasonText string
}

// activityView is the page's data.
type activityView struct {
	Query       url.Values       // the filter as given, to refill the form
	Active      int              // how many filters are set (the form is open then)
	Hidden      []activityHidden // the filter as hidden fields of the report forms
	FieldErrors map[string]string
	EventType   SelectField
	Status      SelectField
	Resource    TextField
	Limit       SelectField
	Reasons     []Choice
	Events      []activityRow
	Pager
	Reports []reportRow
	// Open is the event whose report form is shown again with ReportErrors
	// and the text the user sent.
	Open         string
	ReportErrors map[string]string
	ReportInput  audit.ReportInput
	MaxReport    int
}

// refused is a report the service refused, shown again with its errors.
type refused struct {
	EventID string
	Errors  map[string]string // per field of the report form
	Input   audit.ReportInput
	Page    string // an error of the whole request
}

// List is GET /account/activity.
func (ap *ActivityPages) List(w http.ResponseWriter, r *http.Request) {
	ap.render(w, r, http.StatusOK, r.URL.Query(), refused{})
}

// render shows the events matching q, and the refused report rf if any.
func (ap *ActivityPages) render(w http.ResponseWriter, r *http.Request, status int, q url.Values, rf refused) {
	ctx := r.Context()
	p := authn.From(ctx)
	t := Translator(ap.H.UserLanguage(r, p))
	v := activityView{FieldErrors: map[string]string{}, Open: rf.EventID, ReportErrors: rf.Errors,
		ReportInput: rf.Input, MaxReport: audit.MaxReportText}
	v.Query, v.Active = FilterQuery(q, activityParams)
	view := ConsoleView{Title: "title.activity", Section: "activity", Error: rf.Page, Data: &v}
	f, events, total, err := ap.Audit.Mine(ctx, p, v.Query)
	status, view.Error = ap.H.Refusal(w, r, status, view.Error, err, v.FieldErrors, "activity.bad.")
	v.fillChoices(t, f)
	if err == nil {
		reports, err := ap.Audit.MyReports(ctx, p)
		if err != nil {
			ap.H.Fail(w, r, err)
			return
		}
		reported, err := ap.Audit.ReportedEvents(ctx, p)
		if err != nil {
			ap.H.Fail(w, r, err)
			return
		}
		byEvent := map[string]*audit.Report{}
		for i := range reports {
			byEvent[reports[i].AuditEventID] = &reports[i]
			row := reportRow{Report: reports[i], ReasonText: t("activity.reason." + reports[i].Reason)}
			if e, ok := reported[reports[i].AuditEventID]; ok {
				row.What, row.EventAt = EventText(t, e.EventType), e.CreatedAt
			}
			v.Reports = append(v.Reports, row)
		}
		for _, e := range events {
			row := activityRow{Entry: e, What: EventText(t, e.EventType), Report: byEvent[e.ID],
				Source: t("activity.source." + e.SourceService)}
			if e.UserAgent != nil {
				c := clientinfo.Parse(*e.UserAgent)
				row.Client = JoinNonEmpty(" · ", c.Browser, c.OS)
			}
			row.Place = JoinNonEmpty(", ", Deref(e.City), Deref(e.CountryName))
			row.ByOther = e.ActorID != nil && *e.ActorID != p.UserID
			v.Events = append(v.Events, row)
		}
		v.Pager = NewPager(f.Page, total, len(events), "/account/activity", v.Query)
	}
	ap.H.Console(w, r, status, "account_activity", view)
}

// fillChoices builds the select options of the filter and report forms
// from the one list of each (audit.EventTypes, audit.ReportReasons), with
// the filter f selected.
func (v *activityView) fillChoices(t func(string) string, f audit.Filter) {
	v.EventType = SelectField{ID: "f-event", Name: "event_type", Label: t("activity.field.event"), All: t("activity.all"),
		Options: EventTypeChoices(t, v.Query.Get("event_type")), Error: v.FieldErrors["event_type"]}
	v.Status = SelectField{ID: "f-status", Name: "status", Label: t("activity.field.status"), All: t("activity.all"),
		Options: Choices(t, "activity.status.", []string{audit.StatusSuccess, audit.StatusFailure}, v.Query.Get("status")),
		Error:   v.FieldErrors["status"]}
	v.Resource = ResourceField(t, v.Query)
	v.Limit = SelectField{ID: "f-limit", Name: "limit", Label: t("activity.field.limit"), Options: LimitChoices(f.Page.Limit)}
	for _, reason := range audit.ReportReasons {
		v.Reasons = append(v.Reasons, Choice{Value: reason, Label: t("activity.reason." + reason), Selected: reason == v.ReportInput.Reason})
	}
	for _, k := range activityParams {
		if s := v.Query.Get(k); s != "" {
			v.Hidden = append(v.Hidden, activityHidden{Name: k, Value: s})
		}
	}
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
	link := func(n int) string {
		c := url.Values{}
		for k, vals := range q {
			c[k] = vals
		}
		c.Set("page", strconv.Itoa(n))
		return path + "?" + c.Encode()
	}
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

// Report is POST /account/activity/{event_id}/report: "this wasn't me".
func (ap *ActivityPages) Report(w http.ResponseWriter, r *http.Request) {
	p := ap.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	// The form carries the filter of the page it is on, so the answer
	// shows that page again.
	back := url.Values{}
	for _, k := range activityParams {
		if s := r.PostForm.Get(k); s != "" {
			back.Set(k, s)
		}
	}
	eventID := chi.URLParam(r, "event_id")
	in := audit.ReportInput{Reason: r.PostForm.Get("reason"), Description: r.PostForm.Get("description")}
	_, err := ap.Audit.Report(r.Context(), p, eventID, in)
	if err != nil {
		t := Translator(ap.H.UserLanguage(r, p))
		var fe *audit.FieldError
		switch {
		case errors.As(err, &fe):
			ap.render(w, r, http.StatusBadRequest, back, refused{EventID: eventID, Input: in,
				Errors: map[string]string{fe.Field: ActivityFieldError(t, fe)}})
		case apperr.KindOf(err) == apperr.Conflict:
			ap.render(w, r, http.StatusConflict, back, refused{Page: t("activity.already")})
		default:
			ap.render(w, r, ap.H.Status(w, err), back, refused{Page: ap.H.ErrorText(r, err)})
		}
		return
	}
	to := "/account/activity"
	if len(back) > 0 {
		to += "?" + back.Encode()
	}
	ap.H.Done(w, r, to, "activity.reported")
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

// ActivityFieldError is the text of a refused field of the activity page.
func ActivityFieldError(t func(string) string, fe *audit.FieldError) string {
	return FieldErrorText(t, "activity.bad.", fe)
}

// FieldErrorText is the text of a refused field: the page's own sentence
// (the message prefix+field) for the fields it knows, else the service's
// message.
func FieldErrorText(t func(string) string, prefix string, fe *audit.FieldError) string {
	key := prefix + fe.Field
	if _, ok := messages["en"][key]; ok {
		return t(key)
	}
	return t("err.invalid") + " " + fe.Err.Message
}

// EventText is an event type in words; a type without a text (none in
// audit.EventTypes, a test checks it) shows as it is stored.
func EventText(t func(string) string, eventType string) string {
	key := "activity.event." + eventType
	if _, ok := messages["en"][key]; !ok {
		return eventType
	}
	return t(key)
}

// Deref is the string *s points to, "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"title.activity":                              "Account activity",
			"activity.intro":                              "Everything that happened on your account, newest first. If something was not you, report it, then change your password and sign out the sessions you do not know.",
			"activity.filter":                             "Filter",
			"activity.active":                             "%d active",
			"activity.field.event":                        "Event",
			"activity.field.status":                       "Result",
			"activity.field.resource":                     "Resource type",
			"activity.help.resource":                      "For example session or api_key.",
			"activity.field.limit":                        "Per page",
			"activity.all":                                "All",
			"activity.apply":                              "Show",
			"activity.clear":                              "Clear filter",
			"activity.count":                              "Events %d–%d of %d",
			"activity.page":                               "Page %d of %d",
			"activity.pages":                              "Pages",
			"activity.newer":                              "← Newer",
			"activity.older":                              "Older →",
			"activity.none":                               "No events match this filter.",
			"activity.past":                               "This page is past the end of the list.",
			"activity.first":                              "Go to the first page",
			"activity.col.when":                           "When",
			"activity.col.what":                           "What happened",
			"activity.col.where":                          "Device and place",
			"activity.col.result":                         "Result",
			"activity.via":                                "via %s",
			"activity.by":                                 "done by another account",
			"activity.status.success":                     "Succeeded",
			"activity.status.failure":                     "Failed",
			"activity.notme":                              "This wasn't me",
			"activity.report.intro":                       "Tell us what is wrong with this event. An administrator reviews every report, and you get an email when its status changes.",
			"activity.field.reason":                       "Reason",
			"activity.field.desc":                         "What do you know about it? (optional)",
			"activity.report.submit":                      "Report event",
			"activity.reported":                           "Thank you. The event is reported and will be reviewed.",
			"activity.already":                            "You have already reported this event.",
			"activity.reportstatus":                       "Report: %s",
			"activity.reports":                            "Your reports",
			"activity.col.event":                          "Event",
			"activity.col.reason":                         "Reason",
			"activity.col.reportstatus":                   "Status",
			"activity.col.reported":                       "Reported",
			"activity.col.notes":                          "Reviewer's note",
			"activity.gone":                               "Event no longer stored",
			"activity.bad.event_type":                     "Choose an event from the list.",
			"activity.bad.status":                         "Choose Succeeded or Failed.",
			"activity.bad.reason":                         "Choose a reason.",
			"activity.bad.description":                    "The description is too long.",
			"activity.reason.not_me":                      "This wasn't me",
			"activity.reason.suspicious":                  "It looks suspicious",
			"activity.reason.unknown_device":              "I don't know this device",
			"activity.reason.unknown_location":            "I don't know this place",
			"activity.reason.other":                       "Something else",
			"activity.rstatus.pending":                    "Waiting for review",
			"activity.rstatus.reviewed":                   "Reviewed",
			"activity.rstatus.resolved":                   "Resolved",
			"activity.rstatus.dismissed":                  "Dismissed",
			"activity.source.api":                         "the API",
			"activity.source.id":                          "the hmid website",
			"activity.source.backend":                     "the backend dashboard",
			"activity.source.policies":                    "the policies website",
			"activity.source.chat_platform_bot":           "the chat bot",
			"activity.source.stream_platform_bot":         "the stream bot",
			"activity.event.login":                        "Signed in",
			"activity.event.login_failed":                 "Sign-in attempt failed",
			"activity.event.logout":                       "Signed out",
			"activity.event.session_created":              "New session started",
			"activity.event.session_revoked":              "Session ended",
			"activity.event.2fa_enabled":                  "Two-factor authentication turned on",
			"activity.event.2fa_disabled":                 "Two-factor authentication turned off",
			"activity.event.2fa_verified":                 "Second factor confirmed",
			"activity.event.2fa_backup_codes_regenerated": "New backup codes created",
			"activity.event.password_changed":             "Password changed",
			"activity.event.password_reset_requested":     "Password reset requested",
			"activity.event.user_created":                 "Account created",
			"activity.event.user_updated":                 "Account details changed",
			"activity.event.user_deleted":                 "Account deleted",
			"activity.event.account_linked":               "Login account linked",
			"activity.event.account_unlinked":             "Login account unlinked",
			"activity.event.account_reconnected":          "Login account reconnected",
			"activity.event.data_exported":                "Personal data downloaded",
			"activity.event.client_created":               "OAuth app registered",
			"activity.event.client_updated":               "OAuth app changed",
			"activity.event.client_secret_regenerated":    "OAuth app secret renewed",
			"activity.event.client_deleted":               "OAuth app deleted",
			"activity.event.consent_granted":              "Access granted to an app",
			"activity.event.consent_revoked":              "Access of an app revoked",
			"activity.event.refresh_token_reused":         "An app's used refresh token presented again",
			"activity.event.api_key_created":              "API key created",
			"activity.event.api_key_revoked":              "API key revoked",
			"activity.event.bot_command_executed":         "Bot command run",
			"activity.event.bot_guild_configured":         "Bot server settings changed",
			"activity.event.user_banned":                  "Account suspended",
			"activity.event.user_unbanned":                "Suspension lifted",
			"activity.event.platform_updated":             "Sign-in platform settings changed",
		},
		"de": {
			"title.activity":                              "Kontoaktivität",
			"activity.intro":                              "Alles, was in Ihrem Konto geschehen ist, das Neueste zuerst. Wenn etwas nicht von Ihnen war, melden Sie es, ändern Sie dann Ihr Passwort und beenden Sie Sitzungen, die Sie nicht kennen.",
			"activity.filter":                             "Filter",
			"activity.active":                             "%d aktiv",
			"activity.field.event":                        "Ereignis",
			"activity.field.status":                       "Ergebnis",
			"activity.field.resource":                     "Ressourcentyp",
			"activity.help.resource":                      "Zum Beispiel session oder api_key.",
			"activity.field.limit":                        "Pro Seite",
			"activity.all":                                "Alle",
			"activity.apply":                              "Anzeigen",
			"activity.clear":                              "Filter zurücksetzen",
			"activity.count":                              "Ereignisse %d–%d von %d",
			"activity.page":                               "Seite %d von %d",
			"activity.pages":                              "Seiten",
			"activity.newer":                              "← Neuere",
			"activity.older":                              "Ältere →",
			"activity.none":                               "Keine Ereignisse passen zu diesem Filter.",
			"activity.past":                               "Diese Seite liegt hinter dem Ende der Liste.",
			"activity.first":                              "Zur ersten Seite",
			"activity.col.when":                           "Wann",
			"activity.col.what":                           "Was geschah",
			"activity.col.where":                          "Gerät und Ort",
			"activity.col.result":                         "Ergebnis",
			"activity.via":                                "über %s",
			"activity.by":                                 "von einem anderen Konto ausgeführt",
			"activity.status.success":                     "Erfolgreich",
			"activity.status.failure":                     "Fehlgeschlagen",
			"activity.notme":                              "Das war ich nicht",
			"activity.report.intro":                       "Sagen Sie uns, was an diesem Ereignis nicht stimmt. Eine Administratorin oder ein Administrator prüft jede Meldung, und Sie erhalten eine E-Mail, wenn sich ihr Status ändert.",
			"activity.field.reason":                       "Grund",
			"activity.field.desc":                         "Was wissen Sie darüber? (optional)",
			"activity.report.submit":                      "Ereignis melden",
			"activity.reported":                           "Danke. Das Ereignis ist gemeldet und wird geprüft.",
			"activity.already":                            "Sie haben dieses Ereignis bereits gemeldet.",
			"activity.reportstatus":                       "Meldung: %s",
			"activity.reports":                            "Ihre Meldungen",
			"activity.col.event":                          "Ereignis",
			"activity.col.reason":                         "Grund",
			"activity.col.reportstatus":                   "Status",
			"activity.col.reported":                       "Gemeldet",
			"activity.col.notes":                          "Anmerkung der Prüfung",
			"activity.gone":                               "Ereignis nicht mehr gespeichert",
			"activity.bad.event_type":                     "Wählen Sie ein Ereignis aus der Liste.",
			"activity.bad.status":                         "Wählen Sie „Erfolgreich“ oder „Fehlgeschlagen“.",
			"activity.bad.reason":                         "Wählen Sie einen Grund.",
			"activity.bad.description":                    "Die Beschreibung ist zu lang.",
			"activity.reason.not_me":                      "Das war ich nicht",
			"activity.reason.suspicious":                  "Es sieht verdächtig aus",
			"activity.reason.unknown_device":              "Ich kenne dieses Gerät nicht",
			"activity.reason.unknown_location":            "Ich kenne diesen Ort nicht",
			"activity.reason.other":                       "Etwas anderes",
			"activity.rstatus.pending":                    "Wartet auf Prüfung",
			"activity.rstatus.reviewed":                   "Geprüft",
			"activity.rstatus.resolved":                   "Erledigt",
			"activity.rstatus.dismissed":                  "Abgewiesen",
			"activity.source.api":                         "die API",
			"activity.source.id":                          "die hmid-Website",
			"activity.source.backend":                     "das Backend-Dashboard",
			"activity.source.policies":                    "die Richtlinien-Website",
			"activity.source.chat_platform_bot":           "den Chat-Bot",
			"activity.source.stream_platform_bot":         "den Stream-Bot",
			"activity.event.login":                        "Angemeldet",
			"activity.event.login_failed":                 "Anmeldeversuch fehlgeschlagen",
			"activity.event.logout":                       "Abgemeldet",
			"activity.event.session_created":              "Neue Sitzung begonnen",
			"activity.event.session_revoked":              "Sitzung beendet",
			"activity.event.2fa_enabled":                  "Zwei-Faktor-Authentifizierung eingeschaltet",
			"activity.event.2fa_disabled":                 "Zwei-Faktor-Authentifizierung ausgeschaltet",
			"activity.event.2fa_verified":                 "Zweiter Faktor bestätigt",
			"activity.event.2fa_backup_codes_regenerated": "Neue Backup-Codes erstellt",
			"activity.event.password_changed":             "Passwort geändert",
			"activity.event.password_reset_requested":     "Zurücksetzen des Passworts angefordert",
			"activity.event.user_created":                 "Konto erstellt",
			"activity.event.user_updated":                 "Kontodaten geändert",
			"activity.event.user_deleted":                 "Konto gelöscht",
			"activity.event.account_linked":               "Anmeldekonto verknüpft",
			"activity.event.account_unlinked":             "Anmeldekonto getrennt",
			"activity.event.account_reconnected":          "Anmeldekonto erneut verbunden",
			"activity.event.data_exported":                "Persönliche Daten heruntergeladen",
			"activity.event.client_created":               "OAuth-App registriert",
			"activity.event.client_updated":               "OAuth-App geändert",
			"activity.event.client_secret_regenerated":    "Geheimnis einer OAuth-App erneuert",
			"activity.event.client_deleted":               "OAuth-App gelöscht",
			"activity.event.consent_granted":              "Einer App Zugriff gewährt",
			"activity.event.consent_revoked":              "Zugriff einer App widerrufen",
			"activity.event.refresh_token_reused":         "Verbrauchtes Refresh-Token einer App erneut vorgelegt",
			"activity.event.api_key_created":              "API-Schlüssel erstellt",
			"activity.event.api_key_revoked":              "API-Schlüssel widerrufen",
			"activity.event.bot_command_executed":         "Bot-Befehl ausgeführt",
			"activity.event.bot_guild_configured":         "Bot-Servereinstellungen geändert",
			"activity.event.user_banned":                  "Konto gesperrt",
			"activity.event.user_unbanned":                "Sperre aufgehoben",
			"activity.event.platform_updated":             "Einstellungen einer Anmeldeplattform geändert",
		},
	})
}
