package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/settings"
	"hmid/internal/web"
)

// ConfigPages is /admin/config: the system configuration (each
// entry's JSON value edited by its type, the list filtered by key prefix)
// and the settings (create, edit, delete; public ones marked). It calls
// settings.Service as the /v1/system-config and /v1/settings routes do: a
// system-config change is audited (source_service backend), the settings
// are not, as their routes' are not.
type ConfigPages struct {
	H        *web.Handler
	Settings *settings.Service
}

// The inputs a config entry's value is edited with, by its JSON type.
const (
	inputCheckbox = "checkbox" // boolean
	inputNumber   = "number"
	inputText     = "text" // string: the text itself, without JSON quotes
	inputJSON     = "json" // array, object (and null): JSON in a text area
)

// configRow is a system config entry as the page shows it.
type configRow struct {
	settings.ConfigEntry
	Kind  string // settings.Kind of the value
	Input string // one of the input* constants
	// Text is the value in the input (the number, the string, indented
	// JSON), or after a refusal what was posted; Checked for a boolean.
	Text    string
	Checked bool
	Rows    int    // of the text area
	Display string // the value as compact JSON, for readers who cannot edit
	Error   string
}

// settingRow is a setting in the list.
type settingRow struct {
	settings.Setting
	Preview string // the value as compact JSON, shortened
}

// settingForm is the create or edit form of a setting: the stored values,
// or after a refusal what was posted, with the error at its field.
type settingForm struct {
	Key, Value, Description string
	IsPublic                bool
	Err                     web.FormError
}

// configView is the data of /admin/config.
type configView struct {
	Prefix string
	// Policies are the policy entries, grouped (policies.go); Config the
	// other system-config entries.
	Policies []policyGroup
	Config   []configRow
	Settings []settingRow
	// CanWrite shows the forms (settings:write).
	CanWrite bool
}

// settingView is the data of /admin/config/settings/{key} and of
// /admin/config/new-setting (New).
type settingView struct {
	New                 bool
	Setting             settings.Setting
	Form                settingForm
	Rows                int // of the value's text area
	CanWrite, CanDelete bool
	ConfirmErr          string // the deletion was sent without its box ticked
}

// previewRunes is how much of a setting's value the list shows.
const previewRunes = 60

// List is GET /admin/config?prefix=…: GET /v1/system-config?prefix=… and
// GET /v1/settings.
func (cp *ConfigPages) List(w http.ResponseWriter, r *http.Request) {
	cp.render(w, r, http.StatusOK, "", r.URL.Query().Get("prefix"), nil)
}

// render shows /admin/config; failed, when not nil, is the refused config
// entry with what was posted.
func (cp *ConfigPages) render(w http.ResponseWriter, r *http.Request, status int, errText, prefix string, failed *configRow) {
	cp.H.Show(w, r, status, "admin_config", web.ConsoleView{Title: "admin.config.title", Section: "config", Error: errText},
		func() (any, error) { return cp.view(r, prefix, failed) })
}

// view is the config entries under prefix and the settings, with failed,
// when not nil, in place of its stored entry.
func (cp *ConfigPages) view(r *http.Request, prefix string, failed *configRow) (configView, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	v := configView{Prefix: prefix, CanWrite: p.Can("settings:write")}
	entries, err := cp.Settings.ListConfig(ctx, prefix)
	if err != nil {
		return v, err
	}
	list, err := cp.Settings.List(ctx, false)
	if err != nil {
		return v, err
	}
	v.Policies, entries = splitPolicies(entries, failed, cp.H.UserLanguage(r, p))
	for _, e := range entries {
		row := configEntryRow(e)
		if failed != nil && failed.Key == e.Key {
			row.Text, row.Checked, row.Rows, row.Error = failed.Text, failed.Checked, failed.Rows, failed.Error
		}
		v.Config = append(v.Config, row)
	}
	for _, s := range list {
		v.Settings = append(v.Settings, settingRow{Setting: s, Preview: preview(s.Value)})
	}
	return v, nil
}

