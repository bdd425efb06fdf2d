package account

import (
	"embed"

	"hmid/internal/web"
)

// templates are the account console's pages (account_*.html), each drawn
// in the console frame of the web kit.
//
//go:embed templates/*.html
var templates embed.FS

func init() { web.AddConsolePages(templates, "templates/account_*.html") }
