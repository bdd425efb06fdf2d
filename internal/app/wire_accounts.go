package app

import (
	"context"
	"time"

	"hmid/internal/accounts"
	"hmid/internal/bans"
	"hmid/internal/deletion"
	"hmid/internal/password"
	"hmid/internal/platforms"
)

// purgeInterval is how often the purge job looks for accounts whose grace
// period has ended (besides once at start).
const purgeInterval = 10 * time.Minute

// accountsArea holds the handlers of this area (built by buildAccounts). The
// services are exported so cross-area contracts can be wired (for
// example BanService.Tokens, the OAuth token revoker) and tests can run the
// purge with the fake clock (DeletionService.Purge).
type accountsArea struct {
	accountsHandler  accounts.Handler
	platformsHandler platforms.Handler
	bansHandler      bans.Handler
	deletionHandler  deletion.Handler

	// BanService bans users; set BanService.Tokens to revoke OAuth tokens on a ban.
	BanService *bans.Service
	// DeletionService deletes accounts; Purge runs the purge job once.
	DeletionService *deletion.Service
	// PlatformService reads and changes login platforms (also for GraphQL).
	PlatformService *platforms.Service
}

// buildAccounts constructs the area with explicit dependencies and starts the
// purge job, which Close stops.
func (s *Server) buildAccounts(ctx context.Context) error {
	acc := &accounts.Service{
		DB: s.DB, Clock: s.Clock, Audit: s.Audit, Mail: s.Mail, Limiter: s.Limiter, Log: s.Log,
		PublicURL: s.Config.PublicURL, HashPassword: password.Hash, Policy: s.Policy,
	}
	s.accountsHandler = accounts.Handler{S: acc}
	s.PlatformService = &platforms.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit}
	s.platformsHandler = platforms.Handler{S: s.PlatformService}
	s.BanService = &bans.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Epoch: s.Epoch, Log: s.Log}
	s.bansHandler = bans.Handler{S: s.BanService}
	s.DeletionService = &deletion.Service{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Epoch: s.Epoch, Log: s.Log}
	s.deletionHandler = deletion.Handler{S: s.DeletionService}
	job := s.DeletionService.Start(purgeInterval)
	s.onClose(job.Stop)
	return nil
}
