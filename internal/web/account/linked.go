package account

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/accounts"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/web"
)

// LinkedPages is /account/linked: the accounts a person signs in with (the
// platform accounts of spec 2), which one is primary, unlinking with the
// spec's refusals said in words, and connecting another provider. It calls
// accounts.Service as GET, PUT …/primary and DELETE under
// /v1/users/{id}/accounts do; connecting posts to /login/{slug}
// (web.Handler.ProviderConnect), which comes back here.
type LinkedPages struct {
	H        *web.Handler
	Accounts *accounts.Service
}

// linkedPath is this page; connecting a provider returns to it.
const linkedPath = "/account/linked"

// linkedRow is one platform account as the page shows it.
type linkedRow struct {
	accounts.PlatformAccount
	// Refusal is the message key saying why the account cannot be
	// unlinked, "" when it can (accounts.UnlinkRefusal decides).
	Refusal string
}

// linkedView is the page's data.
type linkedView struct {
	Accounts []linkedRow
	// Providers are the configured and enabled providers to connect.
	Providers []web.ProviderButton
	ReturnTo  string
}

// refusalKeys are the words for the refusals of accounts.UnlinkRefusal.
var refusalKeys = []struct {
	err error
	key string
}{
	{accounts.ErrUnlinkEmail, "linked.refuse.email"},
	{accounts.ErrUnlinkLast, "linked.refuse.last"},
	{accounts.ErrUnlinkPrimary, "linked.refuse.primary"},
}

// refusalKey is the message key of an unlink refusal, "" for other errors.
func refusalKey(err error) string {
	for _, k := range refusalKeys {
		if errors.Is(err, k.err) {
			return k.key
		}
	}
	return ""
}

// List is GET /account/linked.
func (lp *LinkedPages) List(w http.ResponseWriter, r *http.Request) {
	lp.render(w, r, http.StatusOK, "")
}

func (lp *LinkedPages) render(w http.ResponseWriter, r *http.Request, status int, errText string) {
	p := authn.From(r.Context())
	list, err := lp.Accounts.Accounts(r.Context(), p.UserID)
	if err != nil {
		lp.H.Fail(w, r, err)
		return
	}
	v := linkedView{Accounts: make([]linkedRow, len(list)), Providers: lp.H.Connectable(r, authn.From(r.Context()).UserID), ReturnTo: linkedPath}
	for i, a := range list {
		v.Accounts[i] = linkedRow{PlatformAccount: a, Refusal: refusalKey(accounts.UnlinkRefusal(a, len(list)))}
	}
	lp.H.Console(w, r, status, "account_linked", web.ConsoleView{Title: "title.linked", Section: "linked", Error: errText, Data: v})
}

// act runs a page action of the linked-accounts page, which the browser
// is sent back to; a refusal shows above the list, an unlink the service
// refuses in the page's own words.
func (lp *LinkedPages) act(w http.ResponseWriter, r *http.Request, a web.Action) {
	a.To = linkedPath
	a.Refuse = func(w http.ResponseWriter, r *http.Request, _ string, err error) {
		status, text := lp.H.PageRefusal(w, r, err)
		if key := refusalKey(err); key != "" {
			text = web.Translator(lp.H.UserLanguage(r, authn.From(r.Context())))(key)
		}
		lp.render(w, r, status, text)
	}
	lp.H.Act(w, r, a)
}

// SetPrimary is POST /account/linked/{id}/primary: PUT
// /v1/users/{id}/accounts/{account_id}/primary.
func (lp *LinkedPages) SetPrimary(w http.ResponseWriter, r *http.Request) {
	lp.act(w, r, web.Action{Call: func(p *authn.Principal) (string, error) {
		_, err := lp.Accounts.SetPrimary(r.Context(), p.UserID, chi.URLParam(r, "id"), audit.FromRequest(r, audit.Event{SourceService: web.Source}))
		return "linked.primary.done", err
	}})
}

