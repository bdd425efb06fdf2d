package web

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
)

// The pages of one OAuth client and one API key are the same in both
// consoles: a user's own at /account/developer, every one at /admin/clients
// and /admin/api-keys. CredentialPages holds their forms and actions once;
// a CredentialSite says where a console keeps them and what it adds. Every
// action calls the service function its REST route calls (oauth.Service as
// /v1/oauth/clients does, access.Service as /v1/api-keys does), so the
// rules (ownership, first-party clients for super admins, scopes within
// the caller's own permissions) are the services' in both consoles. Client
// secrets and API keys are shown once, in the answer of the post that made
// them.

// CredentialSite is where a console keeps its client and key pages.
type CredentialSite struct {
	// Admin marks the admin console: the pages show the owner, offer the
	// first-party box to every reader (the service refuses it to all but
	// super admins), the system-key box to super admins, and switches to
	// deactivate and activate.
	Admin bool
	// Clients and Keys are the paths of the client and key pages:
	// Clients+"/new", Clients+"/{id}", ….
	Clients, Keys string
	// ClientsHome and KeysHome are the lists the pages link back to and a
	// deletion returns to; ClientsBack and KeysBack the links' texts.
	ClientsHome, KeysHome       string
	ClientsBack, KeysBack       string
	Source                      string // the audit events' source_service
	ClientSection               string // navigation entries of the pages
	KeySection                  string
	ClientPage, KeyPage         string // templates
	ClientTitle, KeyTitle       string // message keys of the page titles
	NewClientTitle, NewKeyTitle string
}

// CredentialPages are the client and key pages of one console.
type CredentialPages struct {
	H      *Handler
	OAuth  *oauth.Service
	Access *access.Service
	Site   *CredentialSite
}

// The permissions the key parts of the pages offer their forms for: the
// rules of the /v1/api-keys routes that the forms post to (the routes
// enforce them; the pages only leave out what the reader could not use).
const (
	KeysRead   = "api_keys:read"
	KeysWrite  = "api_keys:write"
	KeysDelete = "api_keys:delete"
)

// FormError is an error of a form post as the page shows it: next to the
// field the service named, or above the form when it named none.
type FormError struct {
	Field string // input name ("" for none)
	Text  string // localized message
}

// Is reports whether the error is about field (templates: {{if .Err.Is "name"}}).
func (e FormError) Is(field string) bool { return e.Field != "" && e.Field == field }

// KeyRow is an API key with its state at the time of the page.
type KeyRow struct {
	access.APIKey
	Expired bool
}

// expired reports whether k no longer works because its day has passed.
func (cp *CredentialPages) Expired(k access.APIKey) bool {
	return k.ExpiresAt != nil && !k.ExpiresAt.After(cp.Access.Clock.Now())
}

// scopeChoice is one checkbox of a scope chooser.
type scopeChoice struct {
	Name, Text string
	Checked    bool
}

// owner is the user a client or key belongs to, as the admin pages show it.
type Owner struct {
	ID   string // "" for none (made by a system key, or a system key itself)
	Name string // username, "" when it cannot be read (the id is shown)
	// Link leads to the user's admin page, for readers who may see it.
	Link bool
}

// owner is the owner of a client or key with user id id (nil: none).
func (cp *CredentialPages) OwnerOf(r *http.Request, id *string) Owner {
	if id == nil || *id == "" {
		return Owner{}
	}
	return Owner{ID: *id, Name: cp.H.Auth.Username(r.Context(), *id), Link: authn.From(r.Context()).Can("users:read")}
}

// actionPanel is a panel of a client's or key's page with the form of one
// action (templates: "action-panels"). Its texts are the messages Title,
// Title+".help" and, for a destructive action, Title+".check" (the
// confirmation box) and Title+".confirm" (the script's dialog).
type actionPanel struct {
	// Form names the form: confirm_<Form> is the field of its box's error.
	Form   string
	Action string // where it posts
	Title  string // message key of the heading and the button
	Class  string // the button's class
	// Destructive asks for the confirmation box (the server checks it).
	Destructive bool
	// Active is the value the form sends as active ("" for none).
	Active string
}

