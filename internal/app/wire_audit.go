package app

import "context"

// auditArea holds the handlers of this area (built by buildAuditExport).
type auditArea struct{}

// buildAuditExport constructs the area with explicit dependencies.
func (s *Server) buildAuditExport(ctx context.Context) error { return nil }
