package passkey

import (
	"embed"
	"net/http"
)

//go:embed static/passkey.js
var static embed.FS

// Script serves the pages' passkey script (static/passkey.js): the
// WebAuthn ceremonies of the login page, the two-factor step and the
// security page, which link it; no other page loads it.
func Script(w http.ResponseWriter, r *http.Request) {
	js, _ := static.ReadFile("static/passkey.js")
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(js)
}
