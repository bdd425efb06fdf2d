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

// nav is the account console's navigation, in order.
var nav = []web.NavItem{
	{Section: "profile", Href: "/account", Label: "nav.profile"},
	{Section: "security", Href: "/account/security", Label: "nav.security"},
	{Section: "sessions", Href: "/account/sessions", Label: "nav.sessions"},
	{Section: "linked", Href: "/account/linked", Label: "nav.linked"},
	{Section: "apps", Href: "/account/apps", Label: "nav.apps"},
	{Section: "activity", Href: "/account/activity", Label: "nav.activity"},
	{Section: "data", Href: "/account/data", Label: "nav.data"},
	{Section: "developer", Href: "/account/developer", Label: "nav.developer", Show: func(p *authn.Principal) bool {
		return p.Can("oauth_clients:write") || p.Can("api_keys:write")
	}},
	{Section: "integrations", Href: "/account/integrations", Label: "nav.integrations"},
}
