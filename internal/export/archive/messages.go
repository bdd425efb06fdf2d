package archive

import (
	"strings"
	"text/template"
	"time"
)

// messages holds every piece of text the report and README use in one
// language. One struct per language, rather than lookups by key, lets a test
// check that no language leaves a text empty.
type messages struct {
	lang   string             // BCP 47 tag written into the PDF
	readme *template.Template // README.txt

	title, exported, intro, allTimesUTC string
	page                                string // "Page %d of {nb}"; {nb} is fpdf's total-pages alias
	dateLayout                          string
	yes, no, none, never                string

	account, platformAccounts, connectedApps, ownedApps, apiKeys, roles,
	twoFactor, deletion, exportHistory, sessions string

	userID, username, privacyMode, avatarsEnabled, createdAt, lastLoginAt string

	platform, email, primary, connectedAt string

	app, scopes, firstParty, consentedAt string

	clientType, redirectURIs, allowedScopes, active string

	name, keyPrefix, expiresAt, lastUsedAt string

	enabled, enabledAt, backupCodesRemaining string

	scheduledForDeletion, scheduledDeletionAt, deleted, deletedAt string

	exportedAtCol, format string

	ipAddress, device, browser, os, provider, lastActivityAt string
}

var english = messages{
	lang:        "en",
	readme:      readmeEN,
	title:       "Personal data export",
	exported:    "Exported on",
	intro:       "This report lists the personal data %s stores about your account. The file data.json in the same archive contains the same data in machine-readable form. IP addresses are partly masked, and secrets such as passwords, full API keys and two-factor codes are never included.",
	allTimesUTC: "All times are in UTC.",
	page:        "Page %d of {nb}",
	dateLayout:  "2006-01-02 15:04",
	yes:         "Yes",
	no:          "No",
	none:        "None.",
	never:       "—",

	account:          "Account",
	platformAccounts: "Platform accounts",
	connectedApps:    "Connected apps",
	ownedApps:        "Your apps",
	apiKeys:          "API keys",
	roles:            "Roles",
	twoFactor:        "Two-factor authentication",
	deletion:         "Account deletion",
	exportHistory:    "Export history",
	sessions:         "Sessions",

	userID:         "User ID",
	username:       "Username",
	privacyMode:    "Privacy mode",
	avatarsEnabled: "Avatars enabled",
	createdAt:      "Created",
	lastLoginAt:    "Last login",

	platform:    "Platform",
	email:       "Email",
	primary:     "Primary",
	connectedAt: "Connected",

	app:         "App",
	scopes:      "Scopes",
	firstParty:  "First-party",
	consentedAt: "Consented",

	clientType:    "Client type",
	redirectURIs:  "Redirect URIs",
	allowedScopes: "Allowed scopes",
	active:        "Active",

	name:       "Name",
	keyPrefix:  "Key prefix",
	expiresAt:  "Expires",
	lastUsedAt: "Last used",

	enabled:              "Enabled",
	enabledAt:            "Enabled on",
	backupCodesRemaining: "Backup codes remaining",

	scheduledForDeletion: "Scheduled for deletion",
	scheduledDeletionAt:  "Deletion date",
	deleted:              "Deleted",
	deletedAt:            "Deleted on",

	exportedAtCol: "Exported",
	format:        "Format",

	ipAddress:      "IP address",
	device:         "Device",
	browser:        "Browser",
	os:             "OS",
	provider:       "Login via",
	lastActivityAt: "Last activity",
}

var german = messages{
	lang:        "de",
	readme:      readmeDE,
	title:       "Export personenbezogener Daten",
	exported:    "Exportiert am",
	intro:       "Dieser Bericht listet die personenbezogenen Daten auf, die %s zu Ihrem Konto speichert. Die Datei data.json im selben Archiv enthält dieselben Daten in maschinenlesbarer Form. IP-Adressen sind teilweise maskiert; Geheimnisse wie Passwörter, vollständige API-Schlüssel und Zwei-Faktor-Codes sind nie enthalten.",
	allTimesUTC: "Alle Zeiten sind in UTC angegeben.",
	page:        "Seite %d von {nb}",
	dateLayout:  "02.01.2006 15:04",
	yes:         "Ja",
	no:          "Nein",
	none:        "Keine.",
	never:       "—",

	account:          "Konto",
	platformAccounts: "Plattformkonten",
	connectedApps:    "Verbundene Apps",
	ownedApps:        "Ihre Apps",
	apiKeys:          "API-Schlüssel",
	roles:            "Rollen",
	twoFactor:        "Zwei-Faktor-Authentifizierung",
	deletion:         "Kontolöschung",
	exportHistory:    "Exportverlauf",
	sessions:         "Sitzungen",

	userID:         "Benutzer-ID",
	username:       "Benutzername",
	privacyMode:    "Privatsphäre-Modus",
	avatarsEnabled: "Avatare aktiviert",
	createdAt:      "Erstellt",
	lastLoginAt:    "Letzte Anmeldung",

	platform:    "Plattform",
	email:       "E-Mail",
	primary:     "Primär",
	connectedAt: "Verbunden",

	app:         "App",
	scopes:      "Berechtigungen",
	firstParty:  "Erstanbieter",
	consentedAt: "Zugestimmt",

	clientType:    "Client-Typ",
	redirectURIs:  "Weiterleitungs-URIs",
	allowedScopes: "Erlaubte Berechtigungen",
	active:        "Aktiv",

	name:       "Name",
	keyPrefix:  "Schlüsselpräfix",
	expiresAt:  "Läuft ab",
	lastUsedAt: "Zuletzt benutzt",

	enabled:              "Aktiviert",
	enabledAt:            "Aktiviert am",
	backupCodesRemaining: "Verbleibende Backup-Codes",

	scheduledForDeletion: "Zur Löschung vorgemerkt",
	scheduledDeletionAt:  "Löschdatum",
	deleted:              "Gelöscht",
	deletedAt:            "Gelöscht am",

	exportedAtCol: "Exportiert",
	format:        "Format",

	ipAddress:      "IP-Adresse",
	device:         "Gerät",
	browser:        "Browser",
	os:             "System",
	provider:       "Anmeldung über",
	lastActivityAt: "Letzte Aktivität",
}

// messagesFor picks the language from a locale tag such as "de", "de-DE" or
// "de_AT" by its primary subtag; everything that is not German falls back to
// English, the service's default locale.
func messagesFor(locale string) *messages {
	primary, _, _ := strings.Cut(locale, "-")
	primary, _, _ = strings.Cut(primary, "_")
	if strings.EqualFold(primary, "de") {
		return &german
	}
	return &english
}

// date formats t for people in this language; t is already UTC.
func (m *messages) date(t time.Time) string { return t.Format(m.dateLayout) }

// optDate is date for optional times, with a dash for "not set".
func (m *messages) optDate(t *time.Time) string {
	if t == nil {
		return m.never
	}
	return m.date(*t)
}

// bool spells a flag as Yes/No in this language.
func (m *messages) bool(b bool) string {
	if b {
		return m.yes
	}
	return m.no
}
