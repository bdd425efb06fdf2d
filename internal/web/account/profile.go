package account

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"hmid/internal/accounts"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/password"
	"hmid/internal/useradmin"
	"hmid/internal/users"
	"hmid/internal/web"
)

// ProfilePages is /account: the profile (username, language, privacy mode,
// avatars) and the email address (its change, confirmed from a mail to the
// new address, or linking an email and password login to an account made
// through a provider). It calls users.Service as PATCH /v1/users/{id} and
// PATCH /v1/users/{id}/locale do, and accounts.Service as the email change
// and email link routes under /v1/users/{id} do.
type ProfilePages struct {
	H        *web.Handler
	Users    *users.Service
	Accounts *accounts.Service
	// Manage reads the state of the email sign-in (state.go).
	Manage *useradmin.Service
}

// profileForm is what the forms of the page show: the stored values, or
// after a refusal what the person typed, with the field's error.
type profileForm struct {
	Username, UsernameError string
	NewEmail, EmailError    string
	LinkEmail, LinkError    string
	PasswordError           string
	Privacy, Avatars        bool
	// typed: Username, Privacy and Avatars are what was posted, not the
	// stored values.
	typed bool
}

// localeOption is one entry of the language list.
type localeOption struct {
	Code, Name string
	Selected   bool
}

// profileView is the page's data.
type profileView struct {
	User users.User
	Form profileForm
	// Locales are the supported locales, and "" (follow the browser).
	Locales []localeOption
	// EmailLogin is the address of the email platform account, "" when the
	// user signs in only through providers (the page then offers the link).
	EmailLogin    string
	PendingChange *accounts.Pending
	PendingLink   *accounts.Pending
	// State is the account's state the page's notices show (state.go).
	State accountState
	// Password is the rules in force and the strength hint of the password.
	Password web.PasswordHint
}

// localeNames are the names of locales in their own language.
var localeNames = map[string]string{"en": "English", "de": "Deutsch", "fr": "Français", "es": "Español", "it": "Italiano", "nl": "Nederlands", "pl": "Polski", "pt": "Português"}

// Show is GET /account.
func (pp *ProfilePages) Show(w http.ResponseWriter, r *http.Request) {
	pp.render(w, r, http.StatusOK, "", nil)
}

// render shows the page; form, when not nil, replaces the stored values in
// the fields (a refused post keeps what was typed).
func (pp *ProfilePages) render(w http.ResponseWriter, r *http.Request, status int, errText string, form *profileForm) {
	pp.H.Show(w, r, status, "account_profile", web.ConsoleView{Title: "title.profile", Section: "profile", Error: errText},
		func() (any, error) { return pp.view(r, form) })
}

// view is the signed-in user's profile with form, when not nil, in its fields.
func (pp *ProfilePages) view(r *http.Request, form *profileForm) (v profileView, err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	u, err := pp.Users.Get(ctx, pp.Users.DB, p.UserID)
	if err != nil {
		return v, err
	}
	v = profileView{User: u, Password: web.NewPasswordHint(pp.H.UserLanguage(r, p), pp.Accounts.PasswordRules())}
	if form != nil {
		v.Form = *form
	}
	if !v.Form.typed {
		v.Form.Username, v.Form.Privacy, v.Form.Avatars = u.Username, u.PrivacyMode, u.AvatarsEnabled
	}
	if v.Form.LinkEmail == "" && u.Email != nil {
		v.Form.LinkEmail = *u.Email
	}
	if v.Locales, err = pp.locales(r, u); err != nil {
		return v, err
	}
	list, err := pp.Accounts.Accounts(ctx, p.UserID)
	if err != nil {
		return v, err
	}
	for _, a := range list {
		if a.PlatformSlug == "email" {
			v.EmailLogin = a.PlatformUserID
		}
	}
	if v.EmailLogin != "" {
		v.PendingChange, err = pp.Accounts.PendingEmailChange(ctx, p.UserID)
	} else {
		v.PendingLink, err = pp.Accounts.PendingEmailLink(ctx, p.UserID)
	}
	if err != nil {
		return v, err
	}
	v.State, err = pp.state(ctx, u)
	return v, err
}

