package admin

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/web"
)

// RolesPages is /admin/roles: the roles with their permission counts,
// a role's page (settings, permissions, deletion) and the permission
// catalogue at /admin/roles/permissions. Every action calls the
// access.Service function its REST route (/v1/roles, /v1/permissions)
// calls, and its route in internal/app/routes.go has that route's rule, so
// the escalation rule of a role's permissions and the refusal to delete a
// system role are the service's. The role routes write no audit events, so
// neither do these pages.
type RolesPages struct {
	H      *web.Handler
	Access *access.Service
}

// adminRolesLimit is the page size of the role and permission lists, the
// REST lists' default.
const adminRolesLimit = 100

// newAdminRolesPager returns the pager of page pg of a list of total rows
// at path; the links keep a page size other than the default.
func newAdminRolesPager(path string, pg httpx.Page, total int) pageNav {
	return newPageNav(pg, total, "", func(n int) string {
		if pg.Limit != adminRolesLimit {
			return path + "?page=" + strconv.Itoa(n) + "&limit=" + strconv.Itoa(pg.Limit)
		}
		return path + "?page=" + strconv.Itoa(n)
	})
}

// adminRoleRow is a role as the list shows it.
type adminRoleRow struct {
	access.Role
	Permissions int
}

// adminRolesList is /admin/roles.
type adminRolesList struct {
	Roles     []adminRoleRow
	Pager     pageNav
	CanWrite  bool // the creation form
	ReadPerms bool // the link to the permission catalogue
	// Form holds the values of the creation form sent back with an error.
	Form access.Role
	Err  web.FormError
}

// roleFields is a role's form as the "role-fields" part draws it: on the
// list's creation form and on a role's page, where a system role keeps its
// name (System: the form has no name field).
type roleFields struct {
	Form   access.Role
	Err    web.FormError
	System bool
}

// Fields is the creation form.
func (l adminRolesList) Fields() roleFields { return roleFields{Form: l.Form, Err: l.Err} }

// adminRolePage is a role's page.
type adminRolePage struct {
	Role access.Role
	// Form holds the values of the settings form: the role's, or those
	// sent when the form comes back with an error.
	Form        access.Role
	Permissions []adminRolePermRow
	// Addable are the permissions the reader may add to the role.
	Addable   []access.Permission
	CanWrite  bool
	CanDelete bool
	// Locked: the reader may not change this role's permissions at all
	// (a system role, for anyone but a super admin).
	Locked bool
	// OwnOnly: the reader may add and remove only the permissions they
	// hold (everyone but super admins).
	OwnOnly bool
	Err     web.FormError
}

// Fields is the role's settings form.
func (p adminRolePage) Fields() roleFields {
	return roleFields{Form: p.Form, Err: p.Err, System: p.Role.IsSystem}
}

// adminRolePermRow is a permission of a role, with whether the reader may
// take it away.
type adminRolePermRow struct {
	access.Permission
	Removable bool
}

// adminPermissionsList is /admin/roles/permissions.
type adminPermissionsList struct {
	Permissions []access.Permission
	Total       int
	Pager       pageNav
	CanWrite    bool
	// Form holds the values of the creation form sent back with an error.
	Form access.PermissionInput
	Err  web.FormError
}

// failure turns a service error into the page's status, the text above
// the form and the error at the field the service named. A conflict is a
// name already taken: conflict is the key of the text naming what is taken
// ("" for actions that cannot conflict), as the shared conflict text speaks
// of email addresses.
func (ap *RolesPages) failure(w http.ResponseWriter, r *http.Request, err error, conflict string) (int, string, web.FormError) {
	status, text, fe := ap.H.FormRefusal(w, r, err, "admin.roles.fixfield")
	if conflict != "" && apperr.Is(err, apperr.Conflict) {
		t := web.Translator(ap.H.UserLanguage(r, authn.From(r.Context())))
		if fe.Field != "" {
			fe.Text = t(conflict)
		} else {
			text = t(conflict)
		}
	}
	return status, text, fe
}

