package signin

import (
	"net/http"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/web"
)

// The setup page of the first administrator (package setup): the link the
// start prints while no super admin exists opens a form for an email
// address and a password, and its post creates the super admin.

// SetupForm is GET /setup?token=….
func (h *Pages) SetupForm(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimSpace(r.URL.Query().Get("token"))
	if err := h.Setup.Check(r.Context(), tok); err != nil {
		h.setupRefused(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, "setup", web.View{Title: "title.setup", CSRF: h.CSRFToken(w, r, "setup", ""), Token: tok})
}

// SetupSubmit is POST /setup: the token, an email address and the password
// twice.
func (h *Pages) SetupSubmit(w http.ResponseWriter, r *http.Request) {
	lang, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	email := r.PostFormValue("email")
	again := func(status int, msg string) {
		h.Render(w, r, status, "setup", web.View{Title: "title.setup", CSRF: h.CSRFToken(w, r, "setup", ""), Token: tok, Email: email, Error: msg})
	}
	if !h.tokenOK(r, "setup", again) {
		return
	}
	if r.PostFormValue("password") != r.PostFormValue("password_confirm") {
		again(http.StatusBadRequest, t("setup.mismatch"))
		return
	}
	a, err := h.Setup.CreateFirst(r.Context(), tok, email, r.PostFormValue("password"), audit.FromRequest(r, audit.Event{SourceService: web.Source}))
	switch {
	case apperr.KindOf(err) == apperr.BadRequest:
		h.setupRefused(w, r, err)
	case apperr.KindOf(err) == apperr.Conflict:
		again(http.StatusConflict, t("setup.taken"))
	case err != nil:
		again(h.Status(w, err), h.ErrorTextIn(r.Context(), lang, err))
	default:
		h.Message(w, r, http.StatusOK, "title.setup", web.Translator(lang)("setup.done")+" "+a.Email)
	}
}

// setupRefused answers a link that does not work (used, or an
// administrator exists): there is nothing to set up, the person signs in.
func (h *Pages) setupRefused(w http.ResponseWriter, r *http.Request, err error) {
	if apperr.KindOf(err) != apperr.BadRequest {
		h.Fail(w, r, err)
		return
	}
	h.Message(w, r, http.StatusBadRequest, "title.setup", web.Translator(web.Language(r))("setup.badlink"))
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.setup":    "Create the first administrator",
			"setup.intro":    "This server has no administrator yet. Choose the email address and the password you will sign in with; this account manages users, roles, apps and settings.",
			"setup.repeat":   "Repeat the password",
			"setup.submit":   "Create administrator",
			"setup.mismatch": "The two passwords differ. Type the same password twice.",
			"setup.taken":    "This email address belongs to an account already. Choose another one, or make that account an administrator from the shell: hmid admin create --email ADDRESS",
			"setup.badlink":  "This setup link does not work any more: it was used, or an administrator exists already. Sign in instead.",
			"setup.done":     "The administrator was created. Log in with its email address and password:",
		},
		"de": {
			"title.setup":    "Ersten Administrator anlegen",
			"setup.intro":    "Dieser Server hat noch keinen Administrator. Wählen Sie die E-Mail-Adresse und das Passwort, mit denen Sie sich anmelden; dieses Konto verwaltet Benutzer, Rollen, Apps und Einstellungen.",
			"setup.repeat":   "Passwort wiederholen",
			"setup.submit":   "Administrator anlegen",
			"setup.mismatch": "Die beiden Passwörter unterscheiden sich. Geben Sie zweimal dasselbe Passwort ein.",
			"setup.taken":    "Diese E-Mail-Adresse gehört schon zu einem Konto. Wählen Sie eine andere oder machen Sie dieses Konto in der Shell zum Administrator: hmid admin create --email ADRESSE",
			"setup.badlink":  "Dieser Einrichtungslink funktioniert nicht mehr: Er wurde benutzt, oder es gibt schon einen Administrator. Melden Sie sich stattdessen an.",
			"setup.done":     "Der Administrator wurde angelegt. Melden Sie sich mit seiner E-Mail-Adresse und seinem Passwort an:",
		},
	})
}