// locales lists the locales the user may choose (the one list SetLocale
// accepts), the user's own marked.
func (pp *ProfilePages) locales(r *http.Request, u users.User) ([]localeOption, error) {
	codes, err := pp.Users.SupportedLocales(r.Context())
	if err != nil {
		return nil, err
	}
	cur := ""
	if u.PreferredLocale != nil {
		cur = *u.PreferredLocale
	}
	out := []localeOption{{Code: "", Selected: cur == ""}}
	for _, c := range codes {
		name := localeNames[c]
		if name == "" {
			name = c
		}
		out = append(out, localeOption{Code: c, Name: name, Selected: c == cur})
	}
	return out, nil
}

// Save is POST /account/profile: username, privacy mode and avatars, as one
// PATCH /v1/users/{id} with the fields that differ from the stored ones.
func (pp *ProfilePages) Save(w http.ResponseWriter, r *http.Request) {
	p := pp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	u, err := pp.Users.Get(ctx, pp.Users.DB, p.UserID)
	if err != nil {
		pp.H.Fail(w, r, err)
		return
	}
	// A checkbox that is not ticked is not sent (HTML, "constructing the
	// entry list"), so the form always carries the whole state.
	name := strings.TrimSpace(r.PostFormValue("username"))
	privacy, avatars := r.PostFormValue("privacy_mode") == "on", r.PostFormValue("avatars_enabled") == "on"
	var c users.Changes
	if name != u.Username {
		c.Username = httpx.Opt[string]{Set: true, Value: name}
	}
	if privacy != u.PrivacyMode {
		c.PrivacyMode = httpx.Opt[bool]{Set: true, Value: privacy}
	}
	if avatars != u.AvatarsEnabled {
		c.AvatarsEnabled = httpx.Opt[bool]{Set: true, Value: avatars}
	}
	if !c.Username.Set && !c.PrivacyMode.Set && !c.AvatarsEnabled.Set {
		pp.H.Done(w, r, "/account", "profile.unchanged")
		return
	}
	err = pp.Users.Update(ctx, p, p.UserID, c, audit.FromRequest(r, audit.Event{SourceService: web.Source}))
	if err == nil {
		pp.H.Done(w, r, "/account", "profile.saved")
		return
	}
	t := web.Translator(pp.H.UserLanguage(r, p))
	form := &profileForm{Username: name, Privacy: privacy, Avatars: avatars, typed: true}
	switch {
	case c.Username.Set && apperr.Is(err, apperr.Conflict):
		form.UsernameError = t("profile.username.taken")
	case c.Username.Set && apperr.Is(err, apperr.Validation):
		form.UsernameError = t("profile.username.invalid")
	}
	pp.refuse(w, r, err, form)
}

// refuse draws the page again with the refused form: above it the request
// to correct the marked field when the form marks one, else err's text.
func (pp *ProfilePages) refuse(w http.ResponseWriter, r *http.Request, err error, form *profileForm) {
	status := pp.H.Status(w, err)
	if form.marked() {
		pp.render(w, r, status, web.Translator(pp.H.UserLanguage(r, authn.From(r.Context())))("profile.check"), form)
		return
	}
	pp.render(w, r, status, pp.H.ErrorText(r, err), form)
}

// marked reports whether a refusal is shown at one of the form's fields.
func (f *profileForm) marked() bool {
	return f.UsernameError != "" || f.EmailError != "" || f.LinkError != "" || f.PasswordError != ""
}

// SaveLocale is POST /account/language: PATCH /v1/users/{id}/locale; an
// empty choice clears the preference (the browser's language is used).
func (pp *ProfilePages) SaveLocale(w http.ResponseWriter, r *http.Request) {
	pp.act(w, r, func(p *authn.Principal) (string, error) {
		var loc *string
		if v := r.PostFormValue("locale"); v != "" {
			loc = &v
		}
		return "profile.locale.saved", pp.Users.SetLocale(r.Context(), p, p.UserID, loc, audit.FromRequest(r, audit.Event{SourceService: web.Source}))
	}, func(w http.ResponseWriter, r *http.Request, _ *authn.Principal, err error) {
		pp.render(w, r, pp.H.Status(w, err), pp.H.ErrorText(r, err), nil)
	})
}