// roleAction runs a page action on the role of the URL: the browser is
// sent to the role's page, or to to when it is set; a refusal shows on
// the role's page. confirm asks for the delete form's ticked box.
func (ap *RolesPages) roleAction(w http.ResponseWriter, r *http.Request, confirm bool, to string, call func(p *authn.Principal, id string) (string, error)) {
	id := chi.URLParam(r, "id")
	a := web.Action{To: cmp.Or(to, "/admin/roles/"+id),
		Call: func(p *authn.Principal) (string, error) { return call(p, id) },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := ap.failure(w, r, err, "")
			ap.renderRole(w, r, status, nil, fe, text)
		}}
	if confirm {
		a.Confirm, a.Unconfirmed = "confirm_delete", "admin.roles.confirm.missing"
	}
	ap.H.Act(w, r, a)
}

// List is GET /admin/roles (GET /v1/roles).
func (ap *RolesPages) List(w http.ResponseWriter, r *http.Request) {
	ap.renderList(w, r, http.StatusOK, adminRolesList{}, "")
}

func (ap *RolesPages) renderList(w http.ResponseWriter, r *http.Request, status int, v adminRolesList, errText string) {
	ap.H.Show(w, r, status, "admin_roles", web.ConsoleView{Title: "admin.roles.title", Section: "roles", Error: errText},
		func() (any, error) { return ap.listView(r, v) })
}

// listView fills v with the page of roles the query asks for.
func (ap *RolesPages) listView(r *http.Request, v adminRolesList) (adminRolesList, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	pg := httpx.ParsePage(r, adminRolesLimit)
	roles, total, err := ap.Access.ListRoles(ctx, pg)
	if err != nil {
		return v, err
	}
	counts, err := ap.Access.RolePermissionCounts(ctx)
	if err != nil {
		return v, err
	}
	for _, role := range roles {
		v.Roles = append(v.Roles, adminRoleRow{Role: role, Permissions: counts[role.ID]})
	}
	v.Pager = newAdminRolesPager("/admin/roles", pg, total)
	v.CanWrite, v.ReadPerms = p.Can("roles:write"), p.Can("permissions:read")
	return v, nil
}

// roleInput reads a role form: description and the two-factor box always
// (unticked is false), the name when the form has the field (a system
// role's form has none: system roles keep their names).
func adminRoleInput(r *http.Request) access.RoleInput {
	in := access.RoleInput{
		Description:       httpx.Opt[string]{Set: true, Value: strings.TrimSpace(r.PostFormValue("description"))},
		RequiresTwoFactor: httpx.Opt[bool]{Set: true, Value: r.PostFormValue("requires_two_factor") == "yes"},
	}
	if _, sent := r.PostForm["name"]; sent {
		in.Name = httpx.Opt[string]{Set: true, Value: r.PostFormValue("name")}
	}
	return in
}

// Create is POST /admin/roles (POST /v1/roles): it creates the role and
// opens its page, where its permissions are given.
func (ap *RolesPages) Create(w http.ResponseWriter, r *http.Request) {
	var in access.RoleInput
	var role access.Role
	ap.H.Act(w, r, web.Action{
		Call: func(*authn.Principal) (string, error) {
			in = adminRoleInput(r)
			var err error
			role, err = ap.Access.CreateRole(r.Context(), in)
			return "admin.roles.created", err
		},
		Next: func() string { return "/admin/roles/" + role.ID },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := ap.failure(w, r, err, "admin.roles.name.taken")
			ap.renderList(w, r, status, adminRolesList{Err: fe, Form: access.Role{Name: in.Name.Value, Description: in.Description.Value,
				RequiresTwoFactor: in.RequiresTwoFactor.Value}}, text)
		},
	})
}

// Role is GET /admin/roles/{id} (GET /v1/roles/{id} and its permissions).
func (ap *RolesPages) Role(w http.ResponseWriter, r *http.Request) {
	ap.renderRole(w, r, http.StatusOK, nil, web.FormError{}, "")
}