// configEntryRow is e with the input its JSON type is edited with.
func configEntryRow(e settings.ConfigEntry) configRow {
	row := configRow{ConfigEntry: e, Kind: settings.Kind(e.Value), Display: compact(e.Value)}
	switch row.Kind {
	case settings.KindBoolean:
		row.Input, row.Checked = inputCheckbox, string(bytes.TrimSpace(e.Value)) == "true"
	case settings.KindNumber:
		row.Input, row.Text = inputNumber, string(bytes.TrimSpace(e.Value))
	case settings.KindString:
		row.Input = inputText
		_ = json.Unmarshal(e.Value, &row.Text) // stored values are valid JSON
	default:
		row.Input, row.Text = inputJSON, indent(e.Value)
		row.Rows = textRows(row.Text)
	}
	return row
}

// textRows is the height of a text area showing s: its lines, from 2 to 12.
func textRows(s string) int {
	return min(max(strings.Count(s, "\n")+1, 2), 12)
}

// indent is raw as indented JSON for a text area (raw itself when it is not JSON).
func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// compact is raw as compact JSON (raw itself when it is not JSON).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// preview is raw as compact JSON of at most previewRunes characters.
func preview(raw json.RawMessage) string {
	s := compact(raw)
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	return string([]rune(s)[:previewRunes-1]) + "…"
}

// configURL is /admin/config with the prefix filter.
func configURL(prefix string) string {
	if prefix == "" {
		return "/admin/config"
	}
	return "/admin/config?prefix=" + url.QueryEscape(prefix)
}

// UpdateConfig is POST /admin/config/system/{key}: PATCH
// /v1/system-config/{key} with the value the form's input gives, read by
// the JSON type of the stored value (a checkbox is true or false, a string
// is the text as typed, a number or JSON is the text as JSON). The service
// checks the value; a refusal is shown at the entry and nothing changes.
func (cp *ConfigPages) UpdateConfig(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	key, prefix := chi.URLParam(r, "key"), r.PostFormValue("prefix")
	e, err := cp.Settings.Entry(ctx, key)
	if err != nil {
		cp.render(w, r, cp.H.Status(w, err), cp.H.ErrorText(r, err), prefix, nil)
		return
	}
	posted := configEntryRow(e)
	var raw json.RawMessage
	switch posted.Input {
	case inputCheckbox:
		posted.Checked = r.PostFormValue("value") == "true"
		raw, _ = json.Marshal(posted.Checked)
	case inputText:
		posted.Text = r.PostFormValue("value")
		raw = jsonString(posted.Text)
	default:
		posted.Text = r.PostFormValue("value")
		posted.Rows = textRows(posted.Text)
		raw = json.RawMessage(strings.TrimSpace(posted.Text))
	}
	if _, err := cp.Settings.UpdateConfig(ctx, key, raw, audit.FromRequest(r, audit.Event{SourceService: adminSource})); err != nil {
		posted.Error = cp.H.ErrorText(r, err)
		t := web.Translator(cp.H.UserLanguage(r, p))
		cp.render(w, r, cp.H.Status(w, err), t("admin.config.fixfield"), prefix, &posted)
		return
	}
	cp.H.Done(w, r, configURL(prefix), "admin.config.entry.saved")
}

// jsonString is s as a JSON string, with <, > and & as they are (the value
// is data, not HTML).
func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSpace(b.Bytes())
}

// settingInput is the service input of a setting form: every field, the
// value as the JSON text typed.
func settingInput(f settingForm) settings.SettingInput {
	return settings.SettingInput{
		Key:         httpx.Opt[string]{Set: true, Value: f.Key},
		Value:       httpx.Opt[json.RawMessage]{Set: true, Value: json.RawMessage(f.Value)},
		Description: httpx.Opt[string]{Set: true, Value: f.Description},
		IsPublic:    httpx.Opt[bool]{Set: true, Value: f.IsPublic},
	}
}

// postedSetting reads a setting form.
func postedSetting(r *http.Request, key string) settingForm {
	return settingForm{Key: key, Value: r.PostFormValue("value"), Description: r.PostFormValue("description"),
		IsPublic: r.PostFormValue("is_public") == "on"}
}

