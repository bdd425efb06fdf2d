package account

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/integrations"
	"hmid/internal/web"
)

// IntegrationPages is /account/integrations: the user's accounts on the
// streaming platform (spec 3, Platform integrations) with connect, bot
// status, token refresh, channel statistics and disconnect. It calls
// integrations.Service, as the /v1/integrations routes do.
type IntegrationPages struct {
	H            *web.Handler
	Integrations *integrations.Service
}

// integrationRow is one connected account as the page shows it.
type integrationRow struct {
	integrations.Integration
	Scopes    []string // the granted scopes in words
	BotStatus []web.Choice
	// Stats are the channel statistics just read (only on the answer to
	// "Show statistics": they are read live and never stored).
	Stats *integrations.Stats
}

// integrationsView is the page's data.
type integrationsView struct {
	Enabled      bool
	Integrations []integrationRow
	Optional     []web.Choice // optional scopes offered on connect
	Required     []string     // scopes always asked for, in words
	Connected    string       // the account just connected (callback's integration_id)
	// Failed is the connection the platform refused (callback's error).
	Failed   string
	Callback string // the callback URL an operator registers at the platform
}

// List is GET /account/integrations. The REST callback of a connection
// started here returns to it with integration_id or error in the query.
func (ip *IntegrationPages) List(w http.ResponseWriter, r *http.Request) {
	ip.render(w, r, http.StatusOK, "", "", nil)
}

// render shows the page; statsFor and stats are the statistics just read
// for one integration.
func (ip *IntegrationPages) render(w http.ResponseWriter, r *http.Request, status int, errText, statsFor string, stats *integrations.Stats) {
	ctx := r.Context()
	t := web.Translator(ip.H.UserLanguage(r, authn.From(ctx)))
	list, err := ip.Integrations.List(ctx, integrations.Slug)
	if err != nil {
		ip.H.Fail(w, r, err)
		return
	}
	v := integrationsView{Enabled: ip.Integrations.Enabled(), Callback: ip.Integrations.PublicURL + "/v1/integrations/callback/" + integrations.Slug}
	q := r.URL.Query()
	if r.Method == http.MethodGet {
		if e := q.Get("error"); e != "" {
			v.Failed = t("integrations.refused")
			if e == "access_denied" {
				// RFC 6749 §4.1.2.1: the user or the platform declined.
				v.Failed = t("integrations.declined")
			}
		}
	}
	for _, i := range list {
		row := integrationRow{Integration: i}
		for _, sc := range i.Scopes {
			row.Scopes = append(row.Scopes, platformScopeText(t, sc))
		}
		for _, b := range integrations.BotStatuses {
			row.BotStatus = append(row.BotStatus, web.Choice{Value: b, Label: t("integrations.bot." + b), Selected: b == i.BotStatus})
		}
		if i.ID == statsFor {
			row.Stats = stats
		}
		if r.Method == http.MethodGet && q.Get("integration_id") == i.ID {
			v.Connected = web.JoinNonEmpty(" ", web.Deref(i.DisplayName), "("+i.Username+")")
		}
		v.Integrations = append(v.Integrations, row)
	}
	for _, sc := range integrations.Scopes {
		if sc.Required {
			v.Required = append(v.Required, platformScopeText(t, sc.Name))
		} else {
			v.Optional = append(v.Optional, web.Choice{Value: sc.Name, Label: platformScopeText(t, sc.Name)})
		}
	}
	ip.H.Console(w, r, status, "account_integrations", web.ConsoleView{Title: "title.integrations", Section: "integrations", Error: errText, Data: &v})
}

// platformScopeText is a streaming-platform scope in words, or its name when the page has none.
func platformScopeText(t func(string) string, name string) string {
	key := "integrations.scope." + name
	if !web.HasText(key) {
		return name
	}
	return t(key)
}

// fail shows a refused action on the page with its status. A BadRequest
// (an inactive integration, a token the platform refused) keeps the
// service's reason, which says what to do: renew or connect again.
func (ip *IntegrationPages) Fail(w http.ResponseWriter, r *http.Request, err error) {
	var inv *web.Invalid
	if errors.As(err, &inv) {
		status, text := ip.H.PageRefusal(w, r, err)
		ip.render(w, r, status, text, "", nil)
		return
	}
	text := ip.H.ErrorText(r, err)
	if apperr.KindOf(err) == apperr.BadRequest {
		var e *apperr.Error
		if errors.As(err, &e) {
			text = web.Translator(ip.H.UserLanguage(r, authn.From(r.Context())))("integrations.failed") + " " + e.Message
		}
	}
	ip.render(w, r, ip.H.Status(w, err), text, "", nil)
}

// act runs a page action on an integration that ends on this page.
func (ip *IntegrationPages) act(w http.ResponseWriter, r *http.Request, a web.Action) {
	a.To = "/account/integrations"
	a.Refuse = func(w http.ResponseWriter, r *http.Request, _ string, err error) { ip.Fail(w, r, err) }
	ip.H.Act(w, r, a)
}