// renderRole renders the role of the URL; form, when not nil, holds the
// values of a settings form sent back with an error.
func (ap *RolesPages) renderRole(w http.ResponseWriter, r *http.Request, status int, form *access.Role, fe web.FormError, errText string) {
	ap.H.Show(w, r, status, "admin_roles_role", web.ConsoleView{Title: "admin.roles.role.title", Section: "roles", Error: errText},
		func() (any, error) { return ap.roleView(r, form, fe) })
}

// roleView is the role of the URL with its permissions; form, when not
// nil, is the refused settings form with its error fe.
func (ap *RolesPages) roleView(r *http.Request, form *access.Role, fe web.FormError) (v adminRolePage, err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	role, err := ap.Access.GetRole(ctx, chi.URLParam(r, "id"))
	if err != nil {
		return v, err
	}
	perms, err := ap.Access.ListRolePermissions(ctx, role.ID)
	if err != nil {
		return v, err
	}
	v = adminRolePage{Role: role, Form: role, CanWrite: p.Can("roles:write"), CanDelete: p.Can("roles:delete"),
		Locked: !access.MayChangeRolePermissions(p, role), OwnOnly: !p.IsAdmin(), Err: fe}
	if form != nil {
		v.Form = *form
	}
	for _, perm := range perms {
		v.Permissions = append(v.Permissions, adminRolePermRow{Permission: perm,
			Removable: v.CanWrite && access.MayChangeRolePermission(p, role, perm)})
	}
	if v.CanWrite && !v.Locked {
		v.Addable, err = ap.Access.AddablePermissions(ctx, p, role)
	}
	return v, err
}

// Update is POST /admin/roles/{id} (PATCH /v1/roles/{id}).
func (ap *RolesPages) Update(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var in access.RoleInput // read by Call, after the post's checks
	ap.H.Act(w, r, web.Action{To: "/admin/roles/" + id,
		Call: func(*authn.Principal) (string, error) {
			in = adminRoleInput(r)
			_, err := ap.Access.UpdateRole(r.Context(), id, in)
			return "admin.roles.updated", err
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := ap.failure(w, r, err, "admin.roles.name.taken")
			form := access.Role{Name: in.Name.Value, Description: in.Description.Value, RequiresTwoFactor: in.RequiresTwoFactor.Value}
			ap.renderRole(w, r, status, &form, fe, text)
		}})
}

// Delete is POST /admin/roles/{id}/delete (DELETE /v1/roles/{id}); the
// service refuses system roles.
func (ap *RolesPages) Delete(w http.ResponseWriter, r *http.Request) {
	ap.roleAction(w, r, true, "/admin/roles", func(_ *authn.Principal, id string) (string, error) {
		return "admin.roles.deleted", ap.Access.DeleteRole(r.Context(), id)
	})
}

// AddPermission is POST /admin/roles/{id}/permissions (POST
// /v1/roles/{id}/permissions), with the escalation rule of the service.
func (ap *RolesPages) AddPermission(w http.ResponseWriter, r *http.Request) {
	ap.roleAction(w, r, false, "", func(p *authn.Principal, id string) (string, error) {
		_, err := ap.Access.AddRolePermission(r.Context(), p, id, r.PostFormValue("permission_id"))
		return "admin.roles.perm.added", err
	})
}

// RemovePermission is POST /admin/roles/{id}/permissions/{permission_id}/remove
// (DELETE /v1/roles/{id}/permissions/{permission_id}), with the escalation
// rule of the service.
func (ap *RolesPages) RemovePermission(w http.ResponseWriter, r *http.Request) {
	ap.roleAction(w, r, false, "", func(p *authn.Principal, id string) (string, error) {
		return "admin.roles.perm.removed", ap.Access.RemoveRolePermission(r.Context(), p, id, chi.URLParam(r, "permission_id"))
	})
}

// Permissions is GET /admin/roles/permissions (GET /v1/permissions).
func (ap *RolesPages) Permissions(w http.ResponseWriter, r *http.Request) {
	ap.renderPermissions(w, r, http.StatusOK, adminPermissionsList{}, "")
}

