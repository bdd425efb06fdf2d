package web

import (
	"testing"

	"hmid/internal/access"
	"hmid/internal/settings"
)

func TestStoredTexts(t *testing.T) {
	for _, c := range []struct{ lang, in, want string }{
		{"de", "Logged in with email and password", "Mit E-Mail-Adresse und Passwort angemeldet"},
		{"de", "Logged in with discord", "Angemeldet mit discord"},
		{"de", "OAuth client Harbour Planner registered", "OAuth-Client Harbour Planner registriert"},
		{"de", "System config password.min_length changed from 8 to 12", "Systemkonfiguration password.min_length geändert von 8 auf 12"},
		{"de", "Default role of every user", "Standardrolle aller Benutzer"},
		{"de", "An operator's own words", "An operator's own words"},
		{"en", "Logged in with email and password", "Logged in with email and password"},
	} {
		if got := Stored(c.lang, c.in); got != c.want {
			t.Errorf("Stored(%s, %q) = %q, want %q", c.lang, c.in, got, c.want)
		}
	}
	// Every seeded role, permission and system-config description has its German wording.
	for _, r := range access.DefaultRoles {
		if Stored("de", r.Description) == r.Description {
			t.Errorf("role %s: %q has no German wording", r.ID, r.Description)
		}
	}
	for _, p := range access.Catalogue {
		if Stored("de", p.Description) == p.Description {
			t.Errorf("permission %s:%s: %q has no German wording", p.Resource, p.Action, p.Description)
		}
	}
	for _, d := range settings.Defaults {
		if Stored("de", d.Description) == d.Description {
			t.Errorf("system config %s: %q has no German wording", d.Key, d.Description)
		}
	}
}
