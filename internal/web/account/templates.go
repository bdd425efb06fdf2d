// Package account is the account console, /account/*: profile, security
// (password, two-factor authentication), sessions, linked accounts,
// connected apps, activity, the user's data, the developer pages (the
// user's OAuth clients and API keys) and integrations. Each area is a type
// holding the services its REST routes call and the web kit's Handler
// (package web) for the page machinery: the console frame, CSRF, flash
// messages, texts and error pages. The templates (account_*.html) and their
// texts live here; the routes and their rules are in internal/app/routes.go,
// the one table.
package account

import (
	"embed"

	"hmid/internal/authn"
	"hmid/internal/web"
)

// templates are the account console's pages (account_*.html), each drawn
// in the console frame of the web kit.
//
//go:embed templates/*.html
var templates embed.FS

func init() { web.AddConsole(templates, "account_", false, nav) }

// mayRegisterClients reports whether p may register OAuth clients: any user
// (the rule of POST /v1/oauth/clients).
func mayRegisterClients(p *authn.Principal) bool { return p != nil && p.UserID != "" }

// nav is the account console's navigation, in order.
var nav = []web.NavItem{
	{Section: "profile", Href: "/account", Label: "nav.profile"},
	{Section: "security", Href: "/account/security", Label: "nav.security"},
	{Section: "sessions", Href: "/account/sessions", Label: "nav.sessions"},
	{Section: "linked", Href: "/account/linked", Label: "nav.linked"},
	{Section: "apps", Href: "/account/apps", Label: "nav.apps"},
	{Section: "activity", Href: "/account/activity", Label: "nav.activity"},
	{Section: "data", Href: "/account/data", Label: "nav.data"},
	// Every signed-in user may register OAuth clients (POST
	// /v1/oauth/clients is Authenticated(), the clients are the user's own),
	// so the page is in everyone's navigation, as the route lets everyone in.
	{Section: "developer", Href: "/account/developer", Label: "nav.developer", Show: mayRegisterClients},
	{Section: "integrations", Href: "/account/integrations", Label: "nav.integrations"},
}