// formFailure is a refused setting form: the page's status and text above
// the form, with the error at the field the service named.
func (cp *ConfigPages) formFailure(w http.ResponseWriter, r *http.Request, err error, f *settingForm) (int, string) {
	t := web.Translator(cp.H.UserLanguage(r, authn.From(r.Context())))
	text := cp.H.ErrorText(r, err)
	if apperr.KindOf(err) == apperr.Conflict {
		text = t("admin.config.key.taken") // the generic conflict text speaks of users
	}
	if field := apperr.FieldOf(err); field != "" {
		f.Err = web.FormError{Field: field, Text: text}
		text = t("admin.config.fixfield")
	}
	return cp.H.Status(w, err), text
}

// NewSetting is GET /admin/config/new-setting: the form of POST /v1/settings.
func (cp *ConfigPages) NewSetting(w http.ResponseWriter, r *http.Request) {
	cp.renderNew(w, r, http.StatusOK, "", settingForm{})
}

// renderNew shows the form of a new setting with f's values.
func (cp *ConfigPages) renderNew(w http.ResponseWriter, r *http.Request, status int, errText string, f settingForm) {
	v := settingView{New: true, Form: f, Rows: textRows(f.Value), CanWrite: true}
	cp.H.Console(w, r, status, "admin_config_setting", web.ConsoleView{Title: "admin.config.new.title", Section: "config", Error: errText, Data: v})
}

// settingURL is the page of the setting key.
func settingURL(key string) string { return "/admin/config/settings/" + url.PathEscape(key) }

// CreateSetting is POST /admin/config/new-setting: POST /v1/settings.
func (cp *ConfigPages) CreateSetting(w http.ResponseWriter, r *http.Request) {
	var f settingForm
	var s settings.Setting
	cp.H.Act(w, r, web.Action{
		Call: func(*authn.Principal) (string, error) {
			f = postedSetting(r, strings.TrimSpace(r.PostFormValue("key")))
			var err error
			s, err = cp.Settings.Create(r.Context(), settingInput(f))
			return "admin.config.setting.created", err
		},
		Next: func() string { return settingURL(s.Key) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text := cp.formFailure(w, r, err, &f)
			cp.renderNew(w, r, status, text, f)
		}})
}

// Setting is GET /admin/config/settings/{key}: GET /v1/settings/{key}.
func (cp *ConfigPages) Setting(w http.ResponseWriter, r *http.Request) {
	cp.renderSetting(w, r, http.StatusOK, "", nil, "")
}

// renderSetting shows a setting's page; form, when not nil, is a refused
// post shown in place of the stored values; confirmErr is the error at the
// deletion's confirmation box.
func (cp *ConfigPages) renderSetting(w http.ResponseWriter, r *http.Request, status int, errText string, form *settingForm, confirmErr string) {
	p := authn.From(r.Context())
	s, err := cp.Settings.Get(r.Context(), chi.URLParam(r, "key"))
	if err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	v := settingView{Setting: s, CanWrite: p.Can("settings:write"), CanDelete: p.Can("settings:delete"), ConfirmErr: confirmErr,
		Form: settingForm{Key: s.Key, Value: indent(s.Value), Description: s.Description, IsPublic: s.IsPublic}}
	if form != nil {
		v.Form = *form
	}
	v.Rows = textRows(v.Form.Value)
	cp.H.Console(w, r, status, "admin_config_setting", web.ConsoleView{Title: "admin.config.setting.title", Section: "config", Error: errText, Data: v})
}

// UpdateSetting is POST /admin/config/settings/{key}: PUT /v1/settings/{key}
// with the value, description and public flag.
func (cp *ConfigPages) UpdateSetting(w http.ResponseWriter, r *http.Request) {
	var f settingForm
	cp.H.Act(w, r, web.Action{
		Call: func(*authn.Principal) (string, error) {
			f = postedSetting(r, chi.URLParam(r, "key"))
			_, err := cp.Settings.Update(r.Context(), f.Key, settingInput(f))
			return "admin.config.setting.saved", err
		},
		Next: func() string { return settingURL(f.Key) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			if apperr.KindOf(err) == apperr.NotFound {
				cp.H.Fail(w, r, err)
				return
			}
			status, text := cp.formFailure(w, r, err, &f)
			cp.renderSetting(w, r, status, text, &f, "")
		}})
}