// act runs a page action of the profile page, which ends on /account;
// refuse draws the page again with a refusal.
func (pp *ProfilePages) act(w http.ResponseWriter, r *http.Request, call func(p *authn.Principal) (string, error),
	refuse func(w http.ResponseWriter, r *http.Request, p *authn.Principal, err error)) {
	pp.H.Act(w, r, web.Action{To: "/account", Call: call,
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			refuse(w, r, authn.From(r.Context()), err)
		}})
}

// RequestEmailChange is POST /account/email: POST
// /v1/users/{id}/email/request-change; the change waits for the link mailed
// to the new address.
func (pp *ProfilePages) RequestEmailChange(w http.ResponseWriter, r *http.Request) {
	var addr string
	pp.act(w, r, func(p *authn.Principal) (string, error) {
		addr = strings.TrimSpace(r.PostFormValue("email"))
		_, err := pp.Accounts.RequestEmailChange(r.Context(), p.UserID, addr)
		return "profile.email.sent", err
	}, func(w http.ResponseWriter, r *http.Request, p *authn.Principal, err error) {
		form := &profileForm{NewEmail: addr}
		form.EmailError, _ = pp.addressError(r, p, err)
		pp.refuse(w, r, err, form)
	})
}

// CancelEmailChange is POST /account/email/cancel: DELETE
// /v1/users/{id}/email/pending.
func (pp *ProfilePages) CancelEmailChange(w http.ResponseWriter, r *http.Request) {
	pp.act(w, r, func(p *authn.Principal) (string, error) {
		return "profile.email.cancelled", pp.Accounts.CancelEmailChange(r.Context(), p.UserID)
	}, pp.refusePending)
}

// refusePending draws the page again after a refused cancellation.
func (pp *ProfilePages) refusePending(w http.ResponseWriter, r *http.Request, p *authn.Principal, err error) {
	pp.render(w, r, pp.H.Status(w, err), pp.nothingPending(r, p, err), nil)
}

// RequestEmailLink is POST /account/email-link: POST
// /v1/users/{id}/email-link/request; the email login is created once the
// link mailed to the address is opened.
func (pp *ProfilePages) RequestEmailLink(w http.ResponseWriter, r *http.Request) {
	var addr string
	pp.act(w, r, func(p *authn.Principal) (string, error) {
		addr = strings.TrimSpace(r.PostFormValue("email"))
		_, err := pp.Accounts.RequestEmailLink(r.Context(), p.UserID, addr, r.PostFormValue("password"))
		return "profile.link.sent", err
	}, func(w http.ResponseWriter, r *http.Request, p *authn.Principal, err error) {
		t := web.Translator(pp.H.UserLanguage(r, p))
		form := &profileForm{LinkEmail: addr}
		switch msg, field := pp.addressError(r, p, err); {
		case errors.Is(err, accounts.ErrPasswordShort):
			form.PasswordError = fmt.Sprintf(t("profile.link.short"), pp.Accounts.PasswordRules().MinLength)
		case errors.Is(err, password.ErrCommon):
			form.PasswordError = t("pw.common")
		case errors.Is(err, accounts.ErrPasswordLong):
			form.PasswordError = t("profile.link.long")
		case field:
			form.LinkError = msg
		}
		pp.refuse(w, r, err, form)
	})
}

// CancelEmailLink is POST /account/email-link/cancel: DELETE
// /v1/users/{id}/email-link/pending.
func (pp *ProfilePages) CancelEmailLink(w http.ResponseWriter, r *http.Request) {
	pp.act(w, r, func(p *authn.Principal) (string, error) {
		return "profile.link.cancelled", pp.Accounts.CancelEmailLink(r.Context(), p.UserID)
	}, pp.refusePending)
}

