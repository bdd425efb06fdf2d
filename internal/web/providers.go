package web

import (
	"net/http"
	"net/url"
)

// The "Sign in with …" buttons of the configured upstream providers, on
// the login page and on the account's linked-accounts page.

// ProviderButton is a "Sign in with …" button of the login page, or a
// "Connect …" button of /account/linked.
type ProviderButton struct {
	Slug, Name string
	Href       string // GET /login/{slug} with the page's return_to
}

// Buttons returns the configured providers whose platform is enabled, in
// the registry's order. A database error hides the buttons (the password
// form still works) and is logged.
func (h *Handler) Buttons(r *http.Request, returnTo string) []ProviderButton {
	if h.Providers == nil || len(h.Providers.Providers()) == 0 {
		return nil
	}
	on, err := h.Auth.EnabledPlatforms(r.Context())
	if err != nil {
		h.Log.WarnContext(r.Context(), "login page: platforms unavailable", "error", err.Error())
		return nil
	}
	var out []ProviderButton
	for _, p := range h.Providers.Providers() {
		if on[p.Slug()] {
			href := "/login/" + url.PathEscape(p.Slug())
			if returnTo != "" && returnTo != "/" {
				href += "?return_to=" + url.QueryEscape(returnTo)
			}
			out = append(out, ProviderButton{Slug: p.Slug(), Name: p.Name(), Href: href})
		}
	}
	return out
}

// connectable returns a "Connect …" button for each enabled provider userID
// has no account on yet: a user has one account per platform (users.Connect
// refuses a second), so a button for a connected provider could only fail.
// A database error shows no buttons and is logged.
func (h *Handler) Connectable(r *http.Request, userID string) []ProviderButton {
	buttons := h.Buttons(r, "")
	if len(buttons) == 0 {
		return nil
	}
	linked, err := h.Auth.LinkedPlatforms(r.Context(), userID)
	if err != nil {
		h.Log.WarnContext(r.Context(), "linked accounts unavailable", "error", err.Error())
		return nil
	}
	var out []ProviderButton
	for _, b := range buttons {
		if !linked[b.Slug] {
			out = append(out, b)
		}
	}
	return out
}