// switchPanel is the panel that turns what is at base on or off: active
// is its state; texts is the message prefix ("admin.clients.").
func switchPanel(base, texts string, active bool) actionPanel {
	if active {
		return actionPanel{Form: "deactivate", Action: base + "/active", Title: texts + "deactivate", Class: "secondary", Destructive: true, Active: "no"}
	}
	return actionPanel{Form: "activate", Action: base + "/active", Title: texts + "activate", Class: "secondary", Active: "yes"}
}

// clientPage is the registration form (New) or one client's page.
type clientPage struct {
	Site *CredentialSite
	New  bool
	// Client is the client as stored (on its page).
	Client oauth.Client
	Owner  Owner
	// Form holds the values of the form: the client's, or those sent when
	// the form comes back with an error.
	Form *oauth.Client
	// RedirectURIs and PostLogoutURIs are the texts of the URI fields, one
	// per line.
	RedirectURIs, PostLogoutURIs string
	Scopes                       []scopeChoice
	// Grants are the grant type checkboxes (RFC 7591 grant_types).
	Grants []scopeChoice
	// AuthMethods are the choices of token_endpoint_auth_method;
	// JWKSText and ResourcesText the texts of the key set and resources.
	AuthMethods             []string
	JWKSText, ResourcesText string
	// PermissionScopes is the text of the permission scope field, one
	// permission string per line (for the client credentials grant).
	PermissionScopes string
	// FirstParty shows the first-party field; FirstPartyLocked says the
	// reader may not set it (the admin console shows it to every reader).
	FirstParty       bool
	FirstPartyLocked bool
	// Secret is the client secret, in the answer of the post that made it.
	Secret string
	Panels []actionPanel
	Err    FormError
	// AccessLifetime and RefreshLifetime are the texts of the lifetime
	// fields ("" for the server's default); AccessDefault and
	// RefreshDefault the server's defaults in force, in seconds.
	AccessLifetime, RefreshLifetime string
	AccessDefault, RefreshDefault   int64
}

// linkField is one of a client's links as its form shows it: Name is the
// field (and its id), Label its message key.
type linkField struct{ Name, Label, Value string }

// Links are the link fields of the form, in the order it shows them.
func (p clientPage) Links() []linkField {
	f := p.Form
	return []linkField{
		{"homepage_url", "dev.client.homepage", Deref(f.HomepageURL)},
		{"logo_url", "dev.client.logo", Deref(f.LogoURL)},
		{"privacy_policy_url", "dev.client.privacy", Deref(f.PrivacyPolicyURL)},
		{"terms_of_service_url", "dev.client.terms", Deref(f.TermsOfServiceURL)},
	}
}

// keyPage is the creation form (New) or one key's page.
type keyPage struct {
	Site    *CredentialSite
	New     bool
	Key     access.APIKey
	Owner   Owner
	Expired bool
	Expires string // the expiry field, YYYY-MM-DD
	Scopes  []scopeChoice
	// System offers the system-key box (admin console, super admins);
	// SystemChecked is its state when the form comes back.
	System        bool
	SystemChecked bool
	Roles         []access.Role
	// Assignable are the roles the reader may add to the key.
	Assignable []access.Role
	CanWrite   bool
	CanDelete  bool
	Panels     []actionPanel
	Err        FormError
}

// meta is the audit metadata of a page's request to the OAuth service.
func (cp *CredentialPages) meta(r *http.Request) oauth.Meta {
	m := oauth.MetaFrom(r)
	m.Source = cp.Site.Source
	return m
}

// event is the audit metadata of a page's request to the access service.
func (cp *CredentialPages) event(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: cp.Site.Source})
}

