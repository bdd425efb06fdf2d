package account

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/geoip"
	"hmid/internal/sessions"
	"hmid/internal/web"
)

// SessionPages is /account/sessions: where the user is signed in, with
// revocation of one session or of all others. It calls sessions.Service,
// as GET and DELETE /v1/users/me/sessions do.
type SessionPages struct {
	H        *web.Handler
	Sessions *sessions.Service
	// GeoIP places session addresses (nil: no database configured).
	GeoIP *geoip.Resolver
}

// sessionRow is one session as the page shows it.
type sessionRow struct {
	sessions.Session
	Place string // "City, Country" when geolocation knows the address
}

// List is GET /account/sessions.
func (sp *SessionPages) List(w http.ResponseWriter, r *http.Request) {
	sp.render(w, r, http.StatusOK, "")
}

func (sp *SessionPages) render(w http.ResponseWriter, r *http.Request, status int, errText string) {
	p := authn.From(r.Context())
	list, err := sp.Sessions.List(r.Context(), p)
	if err != nil {
		sp.H.Fail(w, r, err)
		return
	}
	rows := make([]sessionRow, len(list))
	for i, s := range list {
		rows[i] = sessionRow{Session: s}
		if loc := sp.GeoIP.Lookup(s.IPAddress); !loc.IsZero() {
			rows[i].Place = web.JoinNonEmpty(", ", loc.City, loc.CountryName)
		}
	}
	sp.H.Console(w, r, status, "account_sessions", web.ConsoleView{Title: "title.sessions", Section: "sessions", Error: errText, Data: rows})
}

// act runs a page action of the sessions page, which the browser is sent
// back to; a refusal shows above the list. The session of this very
// browser is refused with the page's own sentence (log out instead).
func (sp *SessionPages) act(w http.ResponseWriter, r *http.Request, call func(p *authn.Principal) (string, error)) {
	sp.H.Act(w, r, web.Action{To: "/account/sessions", Call: call,
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			if errors.Is(err, sessions.ErrCurrent) {
				sp.render(w, r, http.StatusBadRequest, web.Translator(sp.H.UserLanguage(r, authn.From(r.Context())))("sessions.current"))
				return
			}
			status, text := sp.H.PageRefusal(w, r, err)
			sp.render(w, r, status, text)
		}})
}

// Revoke is POST /account/sessions/{id}/revoke.
func (sp *SessionPages) Revoke(w http.ResponseWriter, r *http.Request) {
	sp.act(w, r, func(p *authn.Principal) (string, error) {
		return "sessions.revoked", sp.Sessions.Revoke(r.Context(), p, chi.URLParam(r, "id"), audit.FromRequest(r, audit.Event{SourceService: web.Source}))
	})
}

// RevokeOthers is POST /account/sessions/revoke-others.
func (sp *SessionPages) RevokeOthers(w http.ResponseWriter, r *http.Request) {
	sp.act(w, r, func(p *authn.Principal) (string, error) {
		_, err := sp.Sessions.RevokeOthers(r.Context(), p, audit.FromRequest(r, audit.Event{SourceService: web.Source}))
		return "sessions.revokedothers", err
	})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.sessions":         "Where you are signed in",
			"sessions.intro":         "These devices and browsers are signed in to your account. Revoke any you do not recognize, then change your password.",
			"sessions.revokeothers":  "Sign out everywhere else",
			"sessions.revokeconfirm": "Sign out all other sessions?",
			"sessions.none":          "You are signed in only here.",
			"sessions.revoked":       "The session was revoked. That device is signed out.",
			"sessions.revokedothers": "All other sessions were revoked.",
		},
		"de": {
			"title.sessions":         "Wo Sie angemeldet sind",
			"sessions.intro":         "Diese Geräte und Browser sind bei Ihrem Konto angemeldet. Beenden Sie Sitzungen, die Sie nicht kennen, und ändern Sie dann Ihr Passwort.",
			"sessions.revokeothers":  "Überall sonst abmelden",
			"sessions.revokeconfirm": "Alle anderen Sitzungen beenden?",
			"sessions.none":          "Sie sind nur hier angemeldet.",
			"sessions.revoked":       "Die Sitzung wurde beendet. Das Gerät ist abgemeldet.",
			"sessions.revokedothers": "Alle anderen Sitzungen wurden beendet.",
		},
	})
}
