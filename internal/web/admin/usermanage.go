package admin

import (
	"context"
	"net/http"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/useradmin"
	"hmid/internal/web"
)

// The operators' user management on the admin console (issue 22): the
// form that creates a user (/admin/users/new), and on a user's page the
// panel "Sign-in and email" with the username, address and language, the
// address's verification and the password. Each action posts to a route
// whose rule in internal/app/routes.go is its REST twin's under
// /v1/admin/users, and calls the service that twin calls
// (useradmin.Service).

// manageView is the panel's data on a user's page.
type manageView struct {
	// SignIn is the user's email sign-in; HasSignIn is false without one.
	SignIn    useradmin.EmailSignIn
	HasSignIn bool
	Locales   []web.Choice
}

// manageData reads the panel's data for user id, with the language
// choices (the current one, or the refused form's, selected).
func (ap *UserPages) manageData(ctx context.Context, t func(string) string, id, current string) (manageView, error) {
	var v manageView
	var err error
	if v.SignIn, v.HasSignIn, err = ap.Manage.EmailSignInOf(ctx, id); err != nil {
		return v, err
	}
	v.Locales, err = ap.localeChoices(ctx, t, current)
	return v, err
}

// localeChoices are the languages a user may have, selected selected.
func (ap *UserPages) localeChoices(ctx context.Context, t func(string) string, selected string) ([]web.Choice, error) {
	locs, err := ap.Users.SupportedLocales(ctx)
	if err != nil {
		return nil, err
	}
	return web.Choices(t, "admin.manage.lang.", locs, selected), nil
}

// manageEvent is the audit event of a page action of the panel.
func manageEvent(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: useradmin.Source})
}

// SaveProfile is POST /admin/users/{id}/profile (PATCH /v1/admin/users/{id}).
func (ap *UserPages) SaveProfile(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "profile", false, func(p *authn.Principal, id string) (string, error) {
		name, email, locale := r.PostFormValue("username"), r.PostFormValue("email"), r.PostFormValue("locale")
		_, err := ap.Manage.SetProfile(r.Context(), p, id, useradmin.Profile{Username: &name, Email: &email, Locale: &locale}, manageEvent(r))
		return "admin.manage.profile.done", err
	})
}

// SetPassword is POST /admin/users/{id}/password (POST
// /v1/admin/users/{id}/password).
func (ap *UserPages) SetPassword(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "password", false, func(p *authn.Principal, id string) (string, error) {
		return "admin.manage.password.done", ap.Manage.SetPassword(r.Context(), p, id, r.PostFormValue("password"), manageEvent(r))
	})
}

// SendReset is POST /admin/users/{id}/password-reset (POST
// /v1/admin/users/{id}/password-reset).
func (ap *UserPages) SendReset(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "reset-mail", false, func(p *authn.Principal, id string) (string, error) {
		_, err := ap.Manage.SendReset(r.Context(), p, id, manageEvent(r))
		return "admin.manage.reset.done", err
	})
}

// MarkVerified is POST /admin/users/{id}/email/verified (POST
// /v1/admin/users/{id}/email/verified).
func (ap *UserPages) MarkVerified(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "verify", false, func(p *authn.Principal, id string) (string, error) {
		return "admin.manage.verified.done", ap.Manage.MarkVerified(r.Context(), p, id, manageEvent(r))
	})
}

// ResendVerification is POST /admin/users/{id}/email/verification (POST
// /v1/admin/users/{id}/email/verification).
func (ap *UserPages) ResendVerification(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "verify", false, func(p *authn.Principal, id string) (string, error) {
		_, err := ap.Manage.ResendVerification(r.Context(), p, id, manageEvent(r))
		return "admin.manage.verification.done", err
	})
}

// ---- creating a user ----

// newUserView is what admin_user_new.html reads.
type newUserView struct {
	Form    userForm
	Locales []web.Choice
}

// FieldErr is the error of field in the refused form, "" for none.
func (v newUserView) FieldErr(field string) string {
	if v.Form.Err.Is(field) {
		return v.Form.Err.Text
	}
	return ""
}

// Value is the value of field sent with the refused form.
func (v newUserView) Value(field string) string {
	if v.Form.Input == nil {
		return ""
	}
	return v.Form.Input.Get(field)
}

// NewUser is GET /admin/users/new, the form of POST /v1/admin/users.
func (ap *UserPages) NewUser(w http.ResponseWriter, r *http.Request) {
	ap.renderNew(w, r, http.StatusOK, "", userForm{})
}

// renderNew draws the form with errText above it and the refused form f.
func (ap *UserPages) renderNew(w http.ResponseWriter, r *http.Request, status int, errText string, f userForm) {
	t := web.Translator(ap.H.UserLanguage(r, authn.From(r.Context())))
	v := newUserView{Form: f}
	var err error
	if v.Locales, err = ap.localeChoices(r.Context(), t, f.Input.Get("locale")); err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	ap.H.Console(w, r, status, "admin_user_new", web.ConsoleView{Title: "admin.manage.new.title", Section: "users", Error: errText, Data: v})
}