// Connect is POST /account/integrations/connect: it starts the platform's
// OAuth flow as POST /v1/integrations/platform/{slug}/connect does, and
// sends the browser to the platform, which returns it to this page.
func (ip *IntegrationPages) Connect(w http.ResponseWriter, r *http.Request) {
	if ip.H.ConsolePost(w, r) == nil {
		return
	}
	authURL, _, err := ip.Integrations.Connect(r.Context(), integrations.Slug, ip.H.PublicURL+"/account/integrations", r.PostForm["scope"])
	if err != nil {
		ip.Fail(w, r, err)
		return
	}
	ip.H.Redirect(w, r, authURL)
}

// Refresh is POST /account/integrations/{id}/refresh.
func (ip *IntegrationPages) Refresh(w http.ResponseWriter, r *http.Request) {
	ip.act(w, r, web.Action{Call: func(*authn.Principal) (string, error) {
		_, err := ip.Integrations.Refresh(r.Context(), chi.URLParam(r, "id"))
		return "integrations.refreshed", err
	}})
}

// Stats is POST /account/integrations/{id}/stats: the statistics are read
// now from the platform and shown in the answer itself (they are not
// stored, so there is nothing to redirect to).
func (ip *IntegrationPages) Stats(w http.ResponseWriter, r *http.Request) {
	if ip.H.ConsolePost(w, r) == nil {
		return
	}
	id := chi.URLParam(r, "id")
	st, err := ip.Integrations.Stats(r.Context(), id)
	if err != nil {
		ip.Fail(w, r, err)
		return
	}
	ip.render(w, r, http.StatusOK, "", id, &st)
}

// BotStatus is POST /account/integrations/{id}/bot-status.
func (ip *IntegrationPages) BotStatus(w http.ResponseWriter, r *http.Request) {
	ip.act(w, r, web.Action{Call: func(*authn.Principal) (string, error) {
		var status *string
		if vals, ok := r.PostForm["bot_status"]; ok && len(vals) > 0 {
			status = &vals[0]
		}
		return "integrations.botsaved", ip.Integrations.SetBotStatus(r.Context(), chi.URLParam(r, "id"), status)
	}})
}

