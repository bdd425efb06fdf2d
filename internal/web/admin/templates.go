package admin

import (
	"embed"

	"hmid/internal/authn"
	"hmid/internal/web"
)

// templates are the admin console's pages (admin_*.html), each drawn in
// the console frame of the web kit.
//
//go:embed templates/*.html
var templates embed.FS

func init() { web.AddConsole(templates, "admin_", true, nav) }

// nav is the admin console's navigation, in order; each entry shows
// for holders of the permission its REST routes need to read. It has the
// shape of the account console's (account/templates.go) but other entries
// and rules: each console owns its table.
var nav = []web.NavItem{
	{Section: "overview", Href: "/admin", Label: "admin.nav.overview"},
	{Section: "users", Href: "/admin/users", Label: "admin.nav.users", Show: web.Can("users:read")},
	{Section: "roles", Href: "/admin/roles", Label: "admin.nav.roles", Show: web.Can("roles:read")},
	{Section: "clients", Href: "/admin/clients", Label: "admin.nav.clients", Show: web.Can("oauth_clients:read")},
	{Section: "api-keys", Href: "/admin/api-keys", Label: "admin.nav.apikeys", Show: web.Can("api_keys:read")},
	{Section: "audit", Href: "/admin/audit", Label: "admin.nav.audit", Show: web.Can("audit:read")},
	{Section: "webhooks", Href: "/admin/webhooks", Label: "admin.nav.webhooks", Show: web.Can("webhooks:read")},
	{Section: "platforms", Href: "/admin/platforms", Label: "admin.nav.platforms", Show: web.Can("settings:read")},
	{Section: "config", Href: "/admin/config", Label: "admin.nav.config", Show: web.Can("settings:read")},
	{Section: "chat", Href: "/admin/chat", Label: "admin.nav.chat", Show: web.Can("chatplatform:read")},
	{Section: "tracking", Href: "/admin/tracking", Label: "admin.nav.tracking", Show: func(p *authn.Principal) bool {
		return p.Can("devices:read") || p.Can("trips:read")
	}},
}
