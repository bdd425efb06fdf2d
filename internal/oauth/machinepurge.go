package oauth

import (
	"context"
	"time"
)

// purgeMachine deletes what the grants for machines and devices no longer
// need: dead client credentials tokens and finished device authorizations.
func (s *Service) purgeMachine(ctx context.Context, now time.Time) error {
	if err := s.purgeClientTokens(ctx, now); err != nil {
		return err
	}
	return s.purgeDevices(ctx, now)
}
