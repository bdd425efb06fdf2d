package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogAttrs returns the trace_id and span_id of ctx's span for a log line,
// so the line can be found from the trace and the trace from the line
// (the names of the OpenTelemetry log data model). It returns nil when
// tracing is off or ctx has no span.
func LogAttrs(ctx context.Context) []any {
	if !On() {
		return nil
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []any{slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String())}
}