// CreateUser is POST /admin/users (POST /v1/admin/users): the browser goes
// on to the new user's page.
func (ap *UserPages) CreateUser(w http.ResponseWriter, r *http.Request) {
	var id string
	ap.H.Act(w, r, web.Action{Form: "new",
		Call: func(p *authn.Principal) (string, error) {
			// The password goes to the service whatever "how" says: a
			// password typed while "invite" stays chosen is refused there
			// with its field named, never dropped (the page's script
			// chooses "set a password" as soon as one is typed).
			in := useradmin.NewUser{Email: r.PostFormValue("email"), Username: r.PostFormValue("username"),
				Locale: r.PostFormValue("locale"), Invite: r.PostFormValue("how") == "invite", Password: r.PostFormValue("password")}
			u, err := ap.Manage.Create(r.Context(), p, in, manageEvent(r))
			id = u.ID
			return "", err
		},
		Answer: func() { ap.H.Done(w, r, userPath(id), ap.createdFlash(r)) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := ap.H.FormRefusal(w, r, err, "admin.user.fixfield")
			ap.renderNew(w, r, status, text, userForm{Name: "new", Input: r.PostForm, Err: fe})
		}})
}

// createdFlash is the flash after a creation: an invitation was mailed, or
// the user signs in with the password given.
func (ap *UserPages) createdFlash(r *http.Request) string {
	if r.PostFormValue("how") == "invite" {
		return "admin.manage.new.invited"
	}
	return "admin.manage.new.done"
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.manage.title":               "Sign-in and email",
			"admin.manage.address":             "Signs in with",
			"admin.manage.verified":            "Verified",
			"admin.manage.unverified":          "Not verified",
			"admin.manage.nopassword":          "No password yet",
			"admin.manage.unverifiedhelp":      "Until the address is verified, a sign-in with a provider that vouches for it may take the address over. Mail the user a new link, or mark it verified if the owner proved it to you another way.",
			"admin.manage.resend":              "Mail a new verification link",
			"admin.manage.markverified":        "Mark as verified",
			"admin.manage.nosignin":            "This user has no email sign-in: they sign in with a provider only.",
			"admin.manage.edit":                "Username, email and language",
			"admin.manage.emailhelp":           "A new address becomes the user's sign-in and is unverified until its owner follows the link you can mail.",
			"admin.manage.lang.none":           "Not set (English)",
			"admin.manage.lang.en":             "English",
			"admin.manage.lang.de":             "German",
			"admin.manage.save":                "Save",
			"admin.manage.password":            "Password",
			"admin.manage.passwordhelp":        "Setting a password signs the user out everywhere and ends the tokens of their apps. Tell them the new password on a safe way, or mail them a link to choose one themself.",
			"admin.manage.passwordconfirm":     "Set this password and sign the user out everywhere?",
			"admin.manage.newpassword":         "New password",
			"admin.manage.setpassword":         "Set password",
			"admin.manage.resethelp":           "The user gets a link to choose a new password; it works for one hour.",
			"admin.manage.invitehelp":          "The user has no password yet. They get a new invitation to choose one; it works for 7 days.",
			"admin.manage.sendreset":           "Mail a reset link",
			"admin.manage.sendinvite":          "Mail the invitation again",
			"admin.manage.profile.done":        "The changes were saved.",
			"admin.manage.password.done":       "The password was set. The user was signed out everywhere.",
			"admin.manage.reset.done":          "The link was mailed to the user.",
			"admin.manage.verified.done":       "The address is marked verified.",
			"admin.manage.verification.done":   "A new verification link was mailed; it works for 24 hours.",
			"admin.manage.new.title":           "Create a user",
			"admin.manage.new.intro":           "The user signs in with their email address. Invite them to choose their password, or set one now and tell them.",
			"admin.manage.new.username":        "Username (optional)",
			"admin.manage.new.usernamehelp":    "3 to 30 letters, digits or underscores. Leave empty to derive one from the address.",
			"admin.manage.new.how":             "Password",
			"admin.manage.new.invite":          "Mail an invitation",
			"admin.manage.new.invitehelp":      "The user gets a link to choose their password, valid for 7 days. Following it verifies the address.",
			"admin.manage.new.setpassword":     "Set a password now",
			"admin.manage.new.setpasswordhelp": "The user can sign in at once and gets a link that verifies the address.",
			"admin.manage.new.password":        "Password (only when you set one now)",
			"admin.manage.new.passwordhelp":    "At least 8 characters.",
			"admin.manage.new.submit":          "Create user",
			"admin.manage.new.back":            "Back to the users",
			"admin.manage.new.done":            "The user was created and can sign in with the password you set.",
			"admin.manage.new.invited":         "The user was created and an invitation was mailed.",
			"admin.userlist.new":               "Create a user",
		},
		"de": {
			"admin.manage.title":               "Anmeldung und E-Mail",
			"admin.manage.address":             "Meldet sich an mit",
			"admin.manage.verified":            "Bestätigt",
			"admin.manage.unverified":          "Nicht bestätigt",
			"admin.manage.nopassword":          "Noch kein Passwort",
			"admin.manage.unverifiedhelp":      "Solange die Adresse nicht bestätigt ist, kann eine Anmeldung über einen Anbieter, der sie bestätigt, die Adresse übernehmen. Senden Sie dem Benutzer einen neuen Link, oder markieren Sie sie als bestätigt, wenn der Inhaber sie Ihnen anders nachgewiesen hat.",
			"admin.manage.resend":              "Neuen Bestätigungslink senden",
			"admin.manage.markverified":        "Als bestätigt markieren",
			"admin.manage.nosignin":            "Dieser Benutzer hat keine Anmeldung per E-Mail: Er meldet sich nur über einen Anbieter an.",
			"admin.manage.edit":                "Benutzername, E-Mail und Sprache",
			"admin.manage.emailhelp":           "Eine neue Adresse wird zur Anmeldung des Benutzers und ist unbestätigt, bis ihr Inhaber dem Link folgt, den Sie senden können.",
			"admin.manage.lang.none":           "Nicht gesetzt (Englisch)",
			"admin.manage.lang.en":             "Englisch",
			"admin.manage.lang.de":             "Deutsch",
			"admin.manage.save":                "Speichern",
			"admin.manage.password":            "Passwort",
			"admin.manage.passwordhelp":        "Ein gesetztes Passwort meldet den Benutzer überall ab und beendet die Tokens seiner Apps. Teilen Sie ihm das neue Passwort auf sicherem Weg mit, oder senden Sie ihm einen Link, mit dem er selbst eines wählt.",
			"admin.manage.passwordconfirm":     "Dieses Passwort setzen und den Benutzer überall abmelden?",
			"admin.manage.newpassword":         "Neues Passwort",
			"admin.manage.setpassword":         "Passwort setzen",
			"admin.manage.resethelp":           "Der Benutzer erhält einen Link, um ein neues Passwort zu wählen; er gilt eine Stunde.",
			"admin.manage.invitehelp":          "Der Benutzer hat noch kein Passwort. Er erhält eine neue Einladung, um eines zu wählen; sie gilt 7 Tage.",
			"admin.manage.sendreset":           "Link zum Zurücksetzen senden",
			"admin.manage.sendinvite":          "Einladung erneut senden",
			"admin.manage.profile.done":        "Die Änderungen wurden gespeichert.",
			"admin.manage.password.done":       "Das Passwort wurde gesetzt. Der Benutzer wurde überall abgemeldet.",
			"admin.manage.reset.done":          "Der Link wurde an den Benutzer gesendet.",
			"admin.manage.verified.done":       "Die Adresse ist als bestätigt markiert.",
			"admin.manage.verification.done":   "Ein neuer Bestätigungslink wurde gesendet; er gilt 24 Stunden.",
			"admin.manage.new.title":           "Benutzer anlegen",
			"admin.manage.new.intro":           "Der Benutzer meldet sich mit seiner E-Mail-Adresse an. Laden Sie ihn ein, sein Passwort zu wählen, oder setzen Sie jetzt eines und teilen es ihm mit.",
			"admin.manage.new.username":        "Benutzername (optional)",
			"admin.manage.new.usernamehelp":    "3 bis 30 Buchstaben, Ziffern oder Unterstriche. Leer lassen, um ihn aus der Adresse abzuleiten.",
			"admin.manage.new.how":             "Passwort",
			"admin.manage.new.invite":          "Einladung senden",
			"admin.manage.new.invitehelp":      "Der Benutzer erhält einen Link, um sein Passwort zu wählen, gültig 7 Tage. Ihm zu folgen bestätigt die Adresse.",
			"admin.manage.new.setpassword":     "Jetzt ein Passwort setzen",
			"admin.manage.new.setpasswordhelp": "Der Benutzer kann sich sofort anmelden und erhält einen Link, der die Adresse bestätigt.",
			"admin.manage.new.password":        "Passwort (nur wenn Sie jetzt eines setzen)",
			"admin.manage.new.passwordhelp":    "Mindestens 8 Zeichen.",
			"admin.manage.new.submit":          "Benutzer anlegen",
			"admin.manage.new.back":            "Zurück zu den Benutzern",
			"admin.manage.new.done":            "Der Benutzer wurde angelegt und kann sich mit dem gesetzten Passwort anmelden.",
			"admin.manage.new.invited":         "Der Benutzer wurde angelegt und eine Einladung gesendet.",
			"admin.userlist.new":               "Benutzer anlegen",
		},
	})
}