// Unlink is POST /account/linked/{id}/unlink: DELETE
// /v1/users/{id}/accounts/{account_id}, after the person ticked the
// confirmation (the page's script asks as well).
func (lp *LinkedPages) Unlink(w http.ResponseWriter, r *http.Request) {
	lp.act(w, r, web.Action{Confirm: "confirm", Unconfirmed: "linked.unlink.unconfirmed",
		Call: func(p *authn.Principal) (string, error) {
			return "linked.unlink.done", lp.Accounts.Unlink(r.Context(), p.UserID, chi.URLParam(r, "id"), audit.FromRequest(r, audit.Event{SourceService: web.Source}))
		}})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.linked":              "Linked accounts",
			"linked.intro":              "You can sign in with any of these accounts. The primary account is the one your profile names as your main sign-in.",
			"linked.account":            "Account",
			"linked.since":              "Connected",
			"linked.actions":            "Actions",
			"linked.primary":            "Primary",
			"linked.primary.make":       "Make primary",
			"linked.primary.done":       "The primary account was changed.",
			"linked.unlink":             "Unlink",
			"linked.unlink.confirm":     "Yes, unlink",
			"linked.unlink.ask":         "Unlink this account? You can no longer sign in with it.",
			"linked.unlink.unconfirmed": "Tick “Yes, unlink” to confirm, then press Unlink again.",
			"linked.unlink.done":        "The account was unlinked. You can no longer sign in with it.",
			"linked.refuse.email":       "Your email login cannot be unlinked: it holds your email address and password.",
			"linked.refuse.last":        "This is your only way to sign in, so it cannot be unlinked. Connect another account first.",
			"linked.refuse.primary":     "Your primary account cannot be unlinked. Make another account primary first.",
			"linked.connect":            "Connect another account",
			"linked.connect.help":       "You go to the provider to allow it, then come back here. After that you can sign in with that account too.",
			"linked.connect.none":       "No other sign-in providers are set up on this service.",
			"upstream.connect.taken":    "This %s account is already connected to another user, so it cannot be connected to yours. Sign in with it to use that user, or connect a different account.",
			"upstream.connect.second":   "Your account already has a %[1]s account connected, and it can have only one. To connect a different %[1]s account, unlink the one you have first.",
			"title.notconnected":        "Account not connected",
		},
		"de": {
			"title.linked":              "Verknüpfte Konten",
			"linked.intro":              "Sie können sich mit jedem dieser Konten anmelden. Das primäre Konto nennt Ihr Profil als Ihre Hauptanmeldung.",
			"linked.account":            "Konto",
			"linked.since":              "Verbunden seit",
			"linked.actions":            "Aktionen",
			"linked.primary":            "Primär",
			"linked.primary.make":       "Zum primären Konto machen",
			"linked.primary.done":       "Das primäre Konto wurde geändert.",
			"linked.unlink":             "Trennen",
			"linked.unlink.confirm":     "Ja, trennen",
			"linked.unlink.ask":         "Dieses Konto trennen? Sie können sich dann nicht mehr damit anmelden.",
			"linked.unlink.unconfirmed": "Setzen Sie das Häkchen bei „Ja, trennen“ und drücken Sie dann erneut auf „Trennen“.",
			"linked.unlink.done":        "Das Konto wurde getrennt. Sie können sich nicht mehr damit anmelden.",
			"linked.refuse.email":       "Ihre E-Mail-Anmeldung kann nicht getrennt werden: Sie enthält Ihre E-Mail-Adresse und Ihr Passwort.",
			"linked.refuse.last":        "Das ist Ihre einzige Anmeldemöglichkeit, daher kann sie nicht getrennt werden. Verbinden Sie zuerst ein weiteres Konto.",
			"linked.refuse.primary":     "Ihr primäres Konto kann nicht getrennt werden. Machen Sie zuerst ein anderes Konto zum primären.",
			"linked.connect":            "Weiteres Konto verbinden",
			"linked.connect.help":       "Sie werden zum Anbieter geleitet, um es zu erlauben, und kommen dann hierher zurück. Danach können Sie sich auch mit diesem Konto anmelden.",
			"linked.connect.none":       "Auf diesem Dienst sind keine weiteren Anmeldeanbieter eingerichtet.",
			"upstream.connect.taken":    "Dieses %s-Konto ist bereits mit einer anderen Person verbunden und kann daher nicht mit Ihrem Konto verbunden werden. Melden Sie sich damit an, um diese zu verwenden, oder verbinden Sie ein anderes Konto.",
			"upstream.connect.second":   "Mit Ihrem Konto ist bereits ein %[1]s-Konto verbunden, und es kann nur eines sein. Um ein anderes %[1]s-Konto zu verbinden, trennen Sie zuerst das vorhandene.",
			"title.notconnected":        "Konto nicht verbunden",
		},
	})
}
