package app

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/telemetry"
)

// traced puts the request span around h when tracing is on (package
// telemetry; cmd/hmid starts it before building the server), and returns h
// itself otherwise. The span is named by the pattern of the route the
// request will take, looked up in the router beforehand, since the pattern
// the router records lives in a context only the handlers below see.
func (s *Server) traced(h http.Handler) http.Handler {
	if !telemetry.On() {
		return h
	}
	return telemetry.Handler(h, func(method, path string) string {
		return s.router.Find(chi.NewRouteContext(), method, path)
	})
}
