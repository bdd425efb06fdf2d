package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/platforms"
	"hmid/internal/web"
)

// PlatformPages is /admin/platforms: the login platforms, each enabled
// or disabled, with registration through it and its two-factor requirement.
// It calls platforms.Service as GET /v1/platforms, PATCH
// /v1/platforms/{id_or_slug}/enabled and PATCH …/settings do, so every
// change is audited there as platform_updated (source_service backend).
type PlatformPages struct {
	H         *web.Handler
	Platforms *platforms.Service
	// Configured reports whether hmid has the OAuth app of the sign-in
	// provider slug (HMID_LOGIN_*); nil takes every one as configured.
	Configured func(slug string) bool
}

// platformRow is a platform as the page shows it.
type platformRow struct {
	platforms.Platform
	// Registration and TwoFactor are what the settings form shows: the
	// stored values, or after a refusal what was posted.
	Registration, TwoFactor bool
	Err                     web.FormError
	// NotConfigured: an OAuth platform whose provider hmid has no app for,
	// so nobody can sign in through it whatever its enabled flag says.
	NotConfigured bool
}

// platformsView is the page's data.
type platformsView struct {
	Rows []platformRow
	// CanWrite shows the forms (settings:write, the PATCH routes' rule).
	CanWrite bool
}

// EnvVars names the variables of the OAuth app of the provider slug.
func (r platformRow) EnvVars() (id, secret string) {
	base := "HMID_LOGIN_" + strings.ToUpper(strings.ReplaceAll(r.Slug, "-", "_"))
	return base + "_CLIENT_ID", base + "_CLIENT_SECRET"
}

// UnconfiguredHelp says how to configure the provider, in lang's text t.
func (r platformRow) UnconfiguredHelp(text string) string {
	id, secret := r.EnvVars()
	return fmt.Sprintf(text, id, secret)
}

// platformForm is a refused settings post: the platform and what was posted.
type platformForm struct {
	Slug                    string
	Registration, TwoFactor bool
	Err                     web.FormError
}

// List is GET /admin/platforms.
func (ap *PlatformPages) List(w http.ResponseWriter, r *http.Request) {
	ap.render(w, r, http.StatusOK, "", nil)
}

// render shows the page; form, when not nil, is a refused post shown at its
// platform.
func (ap *PlatformPages) render(w http.ResponseWriter, r *http.Request, status int, errText string, form *platformForm) {
	list, err := ap.Platforms.List(r.Context(), false)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	v := platformsView{CanWrite: authn.From(r.Context()).Can("settings:write")}
	for _, p := range list {
		row := platformRow{Platform: p, Registration: p.RegistrationEnabled, TwoFactor: p.TwoFactorRequired,
			NotConfigured: p.IsOAuth && ap.Configured != nil && !ap.Configured(p.Slug)}
		if form != nil && (form.Slug == p.Slug || form.Slug == p.ID) {
			row.Registration, row.TwoFactor, row.Err = form.Registration, form.TwoFactor, form.Err
		}
		v.Rows = append(v.Rows, row)
	}
	ap.H.Console(w, r, status, "admin_platforms", web.ConsoleView{Title: "admin.platforms.title", Section: "platforms", Error: errText, Data: v})
}

// event is the audit detail of the page's request: the platform changes
// are the operators' dashboard's.
func (ap *PlatformPages) event(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: adminSource})
}

// SetEnabled is POST /admin/platforms/{id_or_slug}/enabled with enabled
// true or false: PATCH /v1/platforms/{id_or_slug}/enabled.
func (ap *PlatformPages) SetEnabled(w http.ResponseWriter, r *http.Request) {
	ap.H.Act(w, r, web.Action{To: "/admin/platforms", Refuse: ap.refuse(nil),
		Call: func(*authn.Principal) (string, error) {
			var on bool
			switch r.PostFormValue("enabled") {
			case "true":
				on = true
			case "false":
			default:
				return "", apperr.Invalid("enabled must be true or false")
			}
			pl, _, err := ap.Platforms.Update(r.Context(), chi.URLParam(r, "id_or_slug"), platforms.Changes{Enabled: &on}, ap.event(r))
			if err != nil {
				return "", err
			}
			if pl.Enabled {
				return "admin.platforms.enabled", nil
			}
			return "admin.platforms.disabled", nil
		}})
}