// ---- OAuth clients ----

// clientScopes are the scope checkboxes, with those of checked ticked.
func (cp *CredentialPages) clientScopes(r *http.Request, checked []string) []scopeChoice {
	lang := cp.H.UserLanguage(r, authn.From(r.Context()))
	var out []scopeChoice
	for _, s := range oauth.Scopes() {
		out = append(out, scopeChoice{Name: s.Name, Text: ScopeText(lang, s.Name, s.Description), Checked: slices.Contains(checked, s.Name)})
	}
	return out
}

// renderClient renders the client form or page.
func (cp *CredentialPages) renderClient(w http.ResponseWriter, r *http.Request, status int, v clientPage, errText string) {
	if v.Form == nil {
		v.Form = &v.Client
	}
	v.Site = cp.Site
	may := oauth.MaySetFirstParty(authn.From(r.Context()))
	v.FirstParty, v.FirstPartyLocked = may || cp.Site.Admin, !may
	v.Scopes = cp.clientScopes(r, v.Form.AllowedScopes)
	v.Grants = cp.clientGrants(r, v.Form.GrantTypes)
	v.AuthMethods = authMethods(v.Form.ClientType)
	v.JWKSText, v.ResourcesText = jwksText(v.Form.JWKS), strings.Join(v.Form.Resources, "\n")
	v.PermissionScopes = strings.Join(oauth.PermissionScopes(v.Form.AllowedScopes), "\n")
	v.RedirectURIs = strings.Join(v.Form.RedirectURIs, "\n")
	v.PostLogoutURIs = strings.Join(v.Form.PostLogoutRedirectURIs, "\n")
	v.AccessLifetime, v.RefreshLifetime = lifetimeText(v.Form.AccessTokenLifetimeSeconds), lifetimeText(v.Form.RefreshTokenLifetimeSeconds)
	v.AccessDefault, v.RefreshDefault = cp.OAuth.DefaultLifetimes()
	title := cp.Site.ClientTitle
	if v.New {
		title = cp.Site.NewClientTitle
	} else {
		c, base := v.Client, cp.Site.Clients+"/"+v.Client.ID
		// First-party clients cannot be changed or deleted (the service
		// refuses); a new secret is for confidential clients only, and for a
		// first-party one only super admins and system keys may make one.
		if cp.Site.Admin {
			v.Owner = cp.OwnerOf(r, c.OwnerID)
			if !c.IsFirstParty {
				v.Panels = append(v.Panels, switchPanel(base, "admin.clients.", c.IsActive))
			}
		}
		if c.ClientType == oauth.Confidential && oauth.MayRegenerateSecret(authn.From(r.Context()), c) {
			v.Panels = append(v.Panels, actionPanel{Form: "regen", Action: base + "/secret", Title: "dev.secret.regen", Class: "secondary", Destructive: true})
		}
		if !c.IsFirstParty {
			v.Panels = append(v.Panels, actionPanel{Form: "delete", Action: base + "/delete", Title: "dev.client.delete", Class: "danger", Destructive: true})
		}
	}
	cp.H.Console(w, r, status, cp.Site.ClientPage, ConsoleView{Title: title, Section: cp.Site.ClientSection, Error: errText, Data: v})
}

