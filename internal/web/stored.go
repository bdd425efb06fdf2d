package web

import "strings"

// Texts hmid stores in English and shows on the pages: the descriptions of
// audit events (written by the areas when the event happens) and of the
// seeded roles and permissions (package access). They are data, so they
// stay English in the database and the API; a German page shows them in
// German when it knows them, exactly or by their fixed start (the rest is a
// name or a slug), and as stored otherwise (an operator's own description).

// storedGerman are the stored English texts with their German wording.
var storedGerman = map[string]string{
	// Audit event descriptions.
	"Session created":                    "Sitzung erstellt",
	"Logged out":                         "Abgemeldet",
	"Logged in with email and password":  "Mit E-Mail-Adresse und Passwort angemeldet",
	"Registered with email and password": "Mit E-Mail-Adresse und Passwort registriert",
	"Email account linked":               "E-Mail-Konto verknüpft",
	"Email address changed":              "E-Mail-Adresse geändert",
	"Email address verified":             "E-Mail-Adresse bestätigt",
	"Password change refused: the current password was wrong":              "Passwortänderung abgelehnt: Das aktuelle Passwort war falsch",
	"Password changed with a reset link; every session was signed out":     "Passwort über einen Link zurückgesetzt; alle Sitzungen wurden abgemeldet",
	"Password changed; every other session was signed out":                 "Passwort geändert; alle anderen Sitzungen wurden abgemeldet",
	"Password reset requested":                                             "Zurücksetzen des Passworts angefordert",
	"Personal-data export downloaded":                                      "Export der persönlichen Daten heruntergeladen",
	"Login failed at the two-factor step":                                  "Anmeldung beim zweiten Faktor fehlgeschlagen",
	"Two-factor authentication disabled":                                   "Zwei-Faktor-Authentifizierung ausgeschaltet",
	"Two-factor authentication reset by an administrator":                  "Zwei-Faktor-Authentifizierung von der Administration zurückgesetzt",
	"Two-factor backup codes regenerated":                                  "Backup-Codes neu erstellt",
	"Two-factor code verified":                                             "Zwei-Faktor-Code bestätigt",
	"Two-factor code rejected":                                             "Zwei-Faktor-Code abgelehnt",
	"Two-factor code verified at login":                                    "Zwei-Faktor-Code bei der Anmeldung bestätigt",
	"Backup code verified at login":                                        "Backup-Code bei der Anmeldung verwendet",
	"Backup code rejected":                                                 "Backup-Code abgelehnt",
	"Account deletion requested by the user; permanent deletion scheduled": "Löschung des Kontos beantragt; endgültige Löschung geplant",
	"Account permanently deleted":                                          "Konto endgültig gelöscht",
	"Scheduled account deletion cancelled":                                 "Geplante Löschung des Kontos abgebrochen",
	"User unbanned":                                                        "Sperre aufgehoben",
	"session created by a service":                                         "Sitzung von einem Dienst erstellt",
	"user deleted; permanent deletion scheduled":                           "Benutzer gelöscht; endgültige Löschung geplant",
	"unverified email login removed: another account verified the address": "Unbestätigte E-Mail-Anmeldung entfernt: Ein anderes Konto hat die Adresse bestätigt",
	"email address released: another account verified it at a provider sign-in; the email login keeps working": "E-Mail-Adresse freigegeben: Ein anderes Konto hat sie bei einer Anmeldung über einen Anbieter bestätigt; die E-Mail-Anmeldung funktioniert weiter",
	"an earlier registration with this email address was not linked: the address was never verified on it":     "Eine frühere Registrierung mit dieser E-Mail-Adresse wurde nicht verknüpft: Die Adresse wurde dort nie bestätigt",
	"a spent refresh token was presented again within the reuse interval; a new token pair was issued":         "Ein verbrauchtes Refresh-Token wurde innerhalb der Wiederverwendungsfrist erneut vorgelegt; ein neues Token-Paar wurde ausgestellt",
	"a spent refresh token was presented again; every token of its authorization was revoked":                  "Ein verbrauchtes Refresh-Token wurde erneut vorgelegt; alle Tokens dieser Autorisierung wurden widerrufen",
	"wrong password":         "falsches Passwort",
	"wrong current password": "falsches aktuelles Passwort",
	"account banned":         "Konto gesperrt",

	// Seeded system config (settings.Defaults).
	"Locales users may choose for mails and pages":                                                          "Sprachen, die Benutzer für E-Mails und Seiten wählen können",
	"How long water-level stations are cached, in seconds":                                                  "Wie lange Pegelstationen zwischengespeichert werden, in Sekunden",
	"How long public statistics are cached, in seconds":                                                     "Wie lange öffentliche Statistiken zwischengespeichert werden, in Sekunden",
	"Passkeys may be added and used":                                                                        "Passkeys dürfen hinzugefügt und verwendet werden",
	"A passkey alone signs in (without a password)":                                                         "Ein Passkey allein meldet an (ohne Passwort)",
	"Synced (backup-eligible) passkeys are refused for users whose roles require two-factor authentication": "Synchronisierte (sicherbare) Passkeys werden für Benutzer abgelehnt, deren Rollen Zwei-Faktor-Authentifizierung verlangen",
	"User verification asked of passkeys: required, preferred or discouraged":                               "Von Passkeys verlangte Benutzerprüfung: required (verlangt), preferred (bevorzugt) oder discouraged (nicht erwünscht)",

	// Seeded roles (access.DefaultRoles).
	"Full access":                          "Voller Zugriff",
	"Service-to-service access":            "Zugriff von Dienst zu Dienst",
	"Default role of every user":           "Standardrolle aller Benutzer",
	"Community moderation":                 "Moderation der Community",
	"Registers OAuth clients and API keys": "Registriert OAuth-Clients und API-Schlüssel",
	"Read-only API access":                 "Nur lesender API-Zugriff",

	// Seeded permissions (access.Catalogue).
	"All permissions":              "Alle Berechtigungen",
	"Read users":                   "Benutzer lesen",
	"Change users and their roles": "Benutzer und ihre Rollen ändern",
	"Delete users":                 "Benutzer löschen",
	"Ban and unban users":          "Benutzer sperren und entsperren",
	"Read roles":                   "Rollen lesen",
	"Create and change roles and their permissions": "Rollen und ihre Berechtigungen anlegen und ändern",
	"Delete roles":       "Rollen löschen",
	"Read permissions":   "Berechtigungen lesen",
	"Create permissions": "Berechtigungen anlegen",
	"Read API keys":      "API-Schlüssel lesen",
	"Read webhook endpoints and their deliveries":                                                "Webhook-Endpunkte und ihre Zustellungen lesen",
	"Create, change, delete webhook endpoints, rotate their secrets, resend and test deliveries": "Webhook-Endpunkte anlegen, ändern und löschen, ihre Geheimnisse erneuern, Zustellungen erneut senden und testen",
	"Create and change API keys":                                                                 "API-Schlüssel anlegen und ändern",
	"Delete API keys":                                                                            "API-Schlüssel löschen",
	"All API key operations":                                                                     "Alle Vorgänge mit API-Schlüsseln",
	"Read every OAuth client":                                                                    "Alle OAuth-Clients lesen",
	"Change every OAuth client":                                                                  "Alle OAuth-Clients ändern",
	"Delete every OAuth client":                                                                  "Alle OAuth-Clients löschen",
	"All OAuth client operations":                                                                "Alle Vorgänge mit OAuth-Clients",
	"Read two-factor status":                                                                     "Zwei-Faktor-Status lesen",
	"Change own two-factor settings":                                                             "Eigene Zwei-Faktor-Einstellungen ändern",
	"Manage two-factor settings of other users":                                                  "Zwei-Faktor-Einstellungen anderer Benutzer verwalten",
	"Read the audit log":                                                                         "Das Protokoll lesen",
	"Write audit events and review reports":                                                      "Protokolleinträge schreiben und Meldungen prüfen",
	"Read settings and system config":                                                            "Einstellungen und Systemkonfiguration lesen",
	"Change settings, system config and platforms":                                               "Einstellungen, Systemkonfiguration und Plattformen ändern",
	"Delete settings":                                                                            "Einstellungen löschen",
	"Read GPS points":                                                                            "GPS-Punkte lesen",
	"Record GPS points":                                                                          "GPS-Punkte aufzeichnen",
	"Delete GPS points":                                                                          "GPS-Punkte löschen",
	"Read devices":                                                                               "Geräte lesen",
	"Create and change devices":                                                                  "Geräte anlegen und ändern",
	"Delete devices":                                                                             "Geräte löschen",
	"Read trips and templates":                                                                   "Fahrten und Vorlagen lesen",
	"Create and change trips and templates":                                                      "Fahrten und Vorlagen anlegen und ändern",
	"Delete trips and templates":                                                                 "Fahrten und Vorlagen löschen",
	"Read locations":                                                                             "Orte lesen",
	"Create and change locations and contacts":                                                   "Orte und Kontakte anlegen und ändern",
	"Delete locations":                                                                           "Orte löschen",
	"Read geofences":                                                                             "Geofences lesen",
	"Create and change geofences":                                                                "Geofences anlegen und ändern",
	"Delete geofences":                                                                           "Geofences löschen",
	"Read trip categories":                                                                       "Fahrtkategorien lesen",
	"Create and change trip categories":                                                          "Fahrtkategorien anlegen und ändern",
	"Delete trip categories":                                                                     "Fahrtkategorien löschen",
	"Look up water levels":                                                                       "Wasserstände abfragen",
	"Read chat-platform guilds, members and settings":                                            "Server, Mitglieder und Einstellungen der Chat-Plattform lesen",
	"Change chat-platform bot settings":                                                          "Bot-Einstellungen der Chat-Plattform ändern",
	"Sync chat-platform guilds":                                                                  "Server der Chat-Plattform synchronisieren",
	"Delete stored chat-platform guilds":                                                         "Gespeicherte Server der Chat-Plattform löschen",
	"Sync the members of a chat-platform guild":                                                  "Mitglieder eines Servers der Chat-Plattform synchronisieren",
}

