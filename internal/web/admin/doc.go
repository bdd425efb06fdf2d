// Package admin is the admin console, /admin/*: the overview, users and a
// user's page, roles, OAuth clients and API keys, the audit log and its
// reports, platforms, configuration, the chat platform and tracking. Each
// area is a type holding the services its REST routes call and the web
// kit's Handler (package web) for the page machinery: the console frame,
// CSRF, flash messages, texts and error pages. The templates (admin_*.html)
// and their texts live here; the routes and their rules are in
// internal/app/routes.go, the one table.
package admin

// adminSource is the source_service of the audit events the admin console's
// actions write: spec 2 (Events) names the operators' dashboard "backend".
const adminSource = "backend"
