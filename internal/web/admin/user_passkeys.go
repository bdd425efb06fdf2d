package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/authn"
	"hmid/internal/passkey"
	"hmid/internal/web"
)

// The passkey section of the admin user page: the user's passkeys (names,
// kind, dates; never key material), each removable by an operator with
// users:write, the rule of DELETE /v1/users/{id}/passkeys/{passkey_id}.

// passkeys fills the section.
func (ap *UserPages) passkeys(r *http.Request, v *adminUserView) error {
	if ap.Passkeys == nil {
		return nil
	}
	list, err := ap.Passkeys.List(r.Context(), v.User.ID)
	v.Passkeys = list
	return err
}

// RemovePasskey is POST /admin/users/{id}/passkeys/{passkey_id}/remove.
func (ap *UserPages) RemovePasskey(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "passkeys", false, func(p *authn.Principal, id string) (string, error) {
		e := ap.event(r)
		c := passkey.Client{IPAddress: e.IPAddress, UserAgent: e.UserAgent, SourceService: e.SourceService}
		return "admin.user.pk.removed", ap.Passkeys.Remove(r.Context(), p.UserID, id, chi.URLParam(r, "passkey_id"), c)
	})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.user.pk":         "Passkeys",
			"admin.user.pk.name":    "Name",
			"admin.user.pk.kind":    "Kind",
			"admin.user.pk.added":   "Added",
			"admin.user.pk.used":    "Last used",
			"admin.user.pk.never":   "Never",
			"admin.user.pk.synced":  "Synced",
			"admin.user.pk.device":  "Bound to its device",
			"admin.user.pk.remove":  "Remove",
			"admin.user.pk.confirm": "Remove this passkey? The user can no longer sign in with it, and gets a mail.",
			"admin.user.pk.removed": "The passkey was removed; the user was told by mail.",
		},
		"de": {
			"admin.user.pk":         "Passkeys",
			"admin.user.pk.name":    "Name",
			"admin.user.pk.kind":    "Art",
			"admin.user.pk.added":   "Hinzugefügt",
			"admin.user.pk.used":    "Zuletzt verwendet",
			"admin.user.pk.never":   "Nie",
			"admin.user.pk.synced":  "Synchronisiert",
			"admin.user.pk.device":  "An sein Gerät gebunden",
			"admin.user.pk.remove":  "Entfernen",
			"admin.user.pk.confirm": "Diesen Passkey entfernen? Die Person kann sich dann nicht mehr damit anmelden und erhält eine E-Mail.",
			"admin.user.pk.removed": "Der Passkey wurde entfernt; die Person wurde per E-Mail benachrichtigt.",
		},
	})
}