// Disconnect is POST /account/integrations/{id}/disconnect. The form's
// confirmation box must be ticked (the script's dialog is only a
// convenience), so a stray submit deletes nothing.
func (ip *IntegrationPages) Disconnect(w http.ResponseWriter, r *http.Request) {
	ip.act(w, r, web.Action{Confirm: "confirm", Unconfirmed: "integrations.confirmfirst",
		Call: func(*authn.Principal) (string, error) {
			return "integrations.disconnected", ip.Integrations.Disconnect(r.Context(), chi.URLParam(r, "id"))
		}})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.integrations":                            "Streaming integrations",
			"integrations.intro":                            "Connect your channel on the streaming platform to see its statistics here and let the chat bot work in your chat.",
			"integrations.notconfigured":                    "Connecting is not possible on this server: the streaming platform is not configured.",
			"integrations.notconfigured.admin":              "For the operator: set HMID_STREAMPLATFORM_CLIENT_ID and HMID_STREAMPLATFORM_CLIENT_SECRET to the platform app's credentials, and register this callback URL with the app:",
			"integrations.connect":                          "Connect an account",
			"integrations.connect.help":                     "You will be sent to the streaming platform to allow access, then back here.",
			"integrations.connect.required":                 "Always asked for:",
			"integrations.connect.optional":                 "Also allow (optional):",
			"integrations.connect.submit":                   "Connect streaming account",
			"integrations.connected":                        "Your streaming account %s is connected.",
			"integrations.declined":                         "Connecting was cancelled: access was not allowed on the streaming platform.",
			"integrations.refused":                          "The streaming platform did not connect the account. Please try again.",
			"integrations.none":                             "No streaming account is connected yet.",
			"integrations.active":                           "Active",
			"integrations.inactive":                         "Inactive: connect the account again",
			"integrations.since":                            "Connected %s",
			"integrations.lastrefresh":                      "Token last renewed %s",
			"integrations.scopes":                           "Allowed access",
			"integrations.bot":                              "Chat bot",
			"integrations.bot.active":                       "On: the bot works in your chat",
			"integrations.bot.paused":                       "Paused",
			"integrations.bot.disabled":                     "Off",
			"integrations.bot.save":                         "Save bot setting",
			"integrations.botsaved":                         "The chat bot setting was saved.",
			"integrations.refresh":                          "Renew token",
			"integrations.refreshed":                        "The access token was renewed.",
			"integrations.stats":                            "Show statistics",
			"integrations.stats.title":                      "Channel statistics",
			"integrations.stats.followers":                  "Followers",
			"integrations.stats.subscribers":                "Subscribers",
			"integrations.stats.live":                       "Live now",
			"integrations.stats.offline":                    "Offline",
			"integrations.stats.viewers":                    "Viewers",
			"integrations.stats.stream":                     "Stream",
			"integrations.stats.at":                         "Read %s",
			"integrations.disconnect":                       "Disconnect",
			"integrations.disconnect.confirm":               "Disconnect this streaming account? Its statistics and the chat bot stop working.",
			"integrations.disconnect.check":                 "Yes, disconnect this account",
			"integrations.confirmfirst":                     "Tick the box to confirm that the account should be disconnected.",
			"integrations.disconnected":                     "The streaming account was disconnected.",
			"integrations.failed":                           "That did not work:",
			"integrations.scope.user:read:email":            "Read the account's email address",
			"integrations.scope.moderator:read:followers":   "Read your channel's followers",
			"integrations.scope.channel:read:subscriptions": "Read your channel's subscribers",
			"integrations.scope.chat:read":                  "Read your chat (chat bot)",
			"integrations.scope.chat:edit":                  "Write in your chat (chat bot)",
		},
		"de": {
			"title.integrations":                            "Streaming-Integrationen",
			"integrations.intro":                            "Verbinden Sie Ihren Kanal auf der Streaming-Plattform, um hier seine Statistik zu sehen und den Chat-Bot in Ihrem Chat arbeiten zu lassen.",
			"integrations.notconfigured":                    "Verbinden ist auf diesem Server nicht möglich: Die Streaming-Plattform ist nicht eingerichtet.",
			"integrations.notconfigured.admin":              "Für den Betrieb: Setzen Sie HMID_STREAMPLATFORM_CLIENT_ID und HMID_STREAMPLATFORM_CLIENT_SECRET auf die Zugangsdaten der Plattform-App und tragen Sie diese Callback-URL bei der App ein:",
			"integrations.connect":                          "Konto verbinden",
			"integrations.connect.help":                     "Sie werden zur Streaming-Plattform geleitet, um den Zugriff zu erlauben, und dann hierher zurück.",
			"integrations.connect.required":                 "Wird immer angefragt:",
			"integrations.connect.optional":                 "Außerdem erlauben (optional):",
			"integrations.connect.submit":                   "Streaming-Konto verbinden",
			"integrations.connected":                        "Ihr Streaming-Konto %s ist verbunden.",
			"integrations.declined":                         "Das Verbinden wurde abgebrochen: Der Zugriff wurde auf der Streaming-Plattform nicht erlaubt.",
			"integrations.refused":                          "Die Streaming-Plattform hat das Konto nicht verbunden. Bitte versuchen Sie es erneut.",
			"integrations.none":                             "Noch ist kein Streaming-Konto verbunden.",
			"integrations.active":                           "Aktiv",
			"integrations.inactive":                         "Inaktiv: Verbinden Sie das Konto erneut",
			"integrations.since":                            "Verbunden seit %s",
			"integrations.lastrefresh":                      "Token zuletzt erneuert %s",
			"integrations.scopes":                           "Erlaubter Zugriff",
			"integrations.bot":                              "Chat-Bot",
			"integrations.bot.active":                       "An: Der Bot arbeitet in Ihrem Chat",
			"integrations.bot.paused":                       "Pausiert",
			"integrations.bot.disabled":                     "Aus",
			"integrations.bot.save":                         "Bot-Einstellung speichern",
			"integrations.botsaved":                         "Die Einstellung des Chat-Bots wurde gespeichert.",
			"integrations.refresh":                          "Token erneuern",
			"integrations.refreshed":                        "Das Zugriffstoken wurde erneuert.",
			"integrations.stats":                            "Statistik anzeigen",
			"integrations.stats.title":                      "Kanalstatistik",
			"integrations.stats.followers":                  "Follower",
			"integrations.stats.subscribers":                "Abonnenten",
			"integrations.stats.live":                       "Jetzt live",
			"integrations.stats.offline":                    "Offline",
			"integrations.stats.viewers":                    "Zuschauer",
			"integrations.stats.stream":                     "Stream",
			"integrations.stats.at":                         "Abgerufen %s",
			"integrations.disconnect":                       "Trennen",
			"integrations.disconnect.confirm":               "Dieses Streaming-Konto trennen? Statistik und Chat-Bot funktionieren dann nicht mehr.",
			"integrations.disconnect.check":                 "Ja, dieses Konto trennen",
			"integrations.confirmfirst":                     "Kreuzen Sie das Kästchen an, um zu bestätigen, dass das Konto getrennt werden soll.",
			"integrations.disconnected":                     "Das Streaming-Konto wurde getrennt.",
			"integrations.failed":                           "Das hat nicht geklappt:",
			"integrations.scope.user:read:email":            "Die E-Mail-Adresse des Kontos lesen",
			"integrations.scope.moderator:read:followers":   "Die Follower Ihres Kanals lesen",
			"integrations.scope.channel:read:subscriptions": "Die Abonnenten Ihres Kanals lesen",
			"integrations.scope.chat:read":                  "Ihren Chat lesen (Chat-Bot)",
			"integrations.scope.chat:edit":                  "In Ihrem Chat schreiben (Chat-Bot)",
		},
	})
}