// redirectLines splits the redirect URI field: one URI per line, blank lines
// left out.
func redirectLines(s string) []string {
	out := []string{}
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// clientInput reads the client form into the service's input: every field
// the form shows is set. The client type is read only at registration, the
// active box only on a client's page. The first-party box is read when it
// is shown (unticked is false) or sent anyway, so the service, not the
// form, refuses it to those who may not set it.
func clientInput(r *http.Request, creating bool) oauth.ClientInput {
	str := func(name string) httpx.Opt[string] {
		return httpx.Opt[string]{Set: true, Value: strings.TrimSpace(r.PostFormValue(name))}
	}
	scopes := append(r.PostForm["allowed_scopes"], strings.Fields(r.PostFormValue("permission_scopes"))...)
	if scopes == nil {
		scopes = []string{}
	}
	in := oauth.ClientInput{
		Name:                     str("name"),
		Description:              httpx.Opt[string]{Set: true, Value: r.PostFormValue("description")},
		LogoURL:                  str("logo_url"),
		HomepageURL:              str("homepage_url"),
		PrivacyPolicyURL:         str("privacy_policy_url"),
		TermsOfServiceURL:        str("terms_of_service_url"),
		RedirectURIs:             httpx.Opt[[]string]{Set: true, Value: redirectLines(r.PostFormValue("redirect_uris"))},
		AllowedScopes:            httpx.Opt[[]string]{Set: true, Value: scopes},
		IDTokenSignedResponseAlg: str("id_token_signed_response_alg"),
		PostLogoutRedirectURIs:   httpx.Opt[[]string]{Set: true, Value: redirectLines(r.PostFormValue("post_logout_redirect_uris"))},
		BackchannelLogoutURI:     str("backchannel_logout_uri"),

		AccessTokenLifetimeSeconds:  lifetimeField(r, "access_token_lifetime_seconds"),
		RefreshTokenLifetimeSeconds: lifetimeField(r, "refresh_token_lifetime_seconds"),
	}
	in.GrantTypes = grantTypesInput(r)
	clientAuthInput(r, &in)
	if creating {
		in.ClientType = str("client_type")
	} else {
		in.IsActive = httpx.Opt[bool]{Set: true, Value: r.PostFormValue("is_active") == "yes"}
	}
	if _, sent := r.PostForm["is_first_party"]; sent || oauth.MaySetFirstParty(authn.From(r.Context())) {
		in.IsFirstParty = httpx.Opt[bool]{Set: true, Value: r.PostFormValue("is_first_party") == "yes"}
	}
	return in
}

// lifetimeField reads a token-lifetime field: empty is null (the server's
// default); text that is no whole number is sent as -1, which the service
// refuses with the field's bounds.
func lifetimeField(r *http.Request, name string) oauth.ClientLifetime {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return oauth.ClientLifetime{Set: true, Null: true}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		n = -1
	}
	return oauth.ClientLifetime{Set: true, Value: n}
}

