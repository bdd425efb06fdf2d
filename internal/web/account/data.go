package account

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/clientinfo"
	"hmid/internal/deletion"
	"hmid/internal/export"
	"hmid/internal/web"
)

// DataPages is /account/data: the personal-data export (download and
// history) and the deletion of the account with its grace period. It calls
// export.Handler's Download and History, as GET /v1/user/export and
// /v1/user/export/logs do, and deletion.Service's Request and Cancel, as
// POST and DELETE /v1/users/me/deletion do.
type DataPages struct {
	H        *web.Handler
	Export   *export.Handler
	Deletion *deletion.Service
}

// historyShown is how many exports the page lists (the newest).
const historyShown = 10

// dataView is what account_data.html reads.
type dataView struct {
	Deletion deletion.Status
	// ConfirmWith is what a deletion is confirmed with (deletion.ConfirmWith).
	ConfirmWith string
	Exports     []exportRow
	Total       int
	// DeleteError is the refusal of the deletion form, shown at its fields.
	DeleteError string
	// GraceDays is the time between the request and the purge, in days.
	GraceDays int
}

// exportRow is one export of the history as the page shows it.
type exportRow struct {
	At     time.Time
	Size   string
	Client string // browser and system
	IP     string
}

// Show is GET /account/data.
func (dp *DataPages) Show(w http.ResponseWriter, r *http.Request) {
	dp.render(w, r, http.StatusOK, "", "")
}

func (dp *DataPages) render(w http.ResponseWriter, r *http.Request, status int, errText, deleteErr string) {
	dp.H.Show(w, r, status, "account_data", web.ConsoleView{Title: "title.data", Section: "data", Error: errText},
		func() (any, error) { return dp.view(r, deleteErr) })
}

// view is the signed-in user's deletion state and export history, with
// deleteErr at the deletion form.
func (dp *DataPages) view(r *http.Request, deleteErr string) (v dataView, err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	v = dataView{DeleteError: deleteErr, GraceDays: int(deletion.GracePeriod / (24 * time.Hour))}
	if v.Deletion, err = dp.Deletion.GetStatus(ctx, dp.Deletion.DB, p.UserID); err != nil {
		return v, err
	}
	if v.ConfirmWith, err = dp.Deletion.ConfirmWith(ctx, p.UserID); err != nil {
		return v, err
	}
	hist, err := dp.Export.History(ctx, p.UserID, historyShown, 0)
	if err != nil {
		return v, err
	}
	lang := dp.H.UserLanguage(r, p)
	v.Total = hist.Total
	for _, e := range hist.Logs {
		ci := clientinfo.Parse(e.UserAgent)
		v.Exports = append(v.Exports, exportRow{At: e.ExportedAt, Size: byteSize(lang, e.FileSizeBytes),
			Client: web.JoinNonEmpty(" · ", ci.Browser, ci.OS), IP: e.IPAddress})
	}
	return v, nil
}

// Download is GET /account/data/export: the ZIP archive, streamed as the
// REST route streams it. A failure before the first byte is shown on the page.
func (dp *DataPages) Download(w http.ResponseWriter, r *http.Request) {
	if err := dp.Export.Download(w, r); err != nil {
		dp.render(w, r, dp.H.Status(w, err), dp.H.ErrorText(r, err), "")
	}
}

// RequestDeletion is POST /account/data/deletion: the password (or, without
// one, a two-factor code) and a ticked box confirm it.
func (dp *DataPages) RequestDeletion(w http.ResponseWriter, r *http.Request) {
	// The box is the confirmation that works without script (the form's
	// data-confirm asks too when script runs).
	dp.H.Act(w, r, web.Action{To: "/account/data", Confirm: "confirm", Unconfirmed: "data.delete.tick",
		Call: func(p *authn.Principal) (string, error) {
			_, err := dp.Deletion.Request(r.Context(), audit.FromRequest(r, audit.Event{SourceService: web.Source}), p.UserID,
				deletion.Confirmation{Password: r.PostFormValue("password"), Code: r.PostFormValue("code")})
			return "data.delete.scheduled", err
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			t := web.Translator(dp.H.UserLanguage(r, authn.From(r.Context())))
			var inv *web.Invalid
			switch {
			case errors.As(err, &inv):
				dp.render(w, r, http.StatusBadRequest, "", t(inv.Key))
			case errors.Is(err, auth.ErrWrongConfirmation):
				dp.render(w, r, http.StatusBadRequest, "", t("data.delete.wrongpassword"))
			case apperr.KindOf(err) == apperr.Validation:
				// A missing or wrong code: shown at the field.
				dp.render(w, r, http.StatusBadRequest, "", dp.H.ErrorText(r, err))
			default:
				// Refusals of the request as a whole (no way to confirm, already
				// scheduled, too many attempts) are shown above the page.
				dp.render(w, r, dp.H.Status(w, err), dp.H.ErrorText(r, err), "")
			}
		}})
}

// CancelDeletion is POST /account/data/deletion/cancel.
func (dp *DataPages) CancelDeletion(w http.ResponseWriter, r *http.Request) {
	dp.H.Act(w, r, web.Action{To: "/account/data",
		Call: func(p *authn.Principal) (string, error) {
			return "data.delete.cancelled", dp.Deletion.Cancel(r.Context(), audit.FromRequest(r, audit.Event{SourceService: web.Source}), p.UserID)
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			dp.render(w, r, dp.H.Status(w, err), dp.H.ErrorText(r, err), "")
		}})
}