// addressError is the text of a refused address and whether it belongs
// under the address field: an address in use, or one the service found
// invalid (its own words, after a localized sentence).
func (pp *ProfilePages) addressError(r *http.Request, p *authn.Principal, err error) (string, bool) {
	switch apperr.KindOf(err) {
	case apperr.Conflict:
		return web.Translator(pp.H.UserLanguage(r, p))("profile.email.taken"), true
	case apperr.Validation:
		return pp.H.ErrorText(r, err), true
	}
	return "", false
}

// nothingPending is the text of a refused cancel: usually the request was
// confirmed or expired meanwhile (404).
func (pp *ProfilePages) nothingPending(r *http.Request, p *authn.Principal, err error) string {
	if apperr.Is(err, apperr.NotFound) {
		return web.Translator(pp.H.UserLanguage(r, p))("profile.email.nopending")
	}
	return pp.H.ErrorText(r, err)
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.profile":            "Your profile",
			"profile.details":          "Profile",
			"profile.username":         "Username",
			"profile.username.help":    "3 to 30 characters: letters, digits and underscores. Apps that use your account show this name.",
			"profile.username.taken":   "This username is taken. Choose another one.",
			"profile.username.invalid": "Use 3 to 30 characters: letters (a–z, A–Z), digits and underscores, no spaces.",
			"profile.privacy":          "Privacy mode",
			"profile.privacy.help":     "Asks the apps that use your account to show less about you, for example to hide you from public lists.",
			"profile.avatars":          "Show profile pictures",
			"profile.avatars.help":     "Turning this off removes the pictures stored from your sign-in providers, and no new ones are taken when you sign in.",
			"profile.save":             "Save profile",
			"profile.saved":            "Your profile was saved.",
			"profile.unchanged":        "Nothing was changed.",
			"profile.check":            "Please correct the marked field.",
			"profile.language":         "Language",
			"profile.language.label":   "Language of these pages and of the mails we send you",
			"profile.language.auto":    "Same as my browser",
			"profile.language.save":    "Save language",
			"profile.locale.saved":     "Your language was saved.",
			"profile.email":            "Email address",
			"profile.email.current":    "You sign in with",
			"profile.email.contact":    "Your contact address is",
			"profile.email.none":       "No email address is stored for your account.",
			"profile.email.new":        "New email address",
			"profile.email.help":       "We send a link to the new address. The change takes effect once you open it; until then you keep signing in with the current address.",
			"profile.email.request":    "Change email address",
			"profile.email.sent":       "We sent a link to the new address. Open it within 24 hours to complete the change.",
			"profile.email.pending":    "Waiting for confirmation: %s",
			"profile.email.expires":    "The link we sent is valid until",
			"profile.email.cancel":     "Cancel the change",
			"profile.email.cancelled":  "The email change was cancelled. The link we sent no longer works.",
			"profile.email.taken":      "This address is already used by another account.",
			"profile.email.nopending":  "Nothing is waiting for confirmation any more: the link was already used, or it expired.",
			"profile.link":             "Sign in with email and password",
			"profile.link.intro":       "You sign in only through other providers. Add an email address and a password to have a way in that does not depend on them.",
			"profile.link.email":       "Email address",
			"profile.link.password":    "Password",
			"profile.link.help":        "At least %d characters.",
			"profile.link.short":       "The password is too short. Use at least %d characters.",
			"profile.link.long":        "The password is too long.",
			"profile.link.submit":      "Add email login",
			"profile.link.sent":        "We sent a link to the address. Open it within 24 hours to finish adding the email login.",
			"profile.link.pending":     "Waiting for confirmation: %s",
			"profile.link.cancel":      "Cancel",
			"profile.link.cancelled":   "The email login was not added. The link we sent no longer works.",
		},
		"de": {
			"title.profile":            "Ihr Profil",
			"profile.details":          "Profil",
			"profile.username":         "Benutzername",
			"profile.username.help":    "3 bis 30 Zeichen: Buchstaben, Ziffern und Unterstriche. Apps, die Ihr Konto verwenden, zeigen diesen Namen.",
			"profile.username.taken":   "Dieser Benutzername ist vergeben. Bitte wählen Sie einen anderen.",
			"profile.username.invalid": "Verwenden Sie 3 bis 30 Zeichen: Buchstaben (a–z, A–Z), Ziffern und Unterstriche, keine Leerzeichen.",
			"profile.privacy":          "Privatsphäre-Modus",
			"profile.privacy.help":     "Bittet die Apps, die Ihr Konto verwenden, weniger über Sie zu zeigen, zum Beispiel Sie in öffentlichen Listen auszublenden.",
			"profile.avatars":          "Profilbilder anzeigen",
			"profile.avatars.help":     "Wenn Sie das ausschalten, werden die von Ihren Anmeldediensten gespeicherten Bilder entfernt, und bei der Anmeldung werden keine neuen übernommen.",
			"profile.save":             "Profil speichern",
			"profile.saved":            "Ihr Profil wurde gespeichert.",
			"profile.unchanged":        "Es wurde nichts geändert.",
			"profile.check":            "Bitte korrigieren Sie das markierte Feld.",
			"profile.language":         "Sprache",
			"profile.language.label":   "Sprache dieser Seiten und unserer E-Mails an Sie",
			"profile.language.auto":    "Wie in meinem Browser",
			"profile.language.save":    "Sprache speichern",
			"profile.locale.saved":     "Ihre Sprache wurde gespeichert.",
			"profile.email":            "E-Mail-Adresse",
			"profile.email.current":    "Sie melden sich an mit",
			"profile.email.contact":    "Ihre Kontaktadresse ist",
			"profile.email.none":       "Für Ihr Konto ist keine E-Mail-Adresse gespeichert.",
			"profile.email.new":        "Neue E-Mail-Adresse",
			"profile.email.help":       "Wir senden einen Link an die neue Adresse. Die Änderung gilt, sobald Sie ihn öffnen; bis dahin melden Sie sich weiter mit der bisherigen Adresse an.",
			"profile.email.request":    "E-Mail-Adresse ändern",
			"profile.email.sent":       "Wir haben einen Link an die neue Adresse gesendet. Öffnen Sie ihn innerhalb von 24 Stunden, um die Änderung abzuschließen.",
			"profile.email.pending":    "Wartet auf Bestätigung: %s",
			"profile.email.expires":    "Der gesendete Link gilt bis",
			"profile.email.cancel":     "Änderung abbrechen",
			"profile.email.cancelled":  "Die Änderung der E-Mail-Adresse wurde abgebrochen. Der gesendete Link funktioniert nicht mehr.",
			"profile.email.taken":      "Diese Adresse wird bereits von einem anderen Konto verwendet.",
			"profile.email.nopending":  "Es wartet nichts mehr auf Bestätigung: Der Link wurde bereits verwendet oder ist abgelaufen.",
			"profile.link":             "Mit E-Mail und Passwort anmelden",
			"profile.link.intro":       "Sie melden sich nur über andere Anbieter an. Fügen Sie eine E-Mail-Adresse und ein Passwort hinzu, um einen Zugang zu haben, der nicht von ihnen abhängt.",
			"profile.link.email":       "E-Mail-Adresse",
			"profile.link.password":    "Passwort",
			"profile.link.help":        "Mindestens %d Zeichen.",
			"profile.link.short":       "Das Passwort ist zu kurz. Verwenden Sie mindestens %d Zeichen.",
			"profile.link.long":        "Das Passwort ist zu lang.",
			"profile.link.submit":      "E-Mail-Anmeldung hinzufügen",
			"profile.link.sent":        "Wir haben einen Link an die Adresse gesendet. Öffnen Sie ihn innerhalb von 24 Stunden, um die E-Mail-Anmeldung hinzuzufügen.",
			"profile.link.pending":     "Wartet auf Bestätigung: %s",
			"profile.link.cancel":      "Abbrechen",
			"profile.link.cancelled":   "Die E-Mail-Anmeldung wurde nicht hinzugefügt. Der gesendete Link funktioniert nicht mehr.",
		},
	})
}
