package app

import (
	"context"

	"hmid/internal/db"
	"hmid/internal/webhooks"
)

// webhooksArea holds the webhooks' service, handler and worker.
type webhooksArea struct {
	Webhooks        *webhooks.Service
	webhooksHandler *webhooks.Handler
	// WebhookWorker sends the deliveries; tests run its passes with RunOnce
	// under the fake clock.
	WebhookWorker *webhooks.Worker
}

// buildWebhooks constructs the webhooks and plugs them into the audit
// writer, so every audit event from now on is forwarded to the endpoints
// that want it. It needs the outbound client (buildOAuth).
func (s *Server) buildWebhooks(ctx context.Context) error {
	svc := &webhooks.Service{DB: s.DB, Clock: s.Clock, Box: s.Box, Audit: s.Audit, Log: s.Log,
		Outbound: s.Outbound, AllowHTTP: s.Config.WebhooksAllowHTTP}
	if err := svc.Load(ctx); err != nil {
		return err
	}
	s.Webhooks = svc
	s.webhooksHandler = &webhooks.Handler{S: svc}
	s.WebhookWorker = webhooks.NewWorker(svc, s.OutboundHTTP)
	s.Audit.Forward = svc
	s.onClose(s.WebhookWorker.Start())
	if s.DB.Flavor == db.Postgres {
		// Other instances change endpoints too: follow the shared counter.
		s.onClose(svc.Watch(webhooks.WatchInterval))
	}
	return nil
}