// byteSize writes n bytes for people: "812 B", "14.2 KB", "1.3 MB" (with a
// decimal comma in German).
func byteSize(lang string, n int64) string {
	var s string
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		s = fmt.Sprintf("%.1f KB", float64(n)/1024)
	default:
		s = fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
	}
	if lang == "de" {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.data":                "Your data",
			"data.export.title":         "Download your data",
			"data.export.intro":         "Get a copy of everything this service stores about you: your profile, linked accounts, connected apps, your own apps and API keys, roles, two-factor status, sessions and this export history. The ZIP file holds data.json (for programs), report.pdf (to read) and README.txt.",
			"data.export.button":        "Download ZIP",
			"data.history.title":        "Earlier downloads",
			"data.history.none":         "You have not downloaded your data yet.",
			"data.history.when":         "Date",
			"data.history.size":         "Size",
			"data.history.from":         "Downloaded from",
			"data.history.more":         "The newest %d of %d downloads.",
			"data.delete.title":         "Delete your account",
			"data.delete.intro":         "Your account and everything linked to it will be deleted permanently %d days after you ask. Until then you can keep using it and cancel at any time here. Consider downloading your data first.",
			"data.delete.password":      "Your password",
			"data.delete.code":          "Code from your authenticator app, or a backup code",
			"data.delete.codehelp":      "You sign in without a password, so your second factor confirms this.",
			"data.delete.check":         "I understand that my account and its data will be deleted permanently.",
			"data.delete.submit":        "Delete my account",
			"data.delete.confirm":       "Delete your account? It will be removed permanently after the grace period unless you cancel.",
			"data.delete.cannot":        "Your account has no password and no two-factor authentication, so there is nothing to confirm the deletion with. Turn on two-factor authentication first.",
			"data.delete.security":      "Go to security settings",
			"data.delete.tick":          "Tick the box to confirm that you want to delete your account.",
			"data.delete.wrongpassword": "The password is not correct.",
			"data.delete.scheduled":     "Your account is scheduled for deletion. You can cancel until the date shown.",
			"data.delete.cancelled":     "The deletion was cancelled. Your account stays.",
			"data.scheduled.title":      "Your account will be deleted",
			"data.scheduled.text":       "Your account and its data will be deleted permanently on %s. Until then you can use it as usual.",
			"data.scheduled.cancel":     "Cancel the deletion and keep my account",
		},
		"de": {
			"title.data":                "Ihre Daten",
			"data.export.title":         "Ihre Daten herunterladen",
			"data.export.intro":         "Erhalten Sie eine Kopie von allem, was dieser Dienst über Sie speichert: Ihr Profil, verknüpfte Konten, verbundene Apps, Ihre eigenen Apps und API-Schlüssel, Rollen, den Stand der Zwei-Faktor-Authentifizierung, Sitzungen und diesen Download-Verlauf. Die ZIP-Datei enthält data.json (für Programme), report.pdf (zum Lesen) und README.txt.",
			"data.export.button":        "ZIP herunterladen",
			"data.history.title":        "Frühere Downloads",
			"data.history.none":         "Sie haben Ihre Daten noch nicht heruntergeladen.",
			"data.history.when":         "Datum",
			"data.history.size":         "Größe",
			"data.history.from":         "Heruntergeladen von",
			"data.history.more":         "Die neuesten %d von %d Downloads.",
			"data.delete.title":         "Konto löschen",
			"data.delete.intro":         "Ihr Konto und alles, was damit verknüpft ist, wird %d Tage nach Ihrer Anfrage endgültig gelöscht. Bis dahin können Sie es weiter nutzen und die Löschung hier jederzeit abbrechen. Laden Sie Ihre Daten am besten vorher herunter.",
			"data.delete.password":      "Ihr Passwort",
			"data.delete.code":          "Code aus Ihrer Authenticator-App oder ein Backup-Code",
			"data.delete.codehelp":      "Sie melden sich ohne Passwort an, daher bestätigt Ihr zweiter Faktor diesen Schritt.",
			"data.delete.check":         "Mir ist klar, dass mein Konto und seine Daten endgültig gelöscht werden.",
			"data.delete.submit":        "Mein Konto löschen",
			"data.delete.confirm":       "Ihr Konto löschen? Es wird nach der Frist endgültig entfernt, wenn Sie nicht abbrechen.",
			"data.delete.cannot":        "Ihr Konto hat weder ein Passwort noch eine Zwei-Faktor-Authentifizierung, mit der Sie die Löschung bestätigen könnten. Schalten Sie zuerst die Zwei-Faktor-Authentifizierung ein.",
			"data.delete.security":      "Zu den Sicherheitseinstellungen",
			"data.delete.tick":          "Setzen Sie das Häkchen, um zu bestätigen, dass Sie Ihr Konto löschen möchten.",
			"data.delete.wrongpassword": "Das Passwort ist nicht richtig.",
			"data.delete.scheduled":     "Ihr Konto ist zur Löschung vorgemerkt. Sie können bis zum angezeigten Datum abbrechen.",
			"data.delete.cancelled":     "Die Löschung wurde abgebrochen. Ihr Konto bleibt bestehen.",
			"data.scheduled.title":      "Ihr Konto wird gelöscht",
			"data.scheduled.text":       "Ihr Konto und seine Daten werden am %s endgültig gelöscht. Bis dahin können Sie es wie gewohnt nutzen.",
			"data.scheduled.cancel":     "Löschung abbrechen und Konto behalten",
		},
	})
}