// DeleteSetting is POST /admin/config/settings/{key}/delete: DELETE
// /v1/settings/{key}, after the confirmation box is ticked.
func (cp *ConfigPages) DeleteSetting(w http.ResponseWriter, r *http.Request) {
	cp.H.Act(w, r, web.Action{To: "/admin/config", Confirm: "confirm", Unconfirmed: "admin.config.confirm.missing",
		Call: func(*authn.Principal) (string, error) {
			return "admin.config.setting.deleted", cp.Settings.Delete(r.Context(), chi.URLParam(r, "key"))
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			var inv *web.Invalid
			if !errors.As(err, &inv) {
				cp.H.Fail(w, r, err)
				return
			}
			status, text, fe := cp.H.FormRefusal(w, r, err, "admin.config.fixfield")
			cp.renderSetting(w, r, status, text, nil, fe.Text)
		}})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.config.title":           "Configuration",
			"admin.config.system":          "System configuration",
			"admin.config.system.intro":    "Values hmid reads while it runs. Each keeps the type it has: a number stays a number, a list stays a list.",
			"admin.config.prefix":          "Key starts with",
			"admin.config.prefix.help":     "Shows only the keys that start with this text, for example stats.",
			"admin.config.filter":          "Filter",
			"admin.config.filter.clear":    "Show all entries",
			"admin.config.none":            "There are no configuration entries.",
			"admin.config.none.prefix":     "No configuration key starts with %q.",
			"admin.config.kind.object":     "object (JSON)",
			"admin.config.kind.array":      "list (JSON array)",
			"admin.config.kind.string":     "text",
			"admin.config.kind.number":     "number",
			"admin.config.kind.boolean":    "on or off",
			"admin.config.kind.null":       "empty (JSON null)",
			"admin.config.kind.empty":      "no value",
			"admin.config.changed":         "changed %s",
			"admin.config.save":            "Save",
			"admin.config.entry.saved":     "The configuration value was saved.",
			"admin.config.fixfield":        "Please correct the marked field below. Nothing was saved.",
			"admin.config.settings":        "Settings",
			"admin.config.settings.intro":  "Key and value pairs for the apps that use hmid. Public settings can be read by anyone, without signing in.",
			"admin.config.settings.none":   "There are no settings yet.",
			"admin.config.key":             "Key",
			"admin.config.key.help":        "1 to 128 letters, digits, _ . : or -, for example site.title. The key cannot be changed later.",
			"admin.config.key.taken":       "A setting with this key exists already. Open it from the list to change it.",
			"admin.config.value":           "Value",
			"admin.config.value.json":      "Value (JSON)",
			"admin.config.value.help":      "Any JSON value: \"text in quotes\", 42, true, [\"a\", \"b\"] or {\"en\": \"Hello\"}.",
			"admin.config.description":     "Description",
			"admin.config.visibility":      "Visibility",
			"admin.config.actions":         "Actions",
			"admin.config.public":          "Public",
			"admin.config.private":         "Operators only",
			"admin.config.public.label":    "Public",
			"admin.config.public.help":     "Anyone can read a public setting at /v1/settings/public, without signing in. Never make secrets public.",
			"admin.config.edit":            "Edit",
			"admin.config.view":            "View",
			"admin.config.new":             "New setting",
			"admin.config.new.title":       "New setting",
			"admin.config.setting.title":   "Setting",
			"admin.config.back":            "Configuration",
			"admin.config.created":         "Created",
			"admin.config.updated":         "Last changed",
			"admin.config.create":          "Create setting",
			"admin.config.save.setting":    "Save setting",
			"admin.config.setting.created": "The setting was created.",
			"admin.config.setting.saved":   "The setting was saved.",
			"admin.config.setting.deleted": "The setting was deleted.",
			"admin.config.delete.title":    "Delete this setting",
			"admin.config.delete.intro":    "Apps that read it get nothing from then on. This cannot be undone.",
			"admin.config.delete.confirm":  "Delete the setting %s? This cannot be undone.",
			"admin.config.delete.check":    "Yes, delete %s",
			"admin.config.delete":          "Delete setting",
			"admin.config.confirm.missing": "Tick the box to confirm.",
		},
		"de": {
			"admin.config.title":           "Konfiguration",
			"admin.config.system":          "Systemkonfiguration",
			"admin.config.system.intro":    "Werte, die hmid im Betrieb liest. Jeder behält seinen Typ: Eine Zahl bleibt eine Zahl, eine Liste bleibt eine Liste.",
			"admin.config.prefix":          "Schlüssel beginnt mit",
			"admin.config.prefix.help":     "Zeigt nur die Schlüssel, die mit diesem Text beginnen, zum Beispiel stats.",
			"admin.config.filter":          "Filtern",
			"admin.config.filter.clear":    "Alle Einträge zeigen",
			"admin.config.none":            "Es gibt keine Konfigurationseinträge.",
			"admin.config.none.prefix":     "Kein Konfigurationsschlüssel beginnt mit %q.",
			"admin.config.kind.object":     "Objekt (JSON)",
			"admin.config.kind.array":      "Liste (JSON-Array)",
			"admin.config.kind.string":     "Text",
			"admin.config.kind.number":     "Zahl",
			"admin.config.kind.boolean":    "an oder aus",
			"admin.config.kind.null":       "leer (JSON null)",
			"admin.config.kind.empty":      "kein Wert",
			"admin.config.changed":         "geändert %s",
			"admin.config.save":            "Speichern",
			"admin.config.entry.saved":     "Der Konfigurationswert wurde gespeichert.",
			"admin.config.fixfield":        "Bitte korrigieren Sie das markierte Feld unten. Es wurde nichts gespeichert.",
			"admin.config.settings":        "Einstellungen",
			"admin.config.settings.intro":  "Schlüssel-Wert-Paare für die Anwendungen, die hmid nutzen. Öffentliche Einstellungen kann jeder lesen, auch ohne Anmeldung.",
			"admin.config.settings.none":   "Es gibt noch keine Einstellungen.",
			"admin.config.key":             "Schlüssel",
			"admin.config.key.help":        "1 bis 128 Buchstaben, Ziffern, _ . : oder -, zum Beispiel site.title. Der Schlüssel lässt sich später nicht ändern.",
			"admin.config.key.taken":       "Eine Einstellung mit diesem Schlüssel gibt es bereits. Öffnen Sie sie in der Liste, um sie zu ändern.",
			"admin.config.value":           "Wert",
			"admin.config.value.json":      "Wert (JSON)",
			"admin.config.value.help":      "Ein beliebiger JSON-Wert: \"Text in Anführungszeichen\", 42, true, [\"a\", \"b\"] oder {\"de\": \"Hallo\"}.",
			"admin.config.description":     "Beschreibung",
			"admin.config.visibility":      "Sichtbarkeit",
			"admin.config.actions":         "Aktionen",
			"admin.config.public":          "Öffentlich",
			"admin.config.private":         "Nur Betreiber",
			"admin.config.public.label":    "Öffentlich",
			"admin.config.public.help":     "Eine öffentliche Einstellung kann jeder unter /v1/settings/public lesen, auch ohne Anmeldung. Machen Sie niemals Geheimnisse öffentlich.",
			"admin.config.edit":            "Bearbeiten",
			"admin.config.view":            "Ansehen",
			"admin.config.new":             "Neue Einstellung",
			"admin.config.new.title":       "Neue Einstellung",
			"admin.config.setting.title":   "Einstellung",
			"admin.config.back":            "Konfiguration",
			"admin.config.created":         "Angelegt",
			"admin.config.updated":         "Zuletzt geändert",
			"admin.config.create":          "Einstellung anlegen",
			"admin.config.save.setting":    "Einstellung speichern",
			"admin.config.setting.created": "Die Einstellung wurde angelegt.",
			"admin.config.setting.saved":   "Die Einstellung wurde gespeichert.",
			"admin.config.setting.deleted": "Die Einstellung wurde gelöscht.",
			"admin.config.delete.title":    "Diese Einstellung löschen",
			"admin.config.delete.intro":    "Anwendungen, die sie lesen, erhalten danach nichts mehr. Das lässt sich nicht rückgängig machen.",
			"admin.config.delete.confirm":  "Die Einstellung %s löschen? Das lässt sich nicht rückgängig machen.",
			"admin.config.delete.check":    "Ja, %s löschen",
			"admin.config.delete":          "Einstellung löschen",
			"admin.config.confirm.missing": "Setzen Sie das Häkchen zur Bestätigung.",
		},
	})
}
