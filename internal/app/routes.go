package app

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/api"
	. "hmid/internal/authn" //nolint:staticcheck // the rule names read as a table: Perm("roles:read"), PermOrSelf(…)
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/oauth/cors"
	"hmid/internal/passkey"
	"hmid/internal/web"
)

// routes lists every route of hmid with the access rule it needs. This file
// is the one place to read the whole API surface and its permissions.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.NotFound(httpx.NotFoundHandler)
	r.MethodNotAllowed(httpx.MethodNotAllowedHandler)
	// Every route is handled under the request limits (limits.go): an
	// in-flight slot and HMID_REQUEST_TIMEOUT, the database included.
	handling := s.limits.handle(s.limits.request)
	route := func(method, path string, rule Rule, h http.HandlerFunc) {
		r.With(handling, s.Guard.Require(rule)).Method(method, path, h)
	}
	// waiting is route for a handler that waits on another party for as long
	// as the spec allows, which may be longer than HMID_REQUEST_TIMEOUT: it
	// gets that wait on top of the usual time for its own work.
	waiting := func(wait time.Duration, method, path string, rule Rule, h http.HandlerFunc) {
		r.With(s.limits.handle(s.limits.request+wait), s.Guard.Require(rule)).Method(method, path, h)
	}
	// stream is route for what the request limits must neither cut nor
	// refuse: responses that last as long as the client wants, and /livez,
	// which must answer while the server is busy. HMID_MAX_CONNECTIONS
	// bounds them.
	stream := func(method, path string, rule Rule, h http.HandlerFunc) {
		r.With(s.limits.unbounded, s.Guard.Require(rule)).Method(method, path, h)
	}

	// ---- Health, info, contract, metrics (spec 3 Health and info) ----
	route("GET", "/health", Public(), s.health.Health)
	route("GET", "/v1/health", Public(), s.health.Health)
	stream("GET", "/livez", Public(), s.health.Live)
	route("GET", "/readyz", Public(), s.health.Ready)
	route("GET", "/v1", Public(), s.health.Info)
	route("GET", "/v1/openapi.yaml", Public(), serveOpenAPI)
	// /metrics: on a listener of its own with HMID_METRICS_ADDR (cmd/hmid),
	// else here, for system keys only: route and runtime figures are not public.
	if s.Config.MetricsAddr == "" {
		route("GET", "/metrics", SystemKey(), s.Metrics.Handler().ServeHTTP)
	}

	// ---- Roles and permissions (spec 1) ----
	ac := &s.accessHandler
	route("GET", "/v1/roles", Perm("roles:read"), ac.ListRoles)
	route("POST", "/v1/roles", Perm("roles:write"), ac.CreateRole)
	route("GET", "/v1/roles/{id}", Perm("roles:read"), ac.GetRole)
	route("PATCH", "/v1/roles/{id}", Perm("roles:write"), ac.UpdateRole)
	route("DELETE", "/v1/roles/{id}", Perm("roles:delete"), ac.DeleteRole)
	route("GET", "/v1/roles/{id}/permissions", Perm("roles:read"), ac.ListRolePermissions)
	route("POST", "/v1/roles/{id}/permissions", Perm("roles:write"), ac.AddRolePermission)
	route("DELETE", "/v1/roles/{id}/permissions/{permission_id}", Perm("roles:write"), ac.RemoveRolePermission)
	route("GET", "/v1/permissions", Perm("permissions:read"), ac.ListPermissions)
	route("POST", "/v1/permissions", Perm("permissions:write"), ac.CreatePermission)
	route("GET", "/v1/permissions/{id}", Perm("permissions:read"), ac.GetPermission)

	// ---- API keys (spec 1) ----
	route("GET", "/v1/api-keys", Perm("api_keys:read"), ac.ListKeys)
	route("POST", "/v1/api-keys", Perm("api_keys:write"), ac.CreateKey)
	route("GET", "/v1/api-keys/{id}", Perm("api_keys:read"), ac.GetKey)
	route("PATCH", "/v1/api-keys/{id}", Perm("api_keys:write"), ac.UpdateKey)
	route("DELETE", "/v1/api-keys/{id}", Perm("api_keys:delete"), ac.DeleteKey)
	route("POST", "/v1/api-keys/{id}/regenerate", Perm("api_keys:write"), ac.RegenerateKey)
	route("GET", "/v1/api-keys/{id}/roles", Perm("api_keys:read"), ac.ListKeyRoles)
	route("POST", "/v1/api-keys/{id}/roles", Perm("api_keys:write"), ac.AddKeyRole)
	route("DELETE", "/v1/api-keys/{id}/roles/{role_id}", Perm("api_keys:write"), ac.RemoveKeyRole)

	// ---- Users (spec 2 Users) ----
	us := s.usersArea.users
	route("GET", "/v1/users", Perm("users:read"), us.List)
	route("GET", "/v1/users/me", Authenticated().WithOAuth(""), us.Me)
	route("POST", "/v1/users/oauth", SystemKey(), us.OAuthLogin)
	route("GET", "/v1/users/email/{email}", Authenticated(), us.ByEmail)
	route("GET", "/v1/users/{id}", PermOrSelf("users:read", "id"), us.Get)
	route("PATCH", "/v1/users/{id}", PermOrSelf("users:write", "id"), us.Update)
	route("DELETE", "/v1/users/{id}", Perm("users:delete"), us.Delete)
	route("GET", "/v1/users/{id}/profile", PermOrSelf("users:read", "id").WithOAuth("profile"), us.GetProfile)
	route("PATCH", "/v1/users/{id}/locale", PermOrSelf("users:write", "id"), us.UpdateLocale)
	route("PATCH", "/v1/users/{id}/username", PermOrSelf("users:write", "id"), us.UpdateUsername)
	route("GET", "/v1/users/{id}/permissions", PermOrSelf("users:read", "id").WithOAuth("permissions"), us.Permissions)
	route("GET", "/v1/users/{id}/roles", PermOrSelf("users:read", "id").WithOAuth("roles"), us.Roles)
	route("POST", "/v1/users/{id}/roles", Perm("users:write"), us.AddRole)
	route("DELETE", "/v1/users/{id}/roles/{role_id}", Perm("users:write"), us.RemoveRole)

	// ---- Sessions (spec 2 Sessions) ----
	se := s.usersArea.sessions
	route("GET", "/v1/users/me/sessions", Session(), se.List)
	route("DELETE", "/v1/users/me/sessions", Session(), se.RevokeOthers)
	route("DELETE", "/v1/users/me/sessions/{session_id}", Session(), se.Revoke)
	route("POST", "/v1/sessions", SystemKey(), se.CreateInternal)
	route("GET", "/v1/sessions/{token}", SystemKey(), se.GetInternal)
	route("DELETE", "/v1/sessions/{token}", SystemKey(), se.DeleteInternal)

	// ---- OAuth 2.0 / OpenID Connect and the built-in pages (spec 1) ----
	// The protocol endpoints authenticate their callers themselves (clients by
	// their credentials, users by session token or cookie), so they are Public.
	// The client routes owned-or-permitted ("owner or oauth_clients:update")
	// are Authenticated(): the service checks ownership or the permission and
	// answers 404 for clients the caller may not see, 403 for clients the
	// caller may see but not change.
	//
	// Browser apps call the protocol endpoints from their own origins (CORS):
	// cors.AnyOrigin opens the public documents to every origin,
	// origins.Wrap the others to the web origins of active clients' redirect
	// URIs. Each has its OPTIONS preflight and the documents answer HEAD; no
	// other route carries CORS headers (docs/decisions.md, "Introspection and CORS").
	oa := s.oauthHandler
	origins := s.OAuth.Origins
	anyOrigin, clientOrigins := cors.AnyOrigin, origins.Wrap
	for _, doc := range []string{"/.well-known/openid-configuration", "/v1/.well-known/openid-configuration"} {
		route("GET", doc, Public(), anyOrigin(oa.Discovery))
		route("HEAD", doc, Public(), anyOrigin(oa.Discovery))
		route("OPTIONS", doc, Public(), cors.AnyOriginPreflight("GET, HEAD"))
	}
	// RFC 8414 metadata, also at its path-inserted form when the issuer has a path (§3.1).
	for _, doc := range authServerMetadataPaths(s.Config.PublicURL) {
		route("GET", doc, Public(), anyOrigin(oa.AuthServerMetadata))
		route("HEAD", doc, Public(), anyOrigin(oa.AuthServerMetadata))
		route("OPTIONS", doc, Public(), cors.AnyOriginPreflight("GET, HEAD"))
	}
	// RFC 9728: hmid's API as a protected resource; its 401s point here.
	route("GET", oauth.ProtectedResourcePath, Public(), anyOrigin(oa.ProtectedResourceMetadata))
	route("HEAD", oauth.ProtectedResourcePath, Public(), anyOrigin(oa.ProtectedResourceMetadata))
	route("OPTIONS", oauth.ProtectedResourcePath, Public(), cors.AnyOriginPreflight("GET, HEAD"))
	route("GET", "/v1/oauth/jwks", Public(), anyOrigin(oa.JWKS))
	route("HEAD", "/v1/oauth/jwks", Public(), anyOrigin(oa.JWKS))
	route("OPTIONS", "/v1/oauth/jwks", Public(), cors.AnyOriginPreflight("GET, HEAD"))
	route("GET", "/v1/oauth/authorize", Public(), oa.Authorize)
	route("POST", "/v1/oauth/authorize", Public(), oa.Authorize)
	route("POST", "/v1/oauth/authorize/consent", Session(), oa.Consent)
	route("POST", "/v1/oauth/token", Public(), clientOrigins(oa.Token))
	route("OPTIONS", "/v1/oauth/token", Public(), origins.Preflight("POST"))
	route("GET", "/v1/oauth/userinfo", Public(), clientOrigins(oa.UserInfo))
	route("HEAD", "/v1/oauth/userinfo", Public(), clientOrigins(oa.UserInfo))
	route("POST", "/v1/oauth/userinfo", Public(), clientOrigins(oa.UserInfo))
	route("OPTIONS", "/v1/oauth/userinfo", Public(), origins.Preflight("GET, HEAD, POST"))
	route("POST", "/v1/oauth/revoke", Public(), clientOrigins(oa.Revoke))
	route("OPTIONS", "/v1/oauth/revoke", Public(), origins.Preflight("POST"))
	// Introspection (RFC 7662): a confidential client's credentials or a
	// system API key as Bearer, checked by the handler like the token
	// endpoint's client authentication.
	route("POST", "/v1/oauth/introspect", Public(), clientOrigins(oa.Introspect))
	route("OPTIONS", "/v1/oauth/introspect", Public(), origins.Preflight("POST"))
	// RP-Initiated Logout 1.0: the end_session_endpoint is a page (it may
	// ask the person to confirm), so the web kit serves it.
	route("GET", "/v1/oauth/logout", Public(), s.signinPages.EndSession)
	route("POST", "/v1/oauth/logout", Public(), s.signinPages.EndSession)
	// Device authorization grant (RFC 8628, issue 21): the device asks for
	// its codes here and polls the token endpoint; the person enters the
	// code on /device, a page that reads the session cookie itself and sends
	// the signed-out to the login page first (like /consent).
	route("POST", "/v1/oauth/device_authorization", Public(), oa.DeviceAuthorization)
	route("GET", "/device", Public(), s.signinPages.DeviceForm)
	route("POST", "/device", Public(), s.signinPages.DeviceSubmit)
	route("GET", "/v1/oauth/clients", Authenticated(), oa.ListClients)
	route("POST", "/v1/oauth/clients", Authenticated(), oa.CreateClient)
	route("GET", "/v1/oauth/clients/all", Perm("oauth_clients:read"), oa.ListAllClients)
	route("GET", "/v1/oauth/clients/{id}", Authenticated(), oa.GetClient)
	route("PATCH", "/v1/oauth/clients/{id}", Authenticated(), oa.UpdateClient)
	route("DELETE", "/v1/oauth/clients/{id}", Authenticated(), oa.DeleteClient)
	route("POST", "/v1/oauth/clients/{id}/regenerate-secret", Authenticated(), oa.RegenerateSecret)
	// Dynamic client registration (RFC 7591) and management (RFC 7592):
	// the registration endpoint checks the initial access token itself (in
	// HMID_DYNAMIC_REGISTRATION=token mode; anyone in open mode; 404 when
	// off), the management endpoints the client's registration access
	// token. Initial access tokens are for super admins and system keys
	// (Perm("*:*") admits only them and holders of the wildcard).
	// Browser-based MCP hosts register from their own origin; registration
	// takes no cookie (an initial access token at most), so any origin may.
	route("POST", "/v1/oauth/register", Public(), anyOrigin(oa.Register))
	route("OPTIONS", "/v1/oauth/register", Public(), cors.AnyOriginPreflight("POST"))
	route("GET", "/v1/oauth/register/{id}", Public(), oa.ReadRegistration)
	route("PUT", "/v1/oauth/register/{id}", Public(), oa.UpdateRegistration)
	route("DELETE", "/v1/oauth/register/{id}", Public(), oa.DeleteRegistration)
	route("GET", "/v1/oauth/initial-access-tokens", Perm("*:*"), oa.ListInitialTokens)
	route("POST", "/v1/oauth/initial-access-tokens", Perm("*:*"), oa.CreateInitialToken)
	route("DELETE", "/v1/oauth/initial-access-tokens/{id}", Perm("*:*"), oa.RevokeInitialToken)
	// REST twins of GraphQL myOauthConsents and revokeOauthConsent (extension).
	route("GET", "/v1/users/me/consents", Authenticated(), oa.ListMyConsents)
	route("DELETE", "/v1/users/me/consents/{client_id}", Authenticated(), oa.RevokeMyConsent)

	// Built-in pages and login extension endpoints
	au, wp := s.authAPI, s.signinPages
	route("POST", "/v1/auth/login", Public(), au.Login)
	route("POST", "/v1/auth/register", Public(), au.Register)
	route("POST", "/v1/auth/logout", Optional(), au.Logout)
	route("POST", "/v1/auth/password-reset/request", Public(), au.ResetRequest)
	route("POST", "/v1/auth/password-reset/confirm", Public(), au.ResetConfirm)
	route("POST", "/v1/auth/verify-email", Public(), au.VerifyEmail) // the mailed token is the credential
	route("POST", "/v1/auth/verify-email/resend", Session(), au.ResendVerification)
	route("POST", "/v1/users/me/password", Session(), au.ChangePassword)
	route("GET", "/", Public(), wp.Home)
	route("GET", "/assets/hmid.css", Public(), wp.Stylesheet)
	route("GET", "/assets/hmid.js", Public(), wp.Script)
	// The site's icon, which browsers ask for on every page (issue 22).
	route("GET", "/favicon.ico", Public(), wp.Favicon)
	route("GET", "/login", Public(), wp.LoginForm)
	route("POST", "/login", Public(), wp.LoginSubmit)
	// Sign-in with an upstream provider. The callback's state is the
	// credential; connecting (POST) checks the session cookie and a CSRF
	// token in the handler, like the other pages.
	route("GET", "/login/{slug}", Public(), wp.ProviderStart)
	route("POST", "/login/{slug}", Public(), wp.ProviderConnect)
	route("GET", "/login/{slug}/callback", Public(), wp.ProviderCallback)
	route("GET", "/register", Public(), wp.RegisterForm)
	route("POST", "/register", Public(), wp.RegisterSubmit)
	route("GET", "/consent", Public(), wp.ConsentForm)
	route("POST", "/consent", Public(), web.AuditSource("/consent", wp.ConsentSubmit))
	route("GET", "/logout", Public(), wp.LogoutForm)
	route("POST", "/logout", Public(), wp.LogoutSubmit)
	route("GET", "/forgot-password", Public(), wp.ForgotForm)
	route("POST", "/forgot-password", Public(), wp.ForgotSubmit)
	route("GET", "/reset-password", Public(), wp.ResetForm)
	route("POST", "/reset-password", Public(), wp.ResetSubmit)
	route("GET", "/verify-email", Public(), wp.VerifyAddressForm)
	route("POST", "/verify-email", Public(), wp.VerifyAddressSubmit)
	route("GET", "/account/email/verify", Public(), wp.VerifyEmailForm)
	route("POST", "/account/email/verify", Public(), wp.VerifyEmailSubmit)
	route("GET", "/account/email-link/verify", Public(), wp.VerifyLinkForm)
	route("POST", "/account/email-link/verify", Public(), wp.VerifyLinkSubmit)

	// ---- Account console (/account/*): each page has the rule of the REST
	// route that does the same, taken from the hmid_session cookie ----
	// Each page records its events as the website's or the admin console's
	// (web.AuditSource), not the API's.
	page := func(method, path string, rule Rule, h http.HandlerFunc) {
		route(method, path, rule.InBrowser(), web.AuditSource(path, h))
	}
	streamPage := func(method, path string, rule Rule, h http.HandlerFunc) {
		stream(method, path, rule.InBrowser(), web.AuditSource(path, h))
	}
	waitingPage := func(wait time.Duration, method, path string, rule Rule, h http.HandlerFunc) {
		waiting(wait, method, path, rule.InBrowser(), web.AuditSource(path, h))
	}
	sp := s.sessionPages
	page("GET", "/account/sessions", Session(), sp.List)
	page("POST", "/account/sessions/revoke-others", Session(), sp.RevokeOthers)
	page("POST", "/account/sessions/{id}/revoke", Session(), sp.Revoke)
	// (profile and linked accounts) The REST routes are PermOrSelf(…, "id");
	// acting on oneself, as these pages do, needs only to be signed in.
	pp, lp := s.profilePages, s.linkedPages
	page("GET", "/account", Authenticated(), pp.Show)                               // GET /v1/users/{id}
	page("POST", "/account/profile", Authenticated(), pp.Save)                      // PATCH /v1/users/{id}
	page("POST", "/account/language", Authenticated(), pp.SaveLocale)               // PATCH /v1/users/{id}/locale
	page("POST", "/account/email", Authenticated(), pp.RequestEmailChange)          // POST /v1/users/{id}/email/request-change
	page("POST", "/account/email/cancel", Authenticated(), pp.CancelEmailChange)    // DELETE /v1/users/{id}/email/pending
	page("POST", "/account/email-link", Authenticated(), pp.RequestEmailLink)       // POST /v1/users/{id}/email-link/request
	page("POST", "/account/email-link/cancel", Authenticated(), pp.CancelEmailLink) // DELETE /v1/users/{id}/email-link/pending
	page("GET", "/account/linked", Authenticated(), lp.List)                        // GET /v1/users/{id}/accounts
	page("POST", "/account/linked/{id}/primary", Authenticated(), lp.SetPrimary)    // PUT /v1/users/{id}/accounts/{account_id}/primary
	page("POST", "/account/linked/{id}/unlink", Authenticated(), lp.Unlink)         // DELETE /v1/users/{id}/accounts/{account_id}
	// (security: password and two-factor)
	sec := s.securityPages
	page("GET", "/account/security", Session(), sec.Show)
	page("POST", "/account/security/password", Session(), sec.ChangePassword)
	page("POST", "/account/security/2fa/setup", Authenticated(), sec.Setup)
	page("POST", "/account/security/2fa/verify", Authenticated(), sec.Verify)
	page("POST", "/account/security/2fa/backup-codes", Authenticated(), sec.Regenerate)
	page("POST", "/account/security/2fa/disable", Authenticated(), sec.Disable)
	// (connected apps and your data)
	ap, dp := s.appPages, s.dataPages
	page("GET", "/account/apps", Authenticated(), ap.List)
	page("POST", "/account/apps/{client_id}/revoke", Authenticated(), ap.Revoke)
	page("GET", "/account/data", Authenticated(), dp.Show)
	streamPage("GET", "/account/data/export", Authenticated(), dp.Download) // the archive streams like GET /v1/user/export
	page("POST", "/account/data/deletion", Session(), dp.RequestDeletion)
	page("POST", "/account/data/deletion/cancel", Session(), dp.CancelDeletion)
	// (activity and integrations)
	act, ipg := s.activityPages, s.integrationPages
	page("GET", "/account/activity", Authenticated(), act.List)
	page("POST", "/account/activity/{event_id}/report", Authenticated(), act.Report)
	page("GET", "/account/integrations", Authenticated(), ipg.List)
	page("POST", "/account/integrations/connect", Authenticated(), ipg.Connect)
	page("POST", "/account/integrations/{id}/refresh", Authenticated(), ipg.Refresh)
	page("POST", "/account/integrations/{id}/stats", Authenticated(), ipg.Stats)
	page("POST", "/account/integrations/{id}/bot-status", Authenticated(), ipg.BotStatus)
	page("POST", "/account/integrations/{id}/disconnect", Authenticated(), ipg.Disconnect)
	// (developer: OAuth clients and API keys)
	// Clients as /v1/oauth/clients: Authenticated(), the service checks
	// ownership; API keys with the rules of the /v1/api-keys routes.
	dv := s.developerPages
	page("GET", "/account/developer", Authenticated(), dv.List)
	page("GET", "/account/developer/clients/new", Authenticated(), dv.NewClient)
	page("POST", "/account/developer/clients", Authenticated(), dv.CreateClient)
	page("GET", "/account/developer/clients/{id}", Authenticated(), dv.Client)
	page("POST", "/account/developer/clients/{id}", Authenticated(), dv.UpdateClient)
	page("POST", "/account/developer/clients/{id}/secret", Authenticated(), dv.RegenerateSecret)
	page("POST", "/account/developer/clients/{id}/delete", Authenticated(), dv.DeleteClient)
	page("GET", "/account/developer/keys/new", Perm("api_keys:write"), dv.NewKey)
	page("POST", "/account/developer/keys", Perm("api_keys:write"), dv.CreateKey)
	page("GET", "/account/developer/keys/{id}", Perm("api_keys:read"), dv.Key)
	page("POST", "/account/developer/keys/{id}/regenerate", Perm("api_keys:write"), dv.RegenerateKey)
	page("POST", "/account/developer/keys/{id}/delete", Perm("api_keys:delete"), dv.DeleteKey)
	page("POST", "/account/developer/keys/{id}/roles", Perm("api_keys:write"), dv.AddKeyRole)
	page("POST", "/account/developer/keys/{id}/roles/{role_id}/remove", Perm("api_keys:write"), dv.RemoveKeyRole)

	// ---- Admin console (/admin/*): each page has the rule of the REST route
	// that does the same; the overview needs any of the admin permissions ----
	// (admin: overview and users list)
	page("GET", "/admin", AnyPerm(web.AdminPermissions...), s.adminOverviewPages.Show)
	page("GET", "/admin/users", Perm("users:read"), s.adminUserListPages.List) // GET /v1/users
	// (admin: one user) Each action has the rule of its REST twin (in the
	// comment). Another user's sessions have no REST route: their pages take
	// users:write, the rule of the other changes to a user's account
	// (docs/decisions.md, "Admin console: one user").
	aup := s.adminUserPages
	page("GET", "/admin/users/{id}", Perm("users:read"), aup.Show)                                // GET /v1/users/{id}
	page("POST", "/admin/users/{id}/roles", Perm("users:write"), aup.AddRole)                     // POST /v1/users/{id}/roles
	page("POST", "/admin/users/{id}/roles/{role_id}/remove", Perm("users:write"), aup.RemoveRole) // DELETE /v1/users/{id}/roles/{role_id}
	page("POST", "/admin/users/{id}/sessions/{session_id}/revoke", Perm("users:write"), aup.RevokeSession)
	page("POST", "/admin/users/{id}/sessions/revoke-all", Perm("users:write"), aup.RevokeSessions)
	page("POST", "/admin/users/{id}/2fa/reset", Perm("two_factor:manage"), aup.ResetTwoFactor) // POST /v1/users/{id}/2fa/reset
	page("POST", "/admin/users/{id}/ban", Perm("users:ban"), aup.Ban)                          // POST /v1/users/{id}/ban
	page("POST", "/admin/users/{id}/ban/lift", Perm("users:ban"), aup.Lift)                    // DELETE /v1/users/{id}/ban
	page("POST", "/admin/users/{id}/deletion", Perm("users:delete"), aup.ScheduleDeletion)     // DELETE /v1/users/{id}
	page("POST", "/admin/users/{id}/deletion/cancel", Perm("users:write"), aup.CancelDeletion) // POST /v1/admin/users/{id}/cancel-deletion
	page("POST", "/admin/users/{id}/deletion/force", Perm("users:delete"), aup.ForceDelete)    // POST /v1/admin/users/{id}/force-delete
	page("GET", "/admin/users/{id}/audit", Perm("audit:read"), aup.AuditLog)                   // GET /v1/admin/audit?user_id={id}
	// (issue 22: first administrator and operators' user management) The
	// setup token in the link is the credential of /setup; each console
	// action has the rule of its REST twin under /v1/admin/users.
	route("GET", "/setup", Public(), wp.SetupForm)
	route("POST", "/setup", Public(), wp.SetupSubmit)
	ua := s.userAdmin
	route("POST", "/v1/admin/users", Perm("users:write"), ua.Create)
	route("PATCH", "/v1/admin/users/{id}", Perm("users:write"), ua.Update)
	route("POST", "/v1/admin/users/{id}/password", Perm("users:write"), ua.SetPassword)
	route("POST", "/v1/admin/users/{id}/password-reset", Perm("users:write"), ua.SendReset)
	route("POST", "/v1/admin/users/{id}/email/verified", Perm("users:write"), ua.MarkVerified)
	route("POST", "/v1/admin/users/{id}/email/verification", Perm("users:write"), ua.ResendVerification)
	route("DELETE", "/v1/admin/users/{id}/sessions", Perm("users:write"), ua.SignOut)
	page("GET", "/admin/users/new", Perm("users:write"), aup.NewUser)                                 // POST /v1/admin/users
	page("POST", "/admin/users", Perm("users:write"), aup.CreateUser)                                 // POST /v1/admin/users
	page("POST", "/admin/users/{id}/profile", Perm("users:write"), aup.SaveProfile)                   // PATCH /v1/admin/users/{id}
	page("POST", "/admin/users/{id}/password", Perm("users:write"), aup.SetPassword)                  // POST /v1/admin/users/{id}/password
	page("POST", "/admin/users/{id}/password-reset", Perm("users:write"), aup.SendReset)              // POST /v1/admin/users/{id}/password-reset
	page("POST", "/admin/users/{id}/email/verified", Perm("users:write"), aup.MarkVerified)           // POST /v1/admin/users/{id}/email/verified
	page("POST", "/admin/users/{id}/email/verification", Perm("users:write"), aup.ResendVerification) // POST /v1/admin/users/{id}/email/verification
	page("POST", "/account/email/verification", Session(), s.profilePages.ResendVerification)         // POST /v1/auth/verify-email/resend
	if s.Config.SMTPURL == "" {
		page("GET", "/admin/mail", SuperAdmin(), s.adminMailPages.List) // the outbox exists only without SMTP
	}
	// (admin: roles and permissions) Each page and action has the rule of
	// the /v1/roles or /v1/permissions route doing the same; the escalation
	// rule of a role's permissions is the service's, as for REST.
	arp := s.adminRolesPages
	page("GET", "/admin/roles", Perm("roles:read"), arp.List)                                                       // GET /v1/roles
	page("POST", "/admin/roles", Perm("roles:write"), arp.Create)                                                   // POST /v1/roles
	page("GET", "/admin/roles/permissions", Perm("permissions:read"), arp.Permissions)                              // GET /v1/permissions
	page("POST", "/admin/roles/permissions", Perm("permissions:write"), arp.CreatePermission)                       // POST /v1/permissions
	page("GET", "/admin/roles/{id}", Perm("roles:read"), arp.Role)                                                  // GET /v1/roles/{id} (and its permissions)
	page("POST", "/admin/roles/{id}", Perm("roles:write"), arp.Update)                                              // PATCH /v1/roles/{id}
	page("POST", "/admin/roles/{id}/delete", Perm("roles:delete"), arp.Delete)                                      // DELETE /v1/roles/{id}
	page("POST", "/admin/roles/{id}/permissions", Perm("roles:write"), arp.AddPermission)                           // POST /v1/roles/{id}/permissions
	page("POST", "/admin/roles/{id}/permissions/{permission_id}/remove", Perm("roles:write"), arp.RemovePermission) // DELETE /v1/roles/{id}/permissions/{permission_id}
	// (admin: OAuth clients and API keys)
	// The list of every client has the rule of GET /v1/oauth/clients/all;
	// the client pages those of /v1/oauth/clients (signed in: the service
	// checks ownership or the oauth_clients permissions, and lets only super
	// admins set the first-party flag); the key pages those of /v1/api-keys.
	crp := s.adminCredentialPages
	page("GET", "/admin/clients", Perm("oauth_clients:read"), crp.ListClients) // GET /v1/oauth/clients/all
	// The admin area's own client pages are for operators who may read
	// every client; a user's own clients are at /account/developer. The
	// actions keep the REST rules (the service decides what each may do).
	page("GET", "/admin/clients/new", Perm("oauth_clients:read"), crp.NewClient)                           // POST /v1/oauth/clients
	page("POST", "/admin/clients", Authenticated(), crp.CreateClient)                                      // POST /v1/oauth/clients
	page("GET", "/admin/clients/{id}", Perm("oauth_clients:read"), crp.Client)                             // GET /v1/oauth/clients/{id}
	page("POST", "/admin/clients/{id}", Authenticated(), crp.UpdateClient)                                 // PATCH /v1/oauth/clients/{id}
	page("POST", "/admin/clients/{id}/active", Authenticated(), crp.SetClientActive)                       // PATCH /v1/oauth/clients/{id}
	page("POST", "/admin/clients/{id}/secret", Authenticated(), crp.RegenerateSecret)                      // POST /v1/oauth/clients/{id}/regenerate-secret
	page("POST", "/admin/clients/{id}/delete", Authenticated(), crp.DeleteClient)                          // DELETE /v1/oauth/clients/{id}
	page("GET", "/admin/api-keys", Perm("api_keys:read"), crp.ListKeys)                                    // GET /v1/api-keys
	page("GET", "/admin/api-keys/new", Perm("api_keys:write"), crp.NewKey)                                 // POST /v1/api-keys
	page("POST", "/admin/api-keys", Perm("api_keys:write"), crp.CreateKey)                                 // POST /v1/api-keys
	page("GET", "/admin/api-keys/{id}", Perm("api_keys:read"), crp.Key)                                    // GET /v1/api-keys/{id}
	page("POST", "/admin/api-keys/{id}/regenerate", Perm("api_keys:write"), crp.RegenerateKey)             // POST /v1/api-keys/{id}/regenerate
	page("POST", "/admin/api-keys/{id}/active", Perm("api_keys:write"), crp.SetKeyActive)                  // PATCH /v1/api-keys/{id}
	page("POST", "/admin/api-keys/{id}/delete", Perm("api_keys:delete"), crp.DeleteKey)                    // DELETE /v1/api-keys/{id}
	page("POST", "/admin/api-keys/{id}/roles", Perm("api_keys:write"), crp.AddKeyRole)                     // POST /v1/api-keys/{id}/roles
	page("POST", "/admin/api-keys/{id}/roles/{role_id}/remove", Perm("api_keys:write"), crp.RemoveKeyRole) // DELETE /v1/api-keys/{id}/roles/{role_id}

	// Initial access tokens for dynamic registration (RFC 7591) on
	// /admin/clients, with the rule of /v1/oauth/initial-access-tokens.
	page("POST", "/admin/clients/initial-tokens", Perm("*:*"), crp.CreateInitialToken)             // POST /v1/oauth/initial-access-tokens
	page("POST", "/admin/clients/initial-tokens/{id}/revoke", Perm("*:*"), crp.RevokeInitialToken) // DELETE /v1/oauth/initial-access-tokens/{id}

	// (admin: audit log and reports)
	aa := s.adminAuditPages
	page("GET", "/admin/audit", Perm("audit:read"), aa.List) // GET /v1/admin/audit
	// (the file streams like GET /v1/admin/audit/export)
	streamPage("GET", "/admin/audit/export", Perm("audit:read"), aa.Export)
	page("GET", "/admin/audit/reports", Perm("audit:read"), aa.Reports)       // GET /v1/admin/audit/reports
	page("POST", "/admin/audit/reports/{id}", Perm("audit:write"), aa.Review) // PATCH /v1/admin/audit/reports/{report_id}
	// (admin: platforms and configuration)
	// The pages are seen with settings:read, the rule of the GET routes of
	// /v1/settings and /v1/system-config (the API's platform list is public;
	// this is the operators' view of it, with its forms), and act with the
	// rule of the route each action names.
	apf, acf := s.adminPlatformPages, s.adminConfigPages
	page("GET", "/admin/platforms", Perm("settings:read"), apf.List)
	page("POST", "/admin/platforms/{id_or_slug}/enabled", Perm("settings:write"), apf.SetEnabled) // PATCH /v1/platforms/{id_or_slug}/enabled
	page("POST", "/admin/platforms/{id_or_slug}/settings", Perm("settings:write"), apf.Settings)  // PATCH /v1/platforms/{id_or_slug}/settings
	page("GET", "/admin/config", Perm("settings:read"), acf.List)                                 // GET /v1/system-config, GET /v1/settings
	page("POST", "/admin/config/system/{key}", Perm("settings:write"), acf.UpdateConfig)          // PATCH /v1/system-config/{key}
	page("GET", "/admin/config/new-setting", Perm("settings:write"), acf.NewSetting)
	page("POST", "/admin/config/new-setting", Perm("settings:write"), acf.CreateSetting)            // POST /v1/settings
	page("GET", "/admin/config/settings/{key}", Perm("settings:read"), acf.Setting)                 // GET /v1/settings/{key}
	page("POST", "/admin/config/settings/{key}", Perm("settings:write"), acf.UpdateSetting)         // PUT /v1/settings/{key}
	page("POST", "/admin/config/settings/{key}/delete", Perm("settings:delete"), acf.DeleteSetting) // DELETE /v1/settings/{key}
	// (admin: chat platform and tracking) The tracking page lists devices
	// and trips, each for holders of its REST route's permission.
	acp, atp := s.adminChatPages, s.adminTrackingPages
	page("GET", "/admin/chat", Perm("chatplatform:read"), acp.Index)                                         // GET /v1/chatplatform/guilds, …/settings
	page("POST", "/admin/chat/settings", Perm("chatplatform:edit"), acp.SaveSettings)                        // PUT /v1/chatplatform/settings
	page("GET", "/admin/chat/guilds/{guild_id}", Perm("chatplatform:read"), acp.Guild)                       // GET …/guilds/{guild_id}/full, …/members
	page("POST", "/admin/chat/guilds/{guild_id}/settings", Perm("chatplatform:edit"), acp.SaveGuildLanguage) // PUT …/guilds/{guild_id}/settings
	page("GET", "/admin/tracking", AnyPerm("devices:read", "trips:read"), atp.Index)                         // GET /v1/devices, GET /v1/trips
	page("GET", "/admin/tracking/trips/{id}", Perm("trips:read"), atp.Trip)                                  // GET /v1/trips/{id}, …/history, …/gps
	// The syncs wait for the bot as their REST routes do (below).
	waitingPage(s.Chat.SyncWait(), "POST", "/admin/chat/sync", Perm("chatplatform:sync"), acp.Sync)
	waitingPage(s.Chat.MemberSyncWait(), "POST", "/admin/chat/guilds/{guild_id}/members/sync", Perm("chatplatform:guild.sync"), acp.SyncMembers)

	// ---- Accounts: email change and link, platform accounts, platforms, two-factor, bans, deletion (spec 2) ----
	accH, platH, banH, delH := &s.accountsHandler, &s.platformsHandler, &s.bansHandler, &s.deletionHandler
	route("POST", "/v1/users/{id}/email/request-change", PermOrSelf("users:write", "id"), accH.RequestEmailChange)
	route("POST", "/v1/users/email/verify", Authenticated(), accH.VerifyEmailChange)
	route("GET", "/v1/users/{id}/email/pending", PermOrSelf("users:read", "id"), accH.PendingEmailChange)
	route("DELETE", "/v1/users/{id}/email/pending", PermOrSelf("users:write", "id"), accH.CancelEmailChange)
	route("POST", "/v1/users/{id}/email-link/request", PermOrSelf("users:write", "id"), accH.RequestEmailLink)
	route("POST", "/v1/users/email-link/verify", Authenticated(), accH.VerifyEmailLink)
	route("GET", "/v1/users/{id}/email-link/pending", PermOrSelf("users:read", "id"), accH.PendingEmailLink)
	route("DELETE", "/v1/users/{id}/email-link/pending", PermOrSelf("users:write", "id"), accH.CancelEmailLink)
	route("GET", "/v1/users/{id}/accounts", PermOrSelf("users:read", "id"), accH.ListAccounts)
	route("PUT", "/v1/users/{id}/accounts/{account_id}/primary", PermOrSelf("users:write", "id"), accH.SetPrimary)
	route("DELETE", "/v1/users/{id}/accounts/{account_id}", PermOrSelf("users:write", "id"), accH.Unlink)
	route("GET", "/v1/platforms", Public(), platH.List)
	route("GET", "/v1/platforms/enabled", Public(), platH.ListEnabled)
	route("GET", "/v1/platforms/{id_or_slug}", Public(), platH.Get)
	route("PATCH", "/v1/platforms/{id_or_slug}/enabled", Perm("settings:write"), platH.SetEnabled)
	route("PATCH", "/v1/platforms/{id_or_slug}/settings", Perm("settings:write"), platH.UpdateSettings)
	route("GET", "/v1/users/{id}/ban", PermOrSelf("users:read", "id"), banH.Status)
	route("POST", "/v1/users/{id}/ban", Perm("users:ban"), banH.Create)
	route("DELETE", "/v1/users/{id}/ban", Perm("users:ban"), banH.Lift)
	route("GET", "/v1/users/{id}/bans", Perm("users:read"), banH.History)
	route("GET", "/v1/admin/users/{id}/deletion-status", Perm("users:read"), delH.Status)
	route("POST", "/v1/admin/users/{id}/force-delete", Perm("users:delete"), delH.ForceDelete)
	route("POST", "/v1/admin/users/{id}/cancel-deletion", Perm("users:write"), delH.CancelDeletion)
	// Self-requested deletion (extension): confirmed by the password or a second factor.
	route("GET", "/v1/users/me/deletion", Session(), delH.MyStatus)
	route("POST", "/v1/users/me/deletion", Session(), delH.RequestMine)
	route("DELETE", "/v1/users/me/deletion", Session(), delH.CancelMine)

	// Two-factor authentication (REST)
	// Access rule (enforced by twofactor.Service.Authorize): a user on themself
	// with a session token needs no permission; an API key needs
	// two_factor:read (status, requirement) or two_factor:write (the rest);
	// another user (user_id) needs two_factor:manage or super admin; a system
	// key must pass user_id.
	tf := s.twoFactorHandler
	route("GET", "/v1/users/me/2fa/status", Authenticated(), tf.Status)
	route("GET", "/v1/users/me/2fa/requirement", Authenticated(), tf.Requirement)
	route("POST", "/v1/users/me/2fa/setup", Authenticated(), tf.Setup)
	route("POST", "/v1/users/me/2fa/verify", Authenticated(), tf.Verify)
	route("DELETE", "/v1/users/me/2fa", Authenticated(), tf.Disable)
	route("POST", "/v1/users/me/2fa/backup-codes/regenerate", Authenticated(), tf.RegenerateBackupCodes)
	// An administrator's reset for a user who lost their authenticator (extension).
	route("POST", "/v1/users/{id}/2fa/reset", Perm("two_factor:manage"), tf.Reset)

	// ---- Webhooks (Standard Webhooks; issue 23) ----
	wh := s.webhooksHandler
	route("GET", "/v1/webhooks", Perm("webhooks:read"), wh.List)
	route("POST", "/v1/webhooks", Perm("webhooks:write"), wh.Create)
	route("GET", "/v1/webhooks/event-types", Perm("webhooks:read"), wh.EventTypes)
	route("GET", "/v1/webhooks/{id}", Perm("webhooks:read"), wh.Get)
	route("PATCH", "/v1/webhooks/{id}", Perm("webhooks:write"), wh.Update)
	route("DELETE", "/v1/webhooks/{id}", Perm("webhooks:write"), wh.Delete)
	route("POST", "/v1/webhooks/{id}/rotate", Perm("webhooks:write"), wh.Rotate)
	route("POST", "/v1/webhooks/{id}/test", Perm("webhooks:write"), wh.Test)
	route("GET", "/v1/webhooks/{id}/deliveries", Perm("webhooks:read"), wh.Deliveries)
	route("POST", "/v1/webhooks/{id}/deliveries/{delivery_id}/resend", Perm("webhooks:write"), wh.Resend)
	// (admin: webhooks; each page acts with the rule of the route it names)
	awp := s.adminWebhookPages
	page("GET", "/admin/webhooks", Perm("webhooks:read"), awp.List)                                          // GET /v1/webhooks
	page("POST", "/admin/webhooks", Perm("webhooks:write"), awp.Create)                                      // POST /v1/webhooks
	page("GET", "/admin/webhooks/{id}", Perm("webhooks:read"), awp.Show)                                     // GET /v1/webhooks/{id}, …/deliveries
	page("POST", "/admin/webhooks/{id}", Perm("webhooks:write"), awp.Update)                                 // PATCH /v1/webhooks/{id}
	page("POST", "/admin/webhooks/{id}/enabled", Perm("webhooks:write"), awp.SetEnabled)                     // PATCH /v1/webhooks/{id}
	page("POST", "/admin/webhooks/{id}/rotate", Perm("webhooks:write"), awp.Rotate)                          // POST /v1/webhooks/{id}/rotate
	page("POST", "/admin/webhooks/{id}/delete", Perm("webhooks:write"), awp.Delete)                          // DELETE /v1/webhooks/{id}
	page("POST", "/admin/webhooks/{id}/test", Perm("webhooks:write"), awp.Test)                              // POST /v1/webhooks/{id}/test
	page("POST", "/admin/webhooks/{id}/deliveries/{delivery_id}/resend", Perm("webhooks:write"), awp.Resend) // POST …/resend
	// ---- Passkeys (issue 20) ----
	// REST twins (extensions): the caller's own passkeys, and an
	// operator's view of a user's. The ceremony endpoints the pages' script
	// calls answer JSON but are bound to the browser (CSRF token and cookie),
	// like the pages they belong to (docs/decisions.md, "Passkeys").
	pk := s.passkeyHandler
	route("GET", "/v1/users/me/passkeys", Authenticated(), pk.ListMine)
	route("PATCH", "/v1/users/me/passkeys/{id}", Authenticated(), pk.RenameMine)
	route("DELETE", "/v1/users/me/passkeys/{id}", Authenticated(), pk.RemoveMine)
	route("GET", "/v1/users/{id}/passkeys", PermOrSelf("users:read", "id"), pk.ListUser)
	route("DELETE", "/v1/users/{id}/passkeys/{passkey_id}", Perm("users:write"), pk.RemoveUser)
	route("GET", "/assets/passkey.js", Public(), passkey.Script)
	route("POST", "/login/passkey/options", Public(), wp.PasskeyOptions)
	route("POST", "/login/passkey", Public(), wp.PasskeyLogin)
	page("POST", "/account/security/passkeys/options", Session(), sec.PasskeyOptions)
	page("POST", "/account/security/passkeys", Session(), sec.AddPasskey)
	page("POST", "/account/security/passkeys/{id}/rename", Session(), sec.RenamePasskey)                   // PATCH /v1/users/me/passkeys/{id}
	page("POST", "/account/security/passkeys/{id}/remove", Session(), sec.RemovePasskey)                   // DELETE /v1/users/me/passkeys/{id}
	page("POST", "/admin/users/{id}/passkeys/{passkey_id}/remove", Perm("users:write"), aup.RemovePasskey) // DELETE /v1/users/{id}/passkeys/{passkey_id}

	// ---- Audit log, reports, internal audit, data export (spec 2) ----
	ad, ex := s.auditHandler, s.exportHandler
	route("GET", "/v1/users/me/audit", Authenticated(), ad.ListMine)
	route("GET", "/v1/users/me/audit/reports", Authenticated(), ad.ListMyReports)
	route("POST", "/v1/users/me/audit/{event_id}/report", Authenticated(), ad.CreateReport)
	route("GET", "/v1/users/{user_id}/audit", Perm("audit:read"), ad.ListUser)
	route("GET", "/v1/admin/audit", Perm("audit:read"), ad.ListAdmin)
	// Extension: the listing's filtered events as one CSV file, streamed.
	stream("GET", "/v1/admin/audit/export", Perm("audit:read"), ad.ExportAdmin)
	route("GET", "/v1/admin/audit/reports", Perm("audit:read"), ad.ListReports)
	route("PATCH", "/v1/admin/audit/reports/{report_id}", Perm("audit:write"), ad.UpdateReport)
	// Optional: the handler accepts a system key in X-ID-App-Key OR a bearer
	// principal holding audit:write, and answers 401 otherwise.
	route("POST", "/v1/internal/audit", Optional(), ad.Internal)
	stream("GET", "/v1/user/export", Authenticated(), ex.Export)
	route("GET", "/v1/user/export/logs", Authenticated(), ex.Logs)

	// ---- Tracking: GPS, devices, trips, locations, geofences, categories, templates (spec 3) ----
	tr := s.tracking
	route("GET", "/v1/gps", Perm("gps:read"), tr.ListGPS)
	route("POST", "/v1/gps", Perm("gps:write"), tr.CreateGPS)
	route("GET", "/v1/gps/current", Perm("gps:read"), tr.CurrentGPS)
	route("GET", "/v1/gps/current/devices", Perm("gps:read"), tr.CurrentByDevice)
	route("GET", "/v1/gps/{id}", Perm("gps:read"), tr.GetGPS)
	route("DELETE", "/v1/gps/{id}", Perm("gps:delete"), tr.DeleteGPS)
	route("GET", "/v1/devices", Perm("devices:read"), tr.ListDevices)
	route("POST", "/v1/devices", Perm("devices:write"), tr.CreateDevice)
	route("GET", "/v1/devices/{id}", Perm("devices:read"), tr.GetDevice)
	route("PATCH", "/v1/devices/{id}", Perm("devices:write"), tr.UpdateDevice)
	route("DELETE", "/v1/devices/{id}", Perm("devices:delete"), tr.DeleteDevice)
	route("GET", "/v1/trips", Perm("trips:read"), tr.ListTrips)
	route("POST", "/v1/trips", Perm("trips:write"), tr.CreateTrip)
	route("GET", "/v1/trips/{id}", Perm("trips:read"), tr.GetTrip)
	route("PATCH", "/v1/trips/{id}", Perm("trips:write"), tr.UpdateTrip)
	route("DELETE", "/v1/trips/{id}", Perm("trips:delete"), tr.DeleteTrip)
	route("GET", "/v1/trips/{id}/gps", Perm("trips:read"), tr.TripGPS)
	route("GET", "/v1/trips/{id}/history", Perm("trips:read"), tr.TripHistory)
	route("GET", "/v1/locations", Perm("locations:read"), tr.ListLocations)
	route("POST", "/v1/locations", Perm("locations:write"), tr.CreateLocation)
	route("GET", "/v1/locations/{id}", Perm("locations:read"), tr.GetLocation)
	route("PATCH", "/v1/locations/{id}", Perm("locations:write"), tr.UpdateLocation)
	route("DELETE", "/v1/locations/{id}", Perm("locations:delete"), tr.DeleteLocation)
	route("POST", "/v1/locations/{id}/contacts", Perm("locations:write"), tr.CreateContact)
	route("PATCH", "/v1/locations/{id}/contacts/{cid}", Perm("locations:write"), tr.UpdateContact)
	route("DELETE", "/v1/locations/{id}/contacts/{cid}", Perm("locations:write"), tr.DeleteContact)
	route("GET", "/v1/geofences", Perm("geofences:read"), tr.ListGeofences)
	route("POST", "/v1/geofences", Perm("geofences:write"), tr.CreateGeofence)
	route("GET", "/v1/geofences/{id}", Perm("geofences:read"), tr.GetGeofence)
	route("PATCH", "/v1/geofences/{id}", Perm("geofences:write"), tr.UpdateGeofence)
	route("DELETE", "/v1/geofences/{id}", Perm("geofences:delete"), tr.DeleteGeofence)
	route("GET", "/v1/trip-categories", Perm("trip_categories:read"), tr.ListCategories)
	route("POST", "/v1/trip-categories", Perm("trip_categories:write"), tr.CreateCategory)
	route("GET", "/v1/trip-categories/{id}", Perm("trip_categories:read"), tr.GetCategory)
	route("PATCH", "/v1/trip-categories/{id}", Perm("trip_categories:write"), tr.UpdateCategory)
	route("DELETE", "/v1/trip-categories/{id}", Perm("trip_categories:delete"), tr.DeleteCategory)
	route("GET", "/v1/trip-templates", Perm("trips:read"), tr.ListTemplates)
	route("POST", "/v1/trip-templates", Perm("trips:write"), tr.CreateTemplate)
	route("GET", "/v1/trip-templates/{id}", Perm("trips:read"), tr.GetTemplate)
	route("PATCH", "/v1/trip-templates/{id}", Perm("trips:write"), tr.UpdateTemplate)
	route("DELETE", "/v1/trip-templates/{id}", Perm("trips:delete"), tr.DeleteTemplate)
	route("POST", "/v1/trip-templates/{id}/create-trip", Perm("trips:write"), tr.CreateTripFromTemplate)

	// ---- Settings, system config, statistics, water levels (spec 3) ----
	st := &s.settingHandler
	route("GET", "/v1/settings", Perm("settings:read"), st.List)
	route("GET", "/v1/settings/public", Public(), st.ListPublic)
	route("GET", "/v1/settings/{key}", Perm("settings:read"), st.GetOne)
	route("POST", "/v1/settings", Perm("settings:write"), st.Create)
	route("PUT", "/v1/settings/{key}", Perm("settings:write"), st.Update)
	route("DELETE", "/v1/settings/{key}", Perm("settings:delete"), st.Delete)
	route("GET", "/v1/system-config", Perm("settings:read"), st.ListConfig)
	route("GET", "/v1/system-config/{key}", Perm("settings:read"), st.GetConfig)
	route("PATCH", "/v1/system-config/{key}", Perm("settings:write"), st.UpdateConfig)
	route("GET", "/v1/stats/public", Public(), st.Stats)
	route("GET", "/v1/pegel/stations", Perm("pegel:read"), s.pegelHandler.Stations)
	route("GET", "/v1/pegel/nearest", Perm("pegel:read"), s.pegelHandler.Nearest)

	// ---- Chat-platform bot management (spec 3) ----
	ch := s.chatHandler
	route("GET", "/v1/chatplatform/guilds", Perm("chatplatform:read"), ch.ListGuilds)
	route("GET", "/v1/chatplatform/guilds/{guild_id}", Perm("chatplatform:read"), ch.GetGuild)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/channels", Perm("chatplatform:read"), ch.ListChannels)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/full", Perm("chatplatform:read"), ch.GetGuildFull)
	// The two syncs wait for the bot: 30 and 60 seconds (spec 3, Limits).
	waiting(s.Chat.SyncWait(), "POST", "/v1/chatplatform/sync", Perm("chatplatform:sync"), ch.Sync)
	route("DELETE", "/v1/chatplatform/guilds/{guild_id}", Perm("chatplatform:delete"), ch.DeleteGuild)
	route("GET", "/v1/chatplatform/settings", Perm("chatplatform:read"), ch.GetSettings)
	route("PUT", "/v1/chatplatform/settings", Perm("chatplatform:edit"), ch.PutSettings)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/settings", Perm("chatplatform:read"), ch.GetGuildSettings)
	route("PUT", "/v1/chatplatform/guilds/{guild_id}/settings", Perm("chatplatform:edit"), ch.PutGuildSettings)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/members", Perm("chatplatform:read"), ch.ListMembers)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/members/{user_id}", Perm("chatplatform:read"), ch.GetMember)
	waiting(s.Chat.MemberSyncWait(), "POST", "/v1/chatplatform/guilds/{guild_id}/members/sync", Perm("chatplatform:guild.sync"), ch.SyncMembers)

	// ---- Streaming-platform integrations (spec 3) ----
	ig := s.integrationsHandler
	route("GET", "/v1/integrations", Authenticated(), ig.List)
	route("GET", "/v1/integrations/platforms", Authenticated(), ig.Platforms)
	route("GET", "/v1/integrations/platform/{slug}", Authenticated(), ig.ListPlatform)
	route("GET", "/v1/integrations/platform/{slug}/scopes", Authenticated(), ig.PlatformScopes)
	route("POST", "/v1/integrations/platform/{slug}/connect", Authenticated(), ig.Connect)
	route("GET", "/v1/integrations/callback/{platform}", Public(), ig.Callback) // the provider redirects the browser here
	route("GET", "/v1/integrations/{id}", Authenticated(), ig.Get)
	route("DELETE", "/v1/integrations/{id}", Authenticated(), ig.Delete)
	route("POST", "/v1/integrations/{id}/refresh", Authenticated(), ig.Refresh)
	route("POST", "/v1/integrations/{id}/stats", Authenticated(), ig.Stats)
	route("PATCH", "/v1/integrations/{id}/streamplatform-status", Authenticated(), ig.SetBotStatus)

	// ---- Real-time channel and GraphQL ----
	// /v1/ws authenticates itself: Authorization header or a single-use ?ticket=.
	stream("GET", "/v1/ws", Public(), s.Hub.ServeWS)
	route("POST", "/v1/ws/ticket", Authenticated(), s.Hub.IssueTicket)
	// GraphQL: public operations exist (oauthScopes, platforms), so the route
	// only resolves a bearer; every resolver requires what its REST twin does.
	route("GET", "/v1/graphql", Optional(), s.graphqlHandler.ServeHTTP)
	route("POST", "/v1/graphql", Optional(), s.graphqlHandler.ServeHTTP)

	return r
}

// authServerMetadataPaths are the paths of the RFC 8414 metadata document:
// the well-known path, and when the issuer (HMID_PUBLIC_URL) has a path,
// the well-known path with the issuer's path appended (RFC 8414 §3.1).
func authServerMetadataPaths(issuer string) []string {
	const wellKnown = "/.well-known/oauth-authorization-server"
	out := []string{wellKnown}
	if u, err := url.Parse(issuer); err == nil && strings.Trim(u.Path, "/") != "" {
		out = append(out, wellKnown+"/"+strings.Trim(u.Path, "/"))
	}
	return out
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	_, _ = w.Write(api.OpenAPI)
}

// Routes lists every route as "METHOD /path/{param}", for the contract test
// that checks each one is described in api/openapi.yaml.
func (s *Server) Routes() []string {
	var out []string
	_ = chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	return out
}
