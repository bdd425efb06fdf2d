package account

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clientinfo"
	"hmid/internal/web"
)

// ActivityPages is /account/activity: the user's own audit log with the
// filters and paging of GET /v1/users/me/audit, and "this wasn't me"
// reports as POST /v1/users/me/audit/{event_id}/report files them. It calls
// audit.Service, as those routes do.
type ActivityPages struct {
	H     *web.Handler
	Audit *audit.Service
}

// activityParams are the query parameters of the listing (spec 2, Audit
// log) the page reads and keeps in its links and forms.
var activityParams = []string{"event_type", "resource_type", "status", "page", "limit"}

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
	EventType   web.SelectField
	Status      web.SelectField
	Resource    web.TextField
	Limit       web.SelectField
	Reasons     []web.Choice
	Events      []activityRow
	web.Pager
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
	t := web.Translator(ap.H.UserLanguage(r, p))
	v := activityView{FieldErrors: map[string]string{}, Open: rf.EventID, ReportErrors: rf.Errors,
		ReportInput: rf.Input, MaxReport: audit.MaxReportText}
	v.Query, v.Active = web.FilterQuery(q, activityParams)
	view := web.ConsoleView{Title: "title.activity", Section: "activity", Error: rf.Page, Data: &v}
	f, events, total, err := ap.Audit.Mine(ctx, p, v.Query)
	status, view.Error = ap.H.Refusal(w, r, status, view.Error, err, v.FieldErrors, "activity.bad.")
	v.fillChoices(t, f)
	if err == nil {
		byEvent, err := ap.reports(r, t, &v)
		if err != nil {
			ap.H.Fail(w, r, err)
			return
		}
		for _, e := range events {
			row := activityRow{Entry: e, What: web.EventTitle(t, e.EventType, e.Status), Report: byEvent[e.ID],
				Source: t("activity.source." + e.SourceService)}
			if e.UserAgent != nil {
				c := clientinfo.Parse(*e.UserAgent)
				row.Client = web.JoinNonEmpty(" · ", c.Browser, c.OS)
			}
			row.Place = web.JoinNonEmpty(", ", web.Deref(e.City), web.Deref(e.CountryName))
			row.ByOther = e.ActorID != nil && *e.ActorID != p.UserID
			v.Events = append(v.Events, row)
		}
		v.Pager = web.NewPager(f.Page, total, len(events), "/account/activity", v.Query)
	}
	ap.H.Console(w, r, status, "account_activity", view)
}

// reports fills v with the user's reports and returns them by the id of
// the event each is about.
func (ap *ActivityPages) reports(r *http.Request, t func(string) string, v *activityView) (map[string]*audit.Report, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	reports, err := ap.Audit.MyReports(ctx, p)
	if err != nil {
		return nil, err
	}
	reported, err := ap.Audit.ReportedEvents(ctx, p)
	if err != nil {
		return nil, err
	}
	byEvent := map[string]*audit.Report{}
	for i := range reports {
		byEvent[reports[i].AuditEventID] = &reports[i]
		row := reportRow{Report: reports[i], ReasonText: t("activity.reason." + reports[i].Reason)}
		if e, ok := reported[reports[i].AuditEventID]; ok {
			row.What, row.EventAt = web.EventTitle(t, e.EventType, e.Status), e.CreatedAt
		}
		v.Reports = append(v.Reports, row)
	}
	return byEvent, nil
}

// fillChoices builds the select options of the filter and report forms
// from the one list of each (audit.EventTypes, audit.ReportReasons), with
// the filter f selected.
func (v *activityView) fillChoices(t func(string) string, f audit.Filter) {
	v.EventType, v.Status = web.EventFields(t, v.Query, v.FieldErrors)
	v.Resource = web.ResourceField(t, v.Query)
	v.Limit = web.SelectField{ID: "f-limit", Name: "limit", Label: t("activity.field.limit"), Options: web.LimitChoices(f.Page.Limit)}
	for _, reason := range audit.ReportReasons {
		v.Reasons = append(v.Reasons, web.Choice{Value: reason, Label: t("activity.reason." + reason), Selected: reason == v.ReportInput.Reason})
	}
	for _, k := range activityParams {
		if s := v.Query.Get(k); s != "" {
			v.Hidden = append(v.Hidden, activityHidden{Name: k, Value: s})
		}
	}
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
		t := web.Translator(ap.H.UserLanguage(r, p))
		var fe *audit.FieldError
		switch {
		case errors.As(err, &fe):
			ap.render(w, r, http.StatusBadRequest, back, refused{EventID: eventID, Input: in,
				Errors: map[string]string{fe.Field: web.ActivityFieldError(t, fe)}})
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

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.activity":            "Account activity",
			"activity.intro":            "Everything that happened on your account, newest first. If something was not you, report it, then change your password and sign out the sessions you do not know.",
			"activity.field.resource":   "Resource type",
			"activity.help.resource":    "For example session or api_key.",
			"activity.by":               "done by another account",
			"activity.notme":            "This wasn't me",
			"activity.report.intro":     "Tell us what is wrong with this event. An administrator reviews every report, and you get an email when its status changes.",
			"activity.field.reason":     "Reason",
			"activity.field.desc":       "What do you know about it? (optional)",
			"activity.report.submit":    "Report event",
			"activity.reported":         "Thank you. The event is reported and will be reviewed.",
			"activity.already":          "You have already reported this event.",
			"activity.reportstatus":     "Report: %s",
			"activity.reports":          "Your reports",
			"activity.col.event":        "Event",
			"activity.col.reason":       "Reason",
			"activity.col.reportstatus": "Status",
		},
		"de": {
			"title.activity":            "Kontoaktivität",
			"activity.intro":            "Alles, was in Ihrem Konto geschehen ist, das Neueste zuerst. Wenn etwas nicht von Ihnen war, melden Sie es, ändern Sie dann Ihr Passwort und beenden Sie Sitzungen, die Sie nicht kennen.",
			"activity.field.resource":   "Ressourcentyp",
			"activity.help.resource":    "Zum Beispiel session oder api_key.",
			"activity.by":               "von einem anderen Konto ausgeführt",
			"activity.notme":            "Das war ich nicht",
			"activity.report.intro":     "Sagen Sie uns, was an diesem Ereignis nicht stimmt. Eine Administratorin oder ein Administrator prüft jede Meldung, und Sie erhalten eine E-Mail, wenn sich ihr Status ändert.",
			"activity.field.reason":     "Grund",
			"activity.field.desc":       "Was wissen Sie darüber? (optional)",
			"activity.report.submit":    "Ereignis melden",
			"activity.reported":         "Danke. Das Ereignis ist gemeldet und wird geprüft.",
			"activity.already":          "Sie haben dieses Ereignis bereits gemeldet.",
			"activity.reportstatus":     "Meldung: %s",
			"activity.reports":          "Ihre Meldungen",
			"activity.col.event":        "Ereignis",
			"activity.col.reason":       "Grund",
			"activity.col.reportstatus": "Status",
		},
	})
}
