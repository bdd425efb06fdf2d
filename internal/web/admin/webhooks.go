package admin

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/web"
	"hmid/internal/webhooks"
)

// WebhookPages is /admin/webhooks: the webhook endpoints, each with its
// recent deliveries. It calls webhooks.Service as the routes under
// /v1/webhooks do (webhooks:read to look, webhooks:write to change), so
// every change is audited there.
type WebhookPages struct {
	H        *web.Handler
	Webhooks *webhooks.Service
}

// webhookForm is the endpoint form as shown: the stored or posted values.
type webhookForm struct {
	URL, Description string
	Types            map[string]bool
}

// webhookFields is what the endpoint form's fields show: the values, the
// error at its field, and the event types to tick.
type webhookFields struct {
	F     webhookForm
	Err   web.FormError
	Types []string
}

// webhooksView is the list page's data.
type webhooksView struct {
	Endpoints []webhooks.Endpoint
	Fields    webhookFields
	CanWrite  bool
}

// webhookView is one endpoint's page.
type webhookView struct {
	Endpoint   webhooks.Endpoint
	Deliveries []webhooks.Delivery
	Fields     webhookFields
	Err        web.FormError
	// Secret is the signing secret right after creation or rotation, shown once.
	Secret   string
	CanWrite bool
}

// recentDeliveries is how many deliveries an endpoint's page lists.
const recentDeliveries = 25

// List is GET /admin/webhooks.
func (wp *WebhookPages) List(w http.ResponseWriter, r *http.Request) {
	wp.renderList(w, r, http.StatusOK, "", webhookForm{}, web.FormError{})
}

func (wp *WebhookPages) renderList(w http.ResponseWriter, r *http.Request, status int, errText string, form webhookForm, fe web.FormError) {
	list, _, err := wp.Webhooks.List(r.Context(), httpx.Page{Page: 1, Limit: 100})
	if err != nil {
		wp.H.Fail(w, r, err)
		return
	}
	v := webhooksView{Endpoints: list, Fields: webhookFields{F: form, Err: fe, Types: webhooks.EventTypes()},
		CanWrite: authn.From(r.Context()).Can("webhooks:write")}
	wp.H.Console(w, r, status, "admin_webhooks", web.ConsoleView{Title: "admin.webhooks.title", Section: "webhooks", Error: errText, Data: v})
}

// formInput reads the endpoint form: URL, description and the ticked
// event types.
func formInput(r *http.Request) (webhooks.Input, webhookForm) {
	f := webhookForm{URL: strings.TrimSpace(r.PostFormValue("url")), Description: r.PostFormValue("description"), Types: map[string]bool{}}
	types := r.PostForm["event_types"]
	for _, t := range types {
		f.Types[t] = true
	}
	return webhooks.Input{
		URL:         httpx.Opt[string]{Set: true, Value: f.URL},
		Description: httpx.Opt[string]{Set: true, Value: f.Description},
		EventTypes:  httpx.Opt[[]string]{Set: true, Value: types},
	}, f
}

// event is the audit detail of the page's request.
func (wp *WebhookPages) event(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: adminSource})
}

// Create is POST /admin/webhooks (POST /v1/webhooks): the new endpoint's
// page answers, with its secret shown this once.
func (wp *WebhookPages) Create(w http.ResponseWriter, r *http.Request) {
	var e webhooks.Endpoint
	wp.H.Act(w, r, web.Action{
		Form: "create",
		Call: func(p *authn.Principal) (string, error) {
			in, _ := formInput(r)
			var err error
			e, err = wp.Webhooks.Create(r.Context(), p, wp.event(r), in)
			return "", err
		},
		Answer: func() { wp.renderOne(w, r, http.StatusCreated, e.ID, "", e.Secret, nil, web.FormError{}) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := wp.H.FormRefusal(w, r, err, "admin.webhooks.fixfield")
			_, form := formInput(r)
			wp.renderList(w, r, status, text, form, fe)
		},
	})
}

// Show is GET /admin/webhooks/{id}.
func (wp *WebhookPages) Show(w http.ResponseWriter, r *http.Request) {
	wp.renderOne(w, r, http.StatusOK, chi.URLParam(r, "id"), "", "", nil, web.FormError{})
}

// renderOne draws an endpoint's page; form, when set, is a refused edit.
func (wp *WebhookPages) renderOne(w http.ResponseWriter, r *http.Request, status int, id, errText, secret string, form *webhookForm, fe web.FormError) {
	wp.H.Show(w, r, status, "admin_webhook", web.ConsoleView{Title: "admin.webhook.title", Section: "webhooks", Error: errText},
		func() (any, error) { return wp.view(r, id, secret, form, fe) })
}

