package app

import (
	"context"

	"hmid/internal/audit"
	"hmid/internal/export"
)

// auditArea holds the handlers of the audit log and the personal-data export
// (built by buildAuditExport).
type auditArea struct {
	auditHandler  *audit.Handler
	exportHandler *export.Handler
}

// buildAuditExport constructs the area with explicit dependencies. The export
// reads connected and owned apps and the two-factor state through
// exportHandler.Apps and exportHandler.TwoFactor, which the OAuth and
// two-factor areas fill in when they are built.
func (s *Server) buildAuditExport(ctx context.Context) error {
	s.auditHandler = &audit.Handler{S: &audit.Service{DB: s.DB, Clock: s.Clock, Mail: s.Mail, Log: s.Log}, DB: s.DB, Clock: s.Clock, Writer: s.Audit}
	s.exportHandler = &export.Handler{DB: s.DB, Clock: s.Clock, Audit: s.Audit, Log: s.Log}
	return nil
}
