package admin

import (
	"net/http"
	"net/url"
	"strings"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/mail"
	"hmid/internal/web"
)

// MailPages is /admin/mail (issue 22): while hmid has no SMTP server, the
// mails it would have sent are kept in the outbox table, and this page
// shows them to super admins (recipient, subject, time and the text with
// its links), so a newcomer can follow a verification or invitation link
// without a database client. The route exists only without SMTP
// (internal/app/routes.go); the mails hold live links, hence super admins
// only.
type MailPages struct {
	H  *web.Handler
	DB *db.DB
}

// mailView is what admin_mail.html reads.
type mailView struct {
	To     string
	Mails  []mail.Kept
	Total  string
	From   string
	ToN    string
	Pager  web.Pager
	Filter bool
}

// List is GET /admin/mail, with to (an address) and page.
func (mp *MailPages) List(w http.ResponseWriter, r *http.Request) {
	lang := mp.H.UserLanguage(r, authn.From(r.Context()))
	q := r.URL.Query()
	to := strings.TrimSpace(q.Get("to"))
	pg := httpx.ParsePageValues(q.Get("page"), q.Get("limit"), 20)
	list, total, err := mail.Outbox(r.Context(), mp.DB, to, pg.Limit, pg.Offset())
	if err != nil {
		mp.H.Fail(w, r, err)
		return
	}
	keep := url.Values{}
	if to != "" {
		keep.Set("to", to)
	}
	p := web.NewPager(pg, total, len(list), "/admin/mail", keep)
	p.PrevLabel, p.NextLabel = "admin.userlist.newer", "admin.userlist.older"
	v := mailView{To: to, Mails: list, Total: overviewNumber(lang, total), From: overviewNumber(lang, p.From), ToN: overviewNumber(lang, p.To), Pager: p, Filter: to != ""}
	mp.H.Console(w, r, http.StatusOK, "admin_mail", web.ConsoleView{Title: "admin.mail.title", Section: "mail", Data: &v})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.mail.title":       "Mail outbox",
			"admin.mail.intro":       "hmid has no SMTP server (HMID_SMTP_URL), so it sends no mail: it keeps each one here, newest first. The links in them work; treat them as secrets. With an SMTP server this page is gone.",
			"admin.mail.to":          "Recipient",
			"admin.mail.filter":      "Show",
			"admin.mail.all":         "Show all mails",
			"admin.mail.count":       "Mails %s–%s of %s",
			"admin.mail.none":        "No mail was kept yet.",
			"admin.mail.col.to":      "Recipient",
			"admin.mail.col.subject": "Subject",
			"admin.mail.col.time":    "Time",
			"admin.mail.body":        "Show the text",
			"admin.mail.pages":       "Pages of mails",
		},
		"de": {
			"admin.mail.title":       "Postausgang",
			"admin.mail.intro":       "hmid hat keinen SMTP-Server (HMID_SMTP_URL) und versendet daher keine E-Mails: Es bewahrt jede hier auf, die neueste zuerst. Die Links darin funktionieren; behandeln Sie sie als Geheimnisse. Mit einem SMTP-Server entfällt diese Seite.",
			"admin.mail.to":          "Empfänger",
			"admin.mail.filter":      "Zeigen",
			"admin.mail.all":         "Alle E-Mails zeigen",
			"admin.mail.count":       "E-Mails %s–%s von %s",
			"admin.mail.none":        "Es wurde noch keine E-Mail aufbewahrt.",
			"admin.mail.col.to":      "Empfänger",
			"admin.mail.col.subject": "Betreff",
			"admin.mail.col.time":    "Zeit",
			"admin.mail.body":        "Text zeigen",
			"admin.mail.pages":       "Seiten der E-Mails",
		},
	})
}