// view is the endpoint id with its recent deliveries; form, when set, is
// a refused edit with its error fe.
func (wp *WebhookPages) view(r *http.Request, id, secret string, form *webhookForm, fe web.FormError) (webhookView, error) {
	ctx := r.Context()
	e, err := wp.Webhooks.Get(ctx, id)
	if err != nil {
		return webhookView{}, err
	}
	ds, _, err := wp.Webhooks.Deliveries(ctx, id, httpx.Page{Page: 1, Limit: recentDeliveries})
	if err != nil {
		return webhookView{}, err
	}
	v := webhookView{Endpoint: e, Deliveries: ds, Err: fe, Secret: secret, CanWrite: authn.From(ctx).Can("webhooks:write"),
		Fields: webhookFields{Err: fe, Types: webhooks.EventTypes()}}
	if form != nil {
		v.Fields.F = *form
	} else {
		v.Fields.F = webhookForm{URL: e.URL, Description: e.Description, Types: map[string]bool{}}
		for _, t := range e.EventTypes {
			v.Fields.F.Types[t] = true
		}
	}
	return v, nil
}

// act runs a post on an endpoint's page: call, then back to the page with
// the flash done; a refusal draws the page with the error at its field.
func (wp *WebhookPages) act(w http.ResponseWriter, r *http.Request, confirm, done string, call func(p *authn.Principal, id string) error) {
	id := chi.URLParam(r, "id")
	a := web.Action{
		Form: "endpoint",
		Call: func(p *authn.Principal) (string, error) { return done, call(p, id) },
		To:   "/admin/webhooks/" + id,
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := wp.H.FormRefusal(w, r, err, "admin.webhooks.fixfield")
			var form *webhookForm
			if r.PostFormValue("url") != "" {
				_, f := formInput(r)
				form = &f
			}
			wp.renderOne(w, r, status, id, text, "", form, fe)
		},
	}
	if confirm != "" {
		a.Confirm, a.Unconfirmed = confirm, "admin.webhooks.confirm.missing"
	}
	wp.H.Act(w, r, a)
}

// Update is POST /admin/webhooks/{id} (PATCH /v1/webhooks/{id}): URL,
// description, event types.
func (wp *WebhookPages) Update(w http.ResponseWriter, r *http.Request) {
	wp.act(w, r, "", "admin.webhooks.saved", func(p *authn.Principal, id string) error {
		in, _ := formInput(r)
		_, err := wp.Webhooks.Update(r.Context(), p, wp.event(r), id, in)
		return err
	})
}

// SetEnabled is POST /admin/webhooks/{id}/enabled with enabled=yes or no
// (PATCH /v1/webhooks/{id} {enabled}).
func (wp *WebhookPages) SetEnabled(w http.ResponseWriter, r *http.Request) {
	on := r.PostFormValue("enabled") == "yes"
	done := "admin.webhooks.disabled"
	if on {
		done = "admin.webhooks.enabled"
	}
	wp.act(w, r, "", done, func(p *authn.Principal, id string) error {
		_, err := wp.Webhooks.Update(r.Context(), p, wp.event(r), id, webhooks.Input{Enabled: httpx.Opt[bool]{Set: true, Value: on}})
		return err
	})
}

// Rotate is POST /admin/webhooks/{id}/rotate (POST /v1/webhooks/{id}/rotate):
// the page answers with the new secret shown this once.
func (wp *WebhookPages) Rotate(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var e webhooks.Endpoint
	wp.H.Act(w, r, web.Action{
		Form: "rotate", Confirm: "confirm_rotate", Unconfirmed: "admin.webhooks.confirm.missing",
		Call: func(p *authn.Principal) (string, error) {
			var err error
			e, err = wp.Webhooks.Rotate(r.Context(), p, wp.event(r), id)
			return "", err
		},
		Answer: func() { wp.renderOne(w, r, http.StatusOK, id, "", e.Secret, nil, web.FormError{}) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := wp.H.FormRefusal(w, r, err, "admin.webhooks.fixfield")
			wp.renderOne(w, r, status, id, text, "", nil, fe)
		},
	})
}

// Delete is POST /admin/webhooks/{id}/delete (DELETE /v1/webhooks/{id}).
func (wp *WebhookPages) Delete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	wp.H.Act(w, r, web.Action{
		Form: "delete", Confirm: "confirm_delete", Unconfirmed: "admin.webhooks.confirm.missing",
		Call: func(p *authn.Principal) (string, error) {
			return "admin.webhooks.deleted", wp.Webhooks.Delete(r.Context(), p, wp.event(r), id)
		},
		To: "/admin/webhooks",
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := wp.H.FormRefusal(w, r, err, "admin.webhooks.fixfield")
			wp.renderOne(w, r, status, id, text, "", nil, fe)
		},
	})
}