// lifetimeText is a lifetime for its field: "" for the server's default.
func lifetimeText(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

// entered is c with the values of the form, to show the form again as it
// was sent.
func entered(c oauth.Client, in oauth.ClientInput) *oauth.Client {
	ptr := func(o httpx.Opt[string]) *string {
		if o.Value == "" {
			return nil
		}
		return &o.Value
	}
	c.Name, c.Description = in.Name.Value, in.Description.Value
	c.LogoURL, c.HomepageURL, c.PrivacyPolicyURL, c.TermsOfServiceURL = ptr(in.LogoURL), ptr(in.HomepageURL), ptr(in.PrivacyPolicyURL), ptr(in.TermsOfServiceURL)
	c.RedirectURIs, c.AllowedScopes = in.RedirectURIs.Value, in.AllowedScopes.Value
	c.IDTokenSignedResponseAlg = in.IDTokenSignedResponseAlg.Value
	if in.GrantTypes.Set {
		c.GrantTypes = in.GrantTypes.Value
	}
	enteredAuth(&c, in)
	c.PostLogoutRedirectURIs, c.BackchannelLogoutURI = in.PostLogoutRedirectURIs.Value, ptr(in.BackchannelLogoutURI)
	c.AccessTokenLifetimeSeconds, c.RefreshTokenLifetimeSeconds = in.AccessTokenLifetimeSeconds.Ptr(), in.RefreshTokenLifetimeSeconds.Ptr()
	if in.ClientType.Set {
		c.ClientType = in.ClientType.Value
	}
	if in.IsActive.Set {
		c.IsActive = in.IsActive.Value
	}
	if in.IsFirstParty.Set {
		c.IsFirstParty = in.IsFirstParty.Value
	}
	return &c
}

// NewClient is GET <clients>/new: the registration form.
func (cp *CredentialPages) NewClient(w http.ResponseWriter, r *http.Request) {
	cp.renderClient(w, r, http.StatusOK, clientPage{New: true, Client: oauth.Client{
		ClientType: oauth.Confidential, IDTokenSignedResponseAlg: cmp.Or(cp.OAuth.DefaultIDTokenAlg, oauth.AlgHS256), IsActive: true,
		AllowedScopes: []string{"openid", "profile", "email"}, GrantTypes: oauth.DefaultGrantTypes(),
	}}, "")
}

// CreateClient is POST <clients>: it registers the client (first-party only
// for super admins, as the service decides) and answers its page with the
// secret, shown this once.
func (cp *CredentialPages) CreateClient(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	in := clientInput(r, true)
	c, err := cp.OAuth.CreateClient(r.Context(), p, in, cp.meta(r))
	if err != nil {
		status, text, fe := cp.H.FormRefusal(w, r, err, "dev.fixfield")
		cp.renderClient(w, r, status, clientPage{New: true, Form: entered(oauth.Client{}, in), Err: fe}, text)
		return
	}
	cp.renderClient(w, r, http.StatusCreated, clientPage{Client: c, Secret: c.ClientSecret}, "")
}

// client loads the client of the URL for its page, or renders the refusal.
func (cp *CredentialPages) client(w http.ResponseWriter, r *http.Request) (oauth.Client, bool) {
	c, err := cp.OAuth.GetClient(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		cp.H.Fail(w, r, err)
		return c, false
	}
	return c, true
}

// showClient renders the page of the client of the URL with the error of
// an action on it (or none).
func (cp *CredentialPages) showClient(w http.ResponseWriter, r *http.Request, status int, text string, fe FormError) {
	if c, ok := cp.client(w, r); ok {
		cp.renderClient(w, r, status, clientPage{Client: c, Err: fe}, text)
	}
}

// Client is GET <clients>/{id}: the client's page.
func (cp *CredentialPages) Client(w http.ResponseWriter, r *http.Request) {
	cp.showClient(w, r, http.StatusOK, "", FormError{})
}

// UpdateClient is POST <clients>/{id}: the settings form.
func (cp *CredentialPages) UpdateClient(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	in := clientInput(r, false)
	c, err := cp.OAuth.UpdateClient(r.Context(), p, chi.URLParam(r, "id"), in, cp.meta(r))
	if err != nil {
		old, ok := cp.client(w, r)
		if !ok {
			return
		}
		status, text, fe := cp.H.FormRefusal(w, r, err, "dev.fixfield")
		cp.renderClient(w, r, status, clientPage{Client: old, Form: entered(old, in), Err: fe}, text)
		return
	}
	cp.H.Done(w, r, cp.Site.Clients+"/"+c.ID, "dev.client.updated")
}

// failure renders a client's or key's page with the error of a post on it.
type failure func(w http.ResponseWriter, r *http.Request, status int, text string, fe FormError)

// post runs a post of a client's or key's page as a page Action: the
// confirmation box of the destructive form named confirm ("" for none),
// then do, the service call; on its error the page comes back with the
// error (fail), else done answers.
func (cp *CredentialPages) post(w http.ResponseWriter, r *http.Request, confirm string, fail failure, do func(p *authn.Principal) error, done func()) {
	a := Action{
		Call:   func(p *authn.Principal) (string, error) { return "", do(p) },
		Answer: done,
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := cp.H.FormRefusal(w, r, err, "dev.fixfield")
			fail(w, r, status, text, fe)
		},
	}
	if confirm != "" {
		a.Confirm, a.Unconfirmed = "confirm_"+confirm, "dev.confirm.missing"
	}
	cp.H.Act(w, r, a)
}