// refuse draws the page again with a refused post: its error at its field
// of form (when form is not nil and the error names one), else above.
func (ap *PlatformPages) refuse(form *platformForm) func(http.ResponseWriter, *http.Request, string, error) {
	return func(w http.ResponseWriter, r *http.Request, _ string, err error) {
		if form == nil {
			status, text := ap.H.PageRefusal(w, r, err)
			ap.render(w, r, status, text, nil)
			return
		}
		status, text, fe := ap.H.FormRefusal(w, r, err, "admin.platforms.fixfield")
		form.Err = fe
		ap.render(w, r, status, text, form)
	}
}

// Settings is POST /admin/platforms/{id_or_slug}/settings: PATCH
// /v1/platforms/{id_or_slug}/settings with the settings whose box differs
// from the stored value (a box that is not ticked is not sent, so the form
// always carries the whole state). A form changed in nothing is a request
// without fields, answered "No changes requested" as the spec says.
func (ap *PlatformPages) Settings(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "id_or_slug")
	form := &platformForm{Slug: slug}
	refuse := ap.refuse(form)
	ap.H.Act(w, r, web.Action{To: "/admin/platforms",
		Call: func(*authn.Principal) (string, error) {
			ctx := r.Context()
			cur, err := ap.Platforms.Get(ctx, ap.Platforms.DB, slug)
			if err != nil {
				refuse = ap.refuse(nil) // no form to show for a platform that is not there
				return "", err
			}
			form.Registration, form.TwoFactor = r.PostFormValue("registration_enabled") == "on", r.PostFormValue("two_factor_required") == "on"
			var c platforms.Changes
			if form.Registration != cur.RegistrationEnabled {
				c.RegistrationEnabled = &form.Registration
			}
			if form.TwoFactor != cur.TwoFactorRequired {
				c.TwoFactorRequired = &form.TwoFactor
			}
			res, err := ap.Platforms.UpdateSettings(ctx, slug, c, ap.event(r))
			switch {
			case err != nil:
				return "", err
			case !res.Requested:
				return "admin.platforms.nochanges", nil
			case len(res.Changed) == 0:
				return "admin.platforms.already", nil
			}
			return "admin.platforms.saved", nil
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, form string, err error) { refuse(w, r, form, err) },
	})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.platforms.title":                 "Login platforms",
			"admin.platforms.intro":                 "The ways people sign in to hmid. A disabled platform accepts no new sign-ins or registrations; people who use it can still sign in through their other linked platforms.",
			"admin.platforms.on":                    "Enabled",
			"admin.platforms.unconfigured":          "Not configured",
			"admin.platforms.unconfigured.help":     "hmid has no OAuth app for this provider, so its button is not shown and nobody can sign in through it. Set %s and %s and restart to offer it.",
			"admin.platforms.off":                   "Disabled",
			"admin.platforms.kind.oauth":            "External provider (OAuth)",
			"admin.platforms.kind.password":         "Email and password",
			"admin.platforms.changed":               "Last changed %s",
			"admin.platforms.enable":                "Enable",
			"admin.platforms.disable":               "Disable",
			"admin.platforms.disable.confirm":       "Disable %s? Nobody can sign in or register through it until it is enabled again.",
			"admin.platforms.registration":          "Open for registration",
			"admin.platforms.registration.help":     "New accounts can be created by signing in through %s.",
			"admin.platforms.registration.open":     "Registration is open.",
			"admin.platforms.registration.closed":   "Registration is closed.",
			"admin.platforms.twofactor":             "Require two-factor authentication",
			"admin.platforms.twofactor.help":        "Everyone who signs in through %s must set up and use a second factor.",
			"admin.platforms.twofactor.required":    "Two-factor authentication is required.",
			"admin.platforms.twofactor.optional":    "Two-factor authentication is optional.",
			"admin.platforms.twofactor.unsupported": "Two-factor authentication cannot be required: %s has no second factor in hmid.",
			"admin.platforms.save":                  "Save settings",
			"admin.platforms.readonly":              "You can view the platforms; changing them needs the settings:write permission.",
			"admin.platforms.enabled":               "The platform was enabled. People can sign in through it again.",
			"admin.platforms.disabled":              "The platform was disabled. Nobody can sign in or register through it now.",
			"admin.platforms.saved":                 "The platform settings were saved.",
			"admin.platforms.already":               "The platform already had these settings.",
			"admin.platforms.nochanges":             "No changes requested: the settings were as you sent them, so nothing was saved.",
			"admin.platforms.fixfield":              "Please correct the marked setting below. Nothing was saved.",
		},
		"de": {
			"admin.platforms.title":                 "Anmelde-Plattformen",
			"admin.platforms.intro":                 "Die Wege, auf denen man sich bei hmid anmeldet. Eine deaktivierte Plattform nimmt keine neuen Anmeldungen oder Registrierungen an; wer sie nutzt, kann sich weiter über andere verknüpfte Plattformen anmelden.",
			"admin.platforms.on":                    "Aktiv",
			"admin.platforms.unconfigured":          "Nicht eingerichtet",
			"admin.platforms.unconfigured.help":     "hmid hat keine OAuth-App für diesen Anbieter, daher wird seine Schaltfläche nicht gezeigt und niemand kann sich darüber anmelden. Setzen Sie %s und %s und starten Sie neu, um ihn anzubieten.",
			"admin.platforms.off":                   "Deaktiviert",
			"admin.platforms.kind.oauth":            "Externer Anbieter (OAuth)",
			"admin.platforms.kind.password":         "E-Mail und Passwort",
			"admin.platforms.changed":               "Zuletzt geändert %s",
			"admin.platforms.enable":                "Aktivieren",
			"admin.platforms.disable":               "Deaktivieren",
			"admin.platforms.disable.confirm":       "%s deaktivieren? Niemand kann sich darüber anmelden oder registrieren, bis die Plattform wieder aktiviert wird.",
			"admin.platforms.registration":          "Registrierung erlaubt",
			"admin.platforms.registration.help":     "Neue Konten entstehen durch die Anmeldung über %s.",
			"admin.platforms.registration.open":     "Die Registrierung ist offen.",
			"admin.platforms.registration.closed":   "Die Registrierung ist geschlossen.",
			"admin.platforms.twofactor":             "Zwei-Faktor-Authentifizierung verlangen",
			"admin.platforms.twofactor.help":        "Wer sich über %s anmeldet, muss einen zweiten Faktor einrichten und verwenden.",
			"admin.platforms.twofactor.required":    "Zwei-Faktor-Authentifizierung ist Pflicht.",
			"admin.platforms.twofactor.optional":    "Zwei-Faktor-Authentifizierung ist freiwillig.",
			"admin.platforms.twofactor.unsupported": "Zwei-Faktor-Authentifizierung kann nicht verlangt werden: %s hat in hmid keinen zweiten Faktor.",
			"admin.platforms.save":                  "Einstellungen speichern",
			"admin.platforms.readonly":              "Sie können die Plattformen ansehen; zum Ändern ist die Berechtigung settings:write nötig.",
			"admin.platforms.enabled":               "Die Plattform wurde aktiviert. Man kann sich wieder darüber anmelden.",
			"admin.platforms.disabled":              "Die Plattform wurde deaktiviert. Niemand kann sich jetzt darüber anmelden oder registrieren.",
			"admin.platforms.saved":                 "Die Einstellungen der Plattform wurden gespeichert.",
			"admin.platforms.already":               "Die Plattform hatte diese Einstellungen bereits.",
			"admin.platforms.nochanges":             "Keine Änderungen angefordert: Die Einstellungen waren schon so, wie Sie sie gesendet haben; es wurde nichts gespeichert.",
			"admin.platforms.fixfield":              "Bitte korrigieren Sie die markierte Einstellung unten. Es wurde nichts gespeichert.",
		},
	})
}
