package app

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"hmid/api"
	. "hmid/internal/authn" //nolint:staticcheck // the rule names read as a table: Perm("roles:read"), PermOrSelf(…)
	"hmid/internal/httpx"
)

// routes lists every route of hmid with the access rule it needs. This file
// is the one place to read the whole API surface and its permissions.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(httpx.NotFoundHandler)
	r.MethodNotAllowed(httpx.MethodNotAllowedHandler)
	route := func(method, path string, rule Rule, h http.HandlerFunc) {
		r.With(s.Guard.Require(rule)).Method(method, path, h)
	}

	// ---- Health, info, contract, metrics (spec 3 Health and info) ----
	route("GET", "/health", Public(), s.health.Health)
	route("GET", "/v1/health", Public(), s.health.Health)
	route("GET", "/v1", Public(), s.health.Info)
	route("GET", "/v1/openapi.yaml", Public(), serveOpenAPI)
	route("GET", "/metrics", Public(), promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{}).ServeHTTP)

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

	// ---- Sessions (spec 2 Sessions) ----

	// ---- OAuth 2.0 / OpenID Connect and the built-in pages (spec 1) ----

	// ---- Accounts: email change and link, platform accounts, platforms, two-factor, bans, deletion (spec 2) ----

	// ---- Audit log, reports, internal audit, data export (spec 2) ----

	// ---- Tracking: GPS, devices, trips, locations, geofences, categories, templates (spec 3) ----

	// ---- Settings, system config, statistics, water levels (spec 3) ----

	// ---- Chat-platform bot management (spec 3) ----
	ch := s.chatHandler
	route("GET", "/v1/chatplatform/guilds", Perm("chatplatform:read"), ch.ListGuilds)
	route("GET", "/v1/chatplatform/guilds/{guild_id}", Perm("chatplatform:read"), ch.GetGuild)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/channels", Perm("chatplatform:read"), ch.ListChannels)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/full", Perm("chatplatform:read"), ch.GetGuildFull)
	route("POST", "/v1/chatplatform/sync", Perm("chatplatform:sync"), ch.Sync)
	route("DELETE", "/v1/chatplatform/guilds/{guild_id}", Perm("chatplatform:delete"), ch.DeleteGuild)
	route("GET", "/v1/chatplatform/settings", Perm("chatplatform:read"), ch.GetSettings)
	route("PUT", "/v1/chatplatform/settings", Perm("chatplatform:edit"), ch.PutSettings)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/settings", Perm("chatplatform:read"), ch.GetGuildSettings)
	route("PUT", "/v1/chatplatform/guilds/{guild_id}/settings", Perm("chatplatform:edit"), ch.PutGuildSettings)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/members", Perm("chatplatform:read"), ch.ListMembers)
	route("GET", "/v1/chatplatform/guilds/{guild_id}/members/{user_id}", Perm("chatplatform:read"), ch.GetMember)
	route("POST", "/v1/chatplatform/guilds/{guild_id}/members/sync", Perm("chatplatform:guild.sync"), ch.SyncMembers)

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
	route("GET", "/v1/ws", Public(), s.Hub.ServeWS)
	route("POST", "/v1/ws/ticket", Authenticated(), s.Hub.IssueTicket)

	return r
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	_, _ = w.Write(api.OpenAPI)
}