// setActive turns the client or key of the URL (whose pages are at base)
// on (active=yes) or off with update; turning it off needs the
// confirmation box. texts is the message prefix of the answers
// ("admin.clients.").
func (cp *CredentialPages) setActive(w http.ResponseWriter, r *http.Request, base, texts string, show failure,
	update func(r *http.Request, p *authn.Principal, id string, active bool) error) {
	id, active := chi.URLParam(r, "id"), r.PostFormValue("active") == "yes"
	confirm, msg := "", texts+"activated"
	if !active {
		confirm, msg = "deactivate", texts+"deactivated"
	}
	cp.post(w, r, confirm, show, func(p *authn.Principal) error { return update(r, p, id, active) },
		func() { cp.H.Done(w, r, base+"/"+id, msg) })
}

// clientActive turns a client on or off as PATCH with is_active alone does;
// turning it off revokes its tokens.
func (cp *CredentialPages) clientActive(r *http.Request, p *authn.Principal, id string, active bool) error {
	_, err := cp.OAuth.UpdateClient(r.Context(), p, id, oauth.ClientInput{IsActive: httpx.Opt[bool]{Set: true, Value: active}}, cp.meta(r))
	return err
}

// SetClientActive is POST <clients>/{id}/active: active=yes turns the
// client on; else it is turned off, its tokens revoked, which needs the
// confirmation box.
func (cp *CredentialPages) SetClientActive(w http.ResponseWriter, r *http.Request) {
	cp.setActive(w, r, cp.Site.Clients, "admin.clients.", cp.showClient, cp.clientActive)
}

// RegenerateSecret is POST <clients>/{id}/secret: the answer shows the new
// secret this once.
func (cp *CredentialPages) RegenerateSecret(w http.ResponseWriter, r *http.Request) {
	var secret string
	cp.post(w, r, "regen", cp.showClient, func(p *authn.Principal) (err error) {
		secret, err = cp.OAuth.RegenerateSecret(r.Context(), p, chi.URLParam(r, "id"), cp.meta(r))
		return err
	}, func() {
		if c, ok := cp.client(w, r); ok {
			cp.renderClient(w, r, http.StatusOK, clientPage{Client: c, Secret: secret}, "")
		}
	})
}

// DeleteClient is POST <clients>/{id}/delete; the answer is the list.
func (cp *CredentialPages) DeleteClient(w http.ResponseWriter, r *http.Request) {
	cp.post(w, r, "delete", cp.showClient, func(p *authn.Principal) error {
		return cp.OAuth.DeleteClient(r.Context(), p, chi.URLParam(r, "id"), cp.meta(r))
	}, func() { cp.H.Done(w, r, cp.Site.ClientsHome, "dev.client.deleted") })
}

// ---- API keys ----

// expiryLayout is the format of the expiry date field (input type=date).
const expiryLayout = "2006-01-02"

// keyInput reads the key form. The expiry date is the last day the key
// works: it expires at the end of that day, UTC. The system-key box is
// read when sent, so the service, not the form, refuses it to those who
// may not create system keys.
func keyInput(r *http.Request) (access.KeyInput, error) {
	scopes := r.PostForm["scopes"]
	if scopes == nil {
		scopes = []string{}
	}
	in := access.KeyInput{
		Name:        httpx.Opt[string]{Set: true, Value: r.PostFormValue("name")},
		Description: httpx.Opt[string]{Set: true, Value: r.PostFormValue("description")},
		Scopes:      httpx.Opt[[]string]{Set: true, Value: scopes},
	}
	if r.PostFormValue("is_system") == "yes" {
		in.IsSystem = httpx.Opt[bool]{Set: true, Value: true}
	}
	if s := strings.TrimSpace(r.PostFormValue("expires")); s != "" {
		day, err := time.Parse(expiryLayout, s)
		if err != nil {
			return in, apperr.OnField("expires_at", apperr.Invalid("the expiry date must be a date (YYYY-MM-DD)"))
		}
		in.ExpiresAt = httpx.Opt[time.Time]{Set: true, Value: day.Add(24*time.Hour - time.Second)}
	}
	return in, nil
}