// storedGermanStarts are fixed starts of stored texts whose rest is a name,
// a slug or a key, with their German wording; "%s" stands for the rest.
var storedGermanStarts = []struct{ en, de string }{
	{"Logged in with ", "Angemeldet mit %s"},
	{"Failed login with ", "Fehlgeschlagene Anmeldung mit %s"},
	{"Two-factor authentication enabled on ", "Zwei-Faktor-Authentifizierung eingeschaltet für %s"},
	{"Primary account changed to ", "Hauptkonto geändert zu %s"},
	{"Two-factor code verified to confirm ", "Zwei-Faktor-Code bestätigt für %s"},
	{"Backup code verified to confirm ", "Backup-Code verwendet für %s"},
	{"System config ", "Systemkonfiguration %s"},
	{"OAuth client ", "OAuth-Client %s"},
	{"secret of OAuth client ", "Secret des OAuth-Clients %s"},
}

// storedGermanEnds are fixed ends of such texts (after the start above).
var storedGermanEnds = []struct{ en, de string }{
	{" registered", " registriert"},
	{" updated", " geändert"},
	{" deleted", " gelöscht"},
	{" regenerated", " neu erstellt"},
}

// Stored is the text s, stored in English, in lang: its German wording on a
// German page when one is known, else s itself.
func Stored(lang, s string) string {
	if lang != "de" || s == "" {
		return s
	}
	if de, ok := storedGerman[s]; ok {
		return de
	}
	for _, p := range storedGermanStarts {
		rest, ok := strings.CutPrefix(s, p.en)
		if !ok {
			continue
		}
		for _, e := range storedGermanEnds {
			if r, ok := strings.CutSuffix(rest, e.en); ok {
				rest = r + e.de
				break
			}
		}
		rest = strings.Replace(rest, " changed from ", " geändert von ", 1)
		rest = strings.Replace(rest, " to ", " auf ", 1)
		return strings.Replace(p.de, "%s", rest, 1)
	}
	return s
}
