package app

import (
	"hmid/internal/web/account"
	"hmid/internal/web/admin"
)

// consoleArea holds the pages of the account console (/account/*), one type
// per area, each with the services the matching REST routes call.
type consoleArea struct {
	sessionPages *account.SessionPages
	// (profile and linked accounts)
	profilePages *account.ProfilePages
	linkedPages  *account.LinkedPages
	// (security: password and two-factor)
	securityPages *account.SecurityPages
	// (connected apps and your data)
	appPages  *account.AppPages
	dataPages *account.DataPages
	// (activity and integrations)
	activityPages    *account.ActivityPages
	integrationPages *account.IntegrationPages
	// (developer: OAuth clients and API keys)
	developerPages *account.DeveloperPages
	// (admin: overview and users list)
	adminOverviewPages *admin.OverviewPages
	adminUserListPages *admin.UserListPages
	// (admin: one user)
	adminUserPages *admin.UserPages
	// (issue 22: the mail outbox, without SMTP)
	adminMailPages *admin.MailPages
	// (admin: roles and permissions)
	adminRolesPages *admin.RolesPages
	// (admin: OAuth clients and API keys)
	adminCredentialPages *admin.CredentialPages
	// (admin: audit log and reports)
	adminAuditPages *admin.AuditPages
	// (admin: platforms and configuration)
	adminPlatformPages *admin.PlatformPages
	adminWebhookPages  *admin.WebhookPages
	adminConfigPages   *admin.ConfigPages
	// (admin: chat platform and tracking)
	adminChatPages     *admin.ChatPages
	adminTrackingPages *admin.TrackingPages
}

// buildConsole constructs the console pages. It runs after every area, as
// the pages call the services the other areas build; refusals of the
// consoles' browser rules are answered as pages by the login pages' handler.
func (s *Server) buildConsole() {
	s.Guard.Pages = s.webPages
	s.webPages.Users = s.users.S
	s.sessionPages = &account.SessionPages{H: s.webPages, Sessions: s.sessions.S, GeoIP: s.GeoIP}
	// (profile and linked accounts)
	s.profilePages = &account.ProfilePages{H: s.webPages, Users: s.users.S, Accounts: s.accountsHandler.S, Manage: s.userAdmin.S}
	s.linkedPages = &account.LinkedPages{H: s.webPages, Accounts: s.accountsHandler.S}
	// (security: password and two-factor)
	s.securityPages = &account.SecurityPages{H: s.webPages, TwoFactor: s.twoFactorSvc, Platforms: s.PlatformService, Passkeys: s.Passkeys}
	// (connected apps and your data)
	// A self-requested deletion is confirmed with the password (the login
	// service) or, without one, the second factor; REST and the page share
	// the deletion service, so its confirmers are wired here, once.
	s.DeletionService.Passwords = s.authAPI.S
	s.DeletionService.SecondFactor = s.twoFactorSvc
	s.appPages = &account.AppPages{H: s.webPages, OAuth: s.OAuth}
	s.dataPages = &account.DataPages{H: s.webPages, Export: s.exportHandler, Deletion: s.DeletionService}
	// (activity and integrations)
	s.activityPages = &account.ActivityPages{H: s.webPages, Audit: s.auditHandler.S}
	s.integrationPages = &account.IntegrationPages{H: s.webPages, Integrations: s.Integrations}
	// (developer: OAuth clients and API keys)
	s.developerPages = account.NewDeveloperPages(s.webPages, s.OAuth, s.Access)
	// (admin: overview and users list)
	s.adminOverviewPages = &admin.OverviewPages{H: s.webPages, Health: s.health, Users: s.users.S, Sessions: s.sessions.S,
		OAuth: s.OAuth, Access: s.Access, Audit: s.auditHandler.S, Webhooks: s.Webhooks, MailOutbox: s.Config.SMTPURL == ""}
	s.adminMailPages = &admin.MailPages{H: s.webPages, DB: s.DB}
	s.adminUserListPages = &admin.UserListPages{H: s.webPages, Users: s.users.S, Bans: s.BanService, TwoFactor: s.twoFactorSvc, Access: s.Access}
	// (admin: one user)
	s.adminUserPages = &admin.UserPages{H: s.webPages, Users: s.users.S, Accounts: s.accountsHandler.S, Access: s.Access,
		Sessions: s.sessions.S, TwoFactor: s.twoFactorSvc, Bans: s.BanService, Deletion: s.DeletionService, Audit: s.auditHandler.S,
		Manage: s.userAdmin.S}
	s.adminUserPages.Passkeys = s.Passkeys // the passkey section (issue 20)
	// (admin: roles and permissions)
	s.adminRolesPages = &admin.RolesPages{H: s.webPages, Access: s.Access}
	// (admin: OAuth clients and API keys)
	s.adminCredentialPages = admin.NewCredentialPages(s.webPages, s.OAuth, s.Access)
	// (admin: audit log and reports)
	s.adminAuditPages = &admin.AuditPages{H: s.webPages, Audit: s.auditHandler.S}
	// (admin: platforms and configuration)
	s.adminPlatformPages = &admin.PlatformPages{H: s.webPages, Platforms: s.PlatformService,
		Configured: func(slug string) bool {
			if s.Upstream == nil {
				return false
			}
			_, err := s.Upstream.Get(slug)
			return err == nil
		}}
	s.adminConfigPages = &admin.ConfigPages{H: s.webPages, Settings: s.Settings}
	// (admin: webhooks)
	s.adminWebhookPages = &admin.WebhookPages{H: s.webPages, Webhooks: s.Webhooks}
	// (admin: chat platform and tracking)
	s.adminChatPages = &admin.ChatPages{H: s.webPages, Chat: s.Chat}
	s.adminTrackingPages = &admin.TrackingPages{H: s.webPages, Tracking: s.tracking.S}
}