// keyScopes are the scope checkboxes: the permissions the reader may give a key.
func (cp *CredentialPages) keyScopes(r *http.Request, checked []string) ([]scopeChoice, error) {
	perms, err := cp.Access.GrantableScopes(r.Context(), authn.From(r.Context()))
	if err != nil {
		return nil, err
	}
	out := make([]scopeChoice, len(perms))
	for i, perm := range perms {
		out[i] = scopeChoice{Name: perm.String(), Text: perm.Description, Checked: slices.Contains(checked, perm.String())}
	}
	return out, nil
}

// renderNewKey renders the key creation form.
func (cp *CredentialPages) renderNewKey(w http.ResponseWriter, r *http.Request, status int, v keyPage, errText string) {
	v.Site, v.New = cp.Site, true
	v.System = cp.Site.Admin && access.MayCreateSystemKey(authn.From(r.Context()))
	var err error
	if v.Scopes, err = cp.keyScopes(r, r.PostForm["scopes"]); err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	cp.H.Console(w, r, status, cp.Site.KeyPage, ConsoleView{Title: cp.Site.NewKeyTitle, Section: cp.Site.KeySection, Error: errText, Data: v})
}

// renderKey renders a key's page; k.Key, when set, is shown this once.
func (cp *CredentialPages) renderKey(w http.ResponseWriter, r *http.Request, status int, k access.APIKey, fe FormError, errText string) {
	ctx := r.Context()
	p := authn.From(ctx)
	v := keyPage{Site: cp.Site, Key: k, Expired: cp.Expired(k), CanWrite: p.Can(KeysWrite), CanDelete: p.Can(KeysDelete), Err: fe}
	base := cp.Site.Keys + "/" + k.ID
	if cp.Site.Admin {
		v.Owner = cp.OwnerOf(r, k.UserID)
		if v.CanWrite {
			v.Panels = append(v.Panels, switchPanel(base, "admin.apikeys.", k.IsActive))
		}
	}
	if v.CanWrite {
		v.Panels = append(v.Panels, actionPanel{Form: "regen", Action: base + "/regenerate", Title: "dev.key.regen", Class: "secondary", Destructive: true})
	}
	// System keys cannot be deleted (the service refuses).
	if v.CanDelete && !k.IsSystem {
		v.Panels = append(v.Panels, actionPanel{Form: "delete", Action: base + "/delete", Title: "dev.key.delete", Class: "danger", Destructive: true})
	}
	var err error
	if v.Roles, err = cp.Access.KeyRoles(ctx, p, k.ID); err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	if v.CanWrite {
		all, err := cp.Access.AssignableKeyRoles(ctx, p)
		if err != nil {
			cp.H.Fail(w, r, err)
			return
		}
		for _, role := range all {
			if !slices.ContainsFunc(v.Roles, func(x access.Role) bool { return x.ID == role.ID }) {
				v.Assignable = append(v.Assignable, role)
			}
		}
	}
	cp.H.Console(w, r, status, cp.Site.KeyPage, ConsoleView{Title: cp.Site.KeyTitle, Section: cp.Site.KeySection, Error: errText, Data: v})
}

// NewKey is GET <keys>/new: the creation form.
func (cp *CredentialPages) NewKey(w http.ResponseWriter, r *http.Request) {
	cp.renderNewKey(w, r, http.StatusOK, keyPage{}, "")
}

