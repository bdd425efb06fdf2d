package admin

import (
	"embed"

	"hmid/internal/web"
)

// templates are the admin console's pages (admin_*.html), each drawn in
// the console frame of the web kit.
//
//go:embed templates/*.html
var templates embed.FS

func init() { web.AddConsolePages(templates, "templates/admin_*.html") }