// Test is POST /admin/webhooks/{id}/test (POST /v1/webhooks/{id}/test).
func (wp *WebhookPages) Test(w http.ResponseWriter, r *http.Request) {
	wp.act(w, r, "", "admin.webhooks.tested", func(_ *authn.Principal, id string) error {
		_, err := wp.Webhooks.Test(r.Context(), id)
		return err
	})
}

// Resend is POST /admin/webhooks/{id}/deliveries/{delivery_id}/resend.
func (wp *WebhookPages) Resend(w http.ResponseWriter, r *http.Request) {
	wp.act(w, r, "", "admin.webhooks.resent", func(_ *authn.Principal, id string) error {
		_, err := wp.Webhooks.Resend(r.Context(), id, chi.URLParam(r, "delivery_id"))
		return err
	})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.nav.webhooks":              "Webhooks",
			"admin.webhooks.title":            "Webhooks",
			"admin.webhook.title":             "Webhook endpoint",
			"admin.webhooks.list":             "Endpoints",
			"admin.webhooks.intro":            "Other systems learn what happens in hmid here: each endpoint gets the audit events it subscribes to, POSTed and signed following the Standard Webhooks specification.",
			"admin.webhooks.none":             "No endpoint is registered yet.",
			"admin.webhooks.url":              "URL",
			"admin.webhooks.url.help":         "Where hmid POSTs the events: an https URL on a public address.",
			"admin.webhooks.description":      "Description (optional)",
			"admin.webhooks.types":            "Event types",
			"admin.webhooks.state":            "State",
			"admin.webhooks.on":               "Enabled",
			"admin.webhooks.off":              "Disabled",
			"admin.webhooks.failing":          "Turned off: failing",
			"admin.webhooks.manage":           "Manage",
			"admin.webhooks.new":              "Add an endpoint",
			"admin.webhooks.create":           "Add endpoint",
			"admin.webhooks.readonly":         "You can view the endpoints; changing them needs the webhooks:write permission.",
			"admin.webhooks.fixfield":         "Please correct the marked field below. Nothing was saved.",
			"admin.webhooks.confirm.missing":  "Tick the box to confirm.",
			"admin.webhooks.secret.title":     "Signing secret",
			"admin.webhooks.secret.once":      "Copy the secret now: it is shown only this once. The receiver uses it to verify the webhook-signature header.",
			"admin.webhooks.secret.use":       "Any Standard Webhooks library verifies the messages with this secret.",
			"admin.webhooks.turnedoff":        "hmid turned this endpoint off %s because its deliveries kept failing:",
			"admin.webhooks.created":          "Created",
			"admin.webhooks.oldsecret":        "Previous secret",
			"admin.webhooks.oldsecret.until":  "Still signs alongside the new one until %s.",
			"admin.webhooks.enable":           "Enable",
			"admin.webhooks.disable":          "Disable",
			"admin.webhooks.test":             "Send a test event",
			"admin.webhooks.deliveries":       "Recent deliveries",
			"admin.webhooks.nodeliveries":     "Nothing was delivered to this endpoint yet.",
			"admin.webhooks.col.time":         "Time",
			"admin.webhooks.col.event":        "Event",
			"admin.webhooks.col.status":       "Status",
			"admin.webhooks.col.duration":     "Duration",
			"admin.webhooks.col.attempt":      "Attempt",
			"admin.webhooks.status.delivered": "Delivered",
			"admin.webhooks.status.failed":    "Failed",
			"admin.webhooks.status.pending":   "Pending",
			"admin.webhooks.resend":           "Resend",
			"admin.webhooks.edit":             "Change the endpoint",
			"admin.webhooks.save":             "Save",
			"admin.webhooks.rotate":           "Rotate the secret",
			"admin.webhooks.rotate.help":      "A new secret is shown once; the current one keeps signing alongside it for 24 hours, so the receiver can switch without missing a message.",
			"admin.webhooks.rotate.check":     "Yes, give this endpoint a new secret",
			"admin.webhooks.delete":           "Delete the endpoint",
			"admin.webhooks.delete.check":     "Yes, delete this endpoint and its deliveries",
			"admin.webhooks.saved":            "The endpoint was saved.",
			"admin.webhooks.enabled":          "The endpoint was enabled.",
			"admin.webhooks.disabled":         "The endpoint was disabled. It gets no events until it is enabled again.",
			"admin.webhooks.deleted":          "The endpoint was deleted.",
			"admin.webhooks.tested":           "A test event is on its way; its delivery shows below.",
			"admin.webhooks.resent":           "The message was queued again with the same webhook-id.",
		},
		"de": {
			"admin.nav.webhooks":              "Webhooks",
			"admin.webhooks.title":            "Webhooks",
			"admin.webhook.title":             "Webhook-Endpunkt",
			"admin.webhooks.list":             "Endpunkte",
			"admin.webhooks.intro":            "Hier erfahren andere Systeme, was in hmid geschieht: Jeder Endpunkt erhält die abonnierten Audit-Ereignisse per POST, signiert nach der Standard-Webhooks-Spezifikation.",
			"admin.webhooks.none":             "Es ist noch kein Endpunkt eingetragen.",
			"admin.webhooks.url":              "URL",
			"admin.webhooks.url.help":         "Wohin hmid die Ereignisse sendet: eine https-URL mit öffentlicher Adresse.",
			"admin.webhooks.description":      "Beschreibung (optional)",
			"admin.webhooks.types":            "Ereignistypen",
			"admin.webhooks.state":            "Zustand",
			"admin.webhooks.on":               "Aktiv",
			"admin.webhooks.off":              "Deaktiviert",
			"admin.webhooks.failing":          "Abgeschaltet: Fehler",
			"admin.webhooks.manage":           "Verwalten",
			"admin.webhooks.new":              "Endpunkt hinzufügen",
			"admin.webhooks.create":           "Endpunkt hinzufügen",
			"admin.webhooks.readonly":         "Sie können die Endpunkte ansehen; zum Ändern ist die Berechtigung webhooks:write nötig.",
			"admin.webhooks.fixfield":         "Bitte korrigieren Sie das markierte Feld unten. Es wurde nichts gespeichert.",
			"admin.webhooks.confirm.missing":  "Bitte bestätigen Sie mit dem Kästchen.",
			"admin.webhooks.secret.title":     "Signaturgeheimnis",
			"admin.webhooks.secret.once":      "Kopieren Sie das Geheimnis jetzt: Es wird nur dieses eine Mal angezeigt. Der Empfänger prüft damit den Header webhook-signature.",
			"admin.webhooks.secret.use":       "Jede Standard-Webhooks-Bibliothek prüft die Nachrichten mit diesem Geheimnis.",
			"admin.webhooks.turnedoff":        "hmid hat diesen Endpunkt %s abgeschaltet, weil seine Zustellungen immer wieder fehlschlugen:",
			"admin.webhooks.created":          "Angelegt",
			"admin.webhooks.oldsecret":        "Bisheriges Geheimnis",
			"admin.webhooks.oldsecret.until":  "Signiert neben dem neuen noch bis %s.",
			"admin.webhooks.enable":           "Aktivieren",
			"admin.webhooks.disable":          "Deaktivieren",
			"admin.webhooks.test":             "Testereignis senden",
			"admin.webhooks.deliveries":       "Letzte Zustellungen",
			"admin.webhooks.nodeliveries":     "An diesen Endpunkt wurde noch nichts zugestellt.",
			"admin.webhooks.col.time":         "Zeit",
			"admin.webhooks.col.event":        "Ereignis",
			"admin.webhooks.col.status":       "Status",
			"admin.webhooks.col.duration":     "Dauer",
			"admin.webhooks.col.attempt":      "Versuch",
			"admin.webhooks.status.delivered": "Zugestellt",
			"admin.webhooks.status.failed":    "Fehlgeschlagen",
			"admin.webhooks.status.pending":   "Ausstehend",
			"admin.webhooks.resend":           "Erneut senden",
			"admin.webhooks.edit":             "Endpunkt ändern",
			"admin.webhooks.save":             "Speichern",
			"admin.webhooks.rotate":           "Geheimnis erneuern",
			"admin.webhooks.rotate.help":      "Ein neues Geheimnis wird einmal angezeigt; das bisherige signiert noch 24 Stunden mit, damit der Empfänger ohne verlorene Nachricht umstellen kann.",
			"admin.webhooks.rotate.check":     "Ja, diesem Endpunkt ein neues Geheimnis geben",
			"admin.webhooks.delete":           "Endpunkt löschen",
			"admin.webhooks.delete.check":     "Ja, diesen Endpunkt und seine Zustellungen löschen",
			"admin.webhooks.saved":            "Der Endpunkt wurde gespeichert.",
			"admin.webhooks.enabled":          "Der Endpunkt wurde aktiviert.",
			"admin.webhooks.disabled":         "Der Endpunkt wurde deaktiviert. Er erhält keine Ereignisse, bis er wieder aktiviert wird.",
			"admin.webhooks.deleted":          "Der Endpunkt wurde gelöscht.",
			"admin.webhooks.tested":           "Ein Testereignis ist unterwegs; seine Zustellung erscheint unten.",
			"admin.webhooks.resent":           "Die Nachricht wurde mit derselben webhook-id erneut eingereiht.",
		},
	})
}