// CreateKey is POST <keys>: it creates the key (a system key only for super
// admins, as the service decides) and answers its page with the key, shown
// this once.
func (cp *CredentialPages) CreateKey(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	in, err := keyInput(r)
	var k access.APIKey
	if err == nil {
		k, err = cp.Access.CreateKey(r.Context(), p, in, cp.event(r))
	}
	if err != nil {
		status, text, fe := cp.H.FormRefusal(w, r, err, "dev.fixfield")
		cp.renderNewKey(w, r, status, keyPage{Key: access.APIKey{Name: in.Name.Value, Description: in.Description.Value},
			Expires: r.PostFormValue("expires"), SystemChecked: in.IsSystem.Value, Err: fe}, text)
		return
	}
	cp.renderKey(w, r, http.StatusCreated, k, FormError{}, "")
}

// Key is GET <keys>/{id}: the key's page.
func (cp *CredentialPages) Key(w http.ResponseWriter, r *http.Request) {
	cp.showKey(w, r, http.StatusOK, "", FormError{})
}

// showKey renders the page of the key of the URL with the error of an
// action on it (or none).
func (cp *CredentialPages) showKey(w http.ResponseWriter, r *http.Request, status int, text string, fe FormError) {
	k, err := cp.Access.GetKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	cp.renderKey(w, r, status, k, fe, text)
}

// RegenerateKey is POST <keys>/{id}/regenerate: the answer shows the new
// key this once.
func (cp *CredentialPages) RegenerateKey(w http.ResponseWriter, r *http.Request) {
	var k access.APIKey
	cp.post(w, r, "regen", cp.showKey, func(p *authn.Principal) (err error) {
		k, err = cp.Access.RegenerateKey(r.Context(), p, chi.URLParam(r, "id"))
		return err
	}, func() { cp.renderKey(w, r, http.StatusOK, k, FormError{}, "") })
}

// keyActive turns a key on or off as PATCH with is_active alone does.
func (cp *CredentialPages) keyActive(r *http.Request, p *authn.Principal, id string, active bool) error {
	_, err := cp.Access.UpdateKey(r.Context(), p, id, access.KeyInput{IsActive: httpx.Opt[bool]{Set: true, Value: active}})
	return err
}

// SetKeyActive is POST <keys>/{id}/active: active=yes turns the key on;
// else it is turned off, which needs the confirmation box.
func (cp *CredentialPages) SetKeyActive(w http.ResponseWriter, r *http.Request) {
	cp.setActive(w, r, cp.Site.Keys, "admin.apikeys.", cp.showKey, cp.keyActive)
}

// DeleteKey is POST <keys>/{id}/delete; the answer is the list.
func (cp *CredentialPages) DeleteKey(w http.ResponseWriter, r *http.Request) {
	cp.post(w, r, "delete", cp.showKey, func(p *authn.Principal) error {
		return cp.Access.DeleteKey(r.Context(), p, chi.URLParam(r, "id"), cp.event(r))
	}, func() { cp.H.Done(w, r, cp.Site.KeysHome, "dev.key.deleted") })
}

// AddKeyRole is POST <keys>/{id}/roles: it gives the key the role of the form.
func (cp *CredentialPages) AddKeyRole(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	cp.post(w, r, "", cp.showKey, func(p *authn.Principal) error {
		_, err := cp.Access.AddKeyRole(r.Context(), p, id, r.PostFormValue("role_id"))
		return err
	}, func() { cp.H.Done(w, r, cp.Site.Keys+"/"+id, "dev.key.roleadded") })
}

// RemoveKeyRole is POST <keys>/{id}/roles/{role_id}/remove.
func (cp *CredentialPages) RemoveKeyRole(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	cp.post(w, r, "", cp.showKey, func(p *authn.Principal) error {
		return cp.Access.RemoveKeyRole(r.Context(), p, id, chi.URLParam(r, "role_id"))
	}, func() { cp.H.Done(w, r, cp.Site.Keys+"/"+id, "dev.key.roleremoved") })
}