func (ap *RolesPages) renderPermissions(w http.ResponseWriter, r *http.Request, status int, v adminPermissionsList, errText string) {
	ctx := r.Context()
	pg := httpx.ParsePage(r, adminRolesLimit)
	perms, total, err := ap.Access.ListPermissions(ctx, pg)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	v.Permissions, v.Total, v.Pager = perms, total, newAdminRolesPager("/admin/roles/permissions", pg, total)
	v.CanWrite = authn.From(ctx).Can("permissions:write")
	ap.H.Console(w, r, status, "admin_roles_permissions", web.ConsoleView{Title: "admin.roles.perms.title", Section: "roles", Error: errText, Data: v})
}

// CreatePermission is POST /admin/roles/permissions (POST /v1/permissions).
func (ap *RolesPages) CreatePermission(w http.ResponseWriter, r *http.Request) {
	var in access.PermissionInput
	ap.H.Act(w, r, web.Action{To: "/admin/roles/permissions",
		Call: func(*authn.Principal) (string, error) {
			in = access.PermissionInput{Resource: strings.TrimSpace(r.PostFormValue("resource")), Action: strings.TrimSpace(r.PostFormValue("action")),
				Description: strings.TrimSpace(r.PostFormValue("description"))}
			_, err := ap.Access.CreatePermission(r.Context(), in)
			return "admin.roles.perm.created", err
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text, fe := ap.failure(w, r, err, "admin.roles.perm.taken")
			ap.renderPermissions(w, r, status, adminPermissionsList{Form: in, Err: fe}, text)
		},
	})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.roles.title":               "Roles and permissions",
			"admin.roles.role.title":          "Role",
			"admin.roles.perms.title":         "Permissions",
			"admin.roles.intro":               "A role is a set of permissions. People get the permissions of every role they hold; API keys can hold roles too.",
			"admin.roles.list":                "Roles",
			"admin.roles.none":                "There are no roles.",
			"admin.roles.back":                "All roles",
			"admin.roles.perms.link":          "All permissions",
			"admin.roles.col.role":            "Role",
			"admin.roles.col.description":     "Description",
			"admin.roles.col.perms":           "Permissions",
			"admin.roles.col.2fa":             "Two-factor",
			"admin.roles.col.perm":            "Permission",
			"admin.roles.system":              "System role",
			"admin.roles.2fa.required":        "Required",
			"admin.roles.2fa.optional":        "Not required",
			"admin.roles.2fa.label":           "Holders must use two-factor authentication",
			"admin.roles.2fa.help":            "Everyone holding this role must turn on two-factor authentication to sign in.",
			"admin.roles.pages":               "Pages",
			"admin.roles.page":                "Page %d of %d",
			"admin.roles.prev":                "← Previous page",
			"admin.roles.next":                "Next page →",
			"admin.roles.new":                 "Create a role",
			"admin.roles.new.help":            "Give the role its permissions on its page once it is created.",
			"admin.roles.name":                "Name",
			"admin.roles.description":         "Description (optional)",
			"admin.roles.create":              "Create role",
			"admin.roles.created":             "The role was created. Now give it its permissions.",
			"admin.roles.name.taken":          "A role with this name already exists.",
			"admin.roles.fixfield":            "Please correct the marked field below. Nothing was saved.",
			"admin.roles.id":                  "ID",
			"admin.roles.createdat":           "Created",
			"admin.roles.changed":             "Last changed",
			"admin.roles.settings":            "Settings",
			"admin.roles.system.name":         "This is a system role: its name cannot be changed.",
			"admin.roles.save":                "Save changes",
			"admin.roles.updated":             "The role was saved.",
			"admin.roles.perms":               "Permissions of this role",
			"admin.roles.perms.none":          "This role has no permissions.",
			"admin.roles.perms.locked":        "This is a system role: only a super admin can change its permissions.",
			"admin.roles.perms.ownonly":       "You can add and remove only permissions you hold yourself.",
			"admin.roles.perm.add":            "Add a permission",
			"admin.roles.perm.addbutton":      "Add permission",
			"admin.roles.perm.nomore":         "There is no other permission you can add to this role.",
			"admin.roles.perm.remove":         "Remove",
			"admin.roles.perm.remove.confirm": "Remove %s from this role? Everyone holding the role loses it at once.",
			"admin.roles.perm.notyours":       "You do not hold this permission",
			"admin.roles.perm.added":          "The permission was added to the role.",
			"admin.roles.perm.removed":        "The permission was removed from the role.",
			"admin.roles.delete":              "Delete role",
			"admin.roles.delete.help":         "Everyone holding the role loses its permissions at once, and API keys lose it too.",
			"admin.roles.delete.check":        "Yes, delete this role",
			"admin.roles.delete.confirm":      "Delete this role? Everyone holding it loses its permissions at once.",
			"admin.roles.delete.system":       "This is a system role: it cannot be deleted.",
			"admin.roles.confirm.missing":     "Tick the box to confirm.",
			"admin.roles.deleted":             "The role was deleted.",
			"admin.roles.perms.intro":         "Every permission hmid knows, as resource:action. Roles and API keys are given permissions from this list.",
			"admin.roles.perms.count":         "%d permissions",
			"admin.roles.perms.empty":         "There are no permissions on this page.",
			"admin.roles.perm.new":            "Create a permission",
			"admin.roles.perm.new.help":       "For a resource or action hmid does not know yet, for example one your own services check.",
			"admin.roles.perm.resource":       "Resource",
			"admin.roles.perm.resource.help":  "Lowercase letters, digits, “_” and “.”, starting with a letter, or “*” for every resource. Example: reports",
			"admin.roles.perm.action":         "Action",
			"admin.roles.perm.action.help":    "The same characters, or “*” for every action. Example: read",
			"admin.roles.perm.create":         "Create permission",
			"admin.roles.perm.created":        "The permission was created.",
			"admin.roles.perm.taken":          "This permission already exists.",
		},
		"de": {
			"admin.roles.title":               "Rollen und Berechtigungen",
			"admin.roles.role.title":          "Rolle",
			"admin.roles.perms.title":         "Berechtigungen",
			"admin.roles.intro":               "Eine Rolle ist eine Menge von Berechtigungen. Man erhält die Berechtigungen aller eigenen Rollen; auch API-Schlüssel können Rollen haben.",
			"admin.roles.list":                "Rollen",
			"admin.roles.none":                "Es gibt keine Rollen.",
			"admin.roles.back":                "Alle Rollen",
			"admin.roles.perms.link":          "Alle Berechtigungen",
			"admin.roles.col.role":            "Rolle",
			"admin.roles.col.description":     "Beschreibung",
			"admin.roles.col.perms":           "Berechtigungen",
			"admin.roles.col.2fa":             "Zwei-Faktor",
			"admin.roles.col.perm":            "Berechtigung",
			"admin.roles.system":              "Systemrolle",
			"admin.roles.2fa.required":        "Pflicht",
			"admin.roles.2fa.optional":        "Keine Pflicht",
			"admin.roles.2fa.label":           "Inhaber müssen die Zwei-Faktor-Authentifizierung nutzen",
			"admin.roles.2fa.help":            "Wer diese Rolle hat, muss die Zwei-Faktor-Authentifizierung einschalten, um sich anzumelden.",
			"admin.roles.pages":               "Seiten",
			"admin.roles.page":                "Seite %d von %d",
			"admin.roles.prev":                "← Vorherige Seite",
			"admin.roles.next":                "Nächste Seite →",
			"admin.roles.new":                 "Rolle erstellen",
			"admin.roles.new.help":            "Die Berechtigungen geben Sie der Rolle auf ihrer Seite, sobald sie erstellt ist.",
			"admin.roles.name":                "Name",
			"admin.roles.description":         "Beschreibung (optional)",
			"admin.roles.create":              "Rolle erstellen",
			"admin.roles.created":             "Die Rolle wurde erstellt. Geben Sie ihr jetzt ihre Berechtigungen.",
			"admin.roles.name.taken":          "Eine Rolle mit diesem Namen gibt es bereits.",
			"admin.roles.fixfield":            "Bitte korrigieren Sie das markierte Feld unten. Es wurde nichts gespeichert.",
			"admin.roles.id":                  "ID",
			"admin.roles.createdat":           "Erstellt",
			"admin.roles.changed":             "Zuletzt geändert",
			"admin.roles.settings":            "Einstellungen",
			"admin.roles.system.name":         "Dies ist eine Systemrolle: Ihr Name kann nicht geändert werden.",
			"admin.roles.save":                "Änderungen speichern",
			"admin.roles.updated":             "Die Rolle wurde gespeichert.",
			"admin.roles.perms":               "Berechtigungen dieser Rolle",
			"admin.roles.perms.none":          "Diese Rolle hat keine Berechtigungen.",
			"admin.roles.perms.locked":        "Dies ist eine Systemrolle: Nur ein Super-Admin kann ihre Berechtigungen ändern.",
			"admin.roles.perms.ownonly":       "Sie können nur Berechtigungen hinzufügen und entfernen, die Sie selbst haben.",
			"admin.roles.perm.add":            "Berechtigung hinzufügen",
			"admin.roles.perm.addbutton":      "Hinzufügen",
			"admin.roles.perm.nomore":         "Es gibt keine weitere Berechtigung, die Sie dieser Rolle geben können.",
			"admin.roles.perm.remove":         "Entfernen",
			"admin.roles.perm.remove.confirm": "%s aus dieser Rolle entfernen? Alle Inhaber der Rolle verlieren sie sofort.",
			"admin.roles.perm.notyours":       "Sie haben diese Berechtigung nicht",
			"admin.roles.perm.added":          "Die Berechtigung wurde der Rolle hinzugefügt.",
			"admin.roles.perm.removed":        "Die Berechtigung wurde aus der Rolle entfernt.",
			"admin.roles.delete":              "Rolle löschen",
			"admin.roles.delete.help":         "Alle Inhaber der Rolle verlieren sofort ihre Berechtigungen, auch API-Schlüssel verlieren sie.",
			"admin.roles.delete.check":        "Ja, diese Rolle löschen",
			"admin.roles.delete.confirm":      "Diese Rolle löschen? Alle Inhaber verlieren sofort ihre Berechtigungen.",
			"admin.roles.delete.system":       "Dies ist eine Systemrolle: Sie kann nicht gelöscht werden.",
			"admin.roles.confirm.missing":     "Setzen Sie zur Bestätigung das Häkchen.",
			"admin.roles.deleted":             "Die Rolle wurde gelöscht.",
			"admin.roles.perms.intro":         "Alle Berechtigungen, die hmid kennt, als Ressource:Aktion. Rollen und API-Schlüssel erhalten Berechtigungen aus dieser Liste.",
			"admin.roles.perms.count":         "%d Berechtigungen",
			"admin.roles.perms.empty":         "Auf dieser Seite gibt es keine Berechtigungen.",
			"admin.roles.perm.new":            "Berechtigung erstellen",
			"admin.roles.perm.new.help":       "Für eine Ressource oder Aktion, die hmid noch nicht kennt, etwa eine, die Ihre eigenen Dienste prüfen.",
			"admin.roles.perm.resource":       "Ressource",
			"admin.roles.perm.resource.help":  "Kleinbuchstaben, Ziffern, „_“ und „.“, beginnend mit einem Buchstaben, oder „*“ für alle Ressourcen. Beispiel: reports",
			"admin.roles.perm.action":         "Aktion",
			"admin.roles.perm.action.help":    "Dieselben Zeichen, oder „*“ für alle Aktionen. Beispiel: read",
			"admin.roles.perm.create":         "Berechtigung erstellen",
			"admin.roles.perm.created":        "Die Berechtigung wurde erstellt.",
			"admin.roles.perm.taken":          "Diese Berechtigung gibt es bereits.",
		},
	})
}
