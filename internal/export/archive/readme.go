package archive

import (
	"io"
	"text/template"
)

// readmeData is what the README templates fill in.
type readmeData struct {
	Service string
	Date    string // export time, in the language's date layout, UTC
}

// The README is plain UTF-8 text so it opens anywhere. It explains every
// data.json key because the archive may be read years later, without access
// to the service's documentation.
var (
	readmeEN = template.Must(template.New("README.txt").Parse(`{{.Service}}: personal data export

Exported on {{.Date}} UTC.

This archive contains the personal data {{.Service}} stores about your account
at the time of the export.

Files
-----
data.json   All data in machine-readable JSON (UTF-8). Times are in UTC in
            RFC 3339 format, for example 2026-11-22T14:05:00Z. null means
            "not set" (for example a key that was never used); [] is an
            empty list.
report.pdf  The same data as a readable report.
README.txt  This file.

Contents of data.json
---------------------
exportInfo        About this export: when it was made (exportedAt), the
                  archive format (format) and the version of this file's
                  layout (version).
user              Your account: id, username, whether privacy mode is on
                  (privacyMode), whether avatars from login platforms are
                  stored (avatarsEnabled), when the account was created
                  (createdAt) and your last login (lastLoginAt).
platformAccounts  The login platforms linked to your account: platform,
                  your username and email there, whether it is your primary
                  login (isPrimary) and when it was linked (connectedAt).
connectedApps     Apps you allowed to access your account: name, the scopes
                  (permissions) you granted, whether the app is run by
                  {{.Service}} itself (isFirstParty) and when you agreed
                  (consentedAt).
ownedApps         Apps you registered as a developer: id, name, clientType
                  (confidential or public), redirectUris, allowedScopes,
                  whether the app is active (isActive) and createdAt.
apiKeys           Your API keys: name, the first characters of the key
                  (keyPrefix), scopes, whether it is active (isActive),
                  expiresAt, lastUsedAt and createdAt. Full keys are never
                  included.
roles             The names of the roles assigned to you.
twoFactorAuth     Two-factor authentication: whether it is on (enabled),
                  since when (enabledAt) and how many unused backup codes
                  are left (backupCodesRemaining).
deletionStatus    Whether your account is scheduled for deletion
                  (isScheduledForDeletion, scheduledDeletionAt) or deleted
                  (isDeleted, deletedAt).
exportLogs        Your earlier data exports: when (exportedAt) and in which
                  format (format).
sessions          Your login sessions: id, ipAddress (partly masked),
                  deviceType, browserName, osName, the login platform
                  (provider, providerName), when the session started
                  (createdAt), when it expires (expiresAt) and its last
                  activity (lastActivityAt).

IP addresses
------------
IP addresses are partly masked. For IPv4 the last part is replaced by xxx
(for example 203.0.113.xxx); for IPv6 only the first three groups are kept
(for example 2001:db8:85a3:xxxx::). They show roughly which network a
session came from without identifying a single connection.

Not included
------------
Passwords, full API keys, app client secrets, two-factor secrets and backup
codes are never part of an export: anyone holding this archive could use
them to take over your account.
`))

	readmeDE = template.Must(template.New("README.txt").Parse(`{{.Service}}: Export personenbezogener Daten

Exportiert am {{.Date}} UTC.

Dieses Archiv enthält die personenbezogenen Daten, die {{.Service}} zum
Zeitpunkt des Exports zu Ihrem Konto speichert.

Dateien
-------
data.json   Alle Daten in maschinenlesbarem JSON (UTF-8). Zeiten sind in UTC
            im Format RFC 3339 angegeben, zum Beispiel 2026-11-22T14:05:00Z.
            null bedeutet „nicht gesetzt“ (etwa bei einem nie benutzten
            Schlüssel); [] ist eine leere Liste.
report.pdf  Dieselben Daten als lesbarer Bericht.
README.txt  Diese Datei.

Inhalt von data.json
--------------------
exportInfo        Über diesen Export: wann er erstellt wurde (exportedAt),
                  das Archivformat (format) und die Version des Aufbaus
                  dieser Datei (version).
user              Ihr Konto: id, Benutzername (username), ob der
                  Privatsphäre-Modus an ist (privacyMode), ob Avatare von
                  Anmeldeplattformen gespeichert werden (avatarsEnabled),
                  wann das Konto erstellt wurde (createdAt) und Ihre letzte
                  Anmeldung (lastLoginAt).
platformAccounts  Die mit Ihrem Konto verknüpften Anmeldeplattformen:
                  platform, Ihr Benutzername und Ihre E-Mail-Adresse dort
                  (username, email), ob es Ihre primäre Anmeldung ist
                  (isPrimary) und wann sie verknüpft wurde (connectedAt).
connectedApps     Apps, denen Sie Zugriff auf Ihr Konto erlaubt haben: name,
                  die erteilten Berechtigungen (scopes), ob die App von
                  {{.Service}} selbst betrieben wird (isFirstParty) und wann
                  Sie zugestimmt haben (consentedAt).
ownedApps         Apps, die Sie als Entwickler registriert haben: id, name,
                  clientType (confidential oder public), redirectUris,
                  allowedScopes, ob die App aktiv ist (isActive) und
                  createdAt.
apiKeys           Ihre API-Schlüssel: name, die ersten Zeichen des
                  Schlüssels (keyPrefix), scopes, ob er aktiv ist
                  (isActive), expiresAt, lastUsedAt und createdAt.
                  Vollständige Schlüssel sind nie enthalten.
roles             Die Namen der Ihnen zugewiesenen Rollen.
twoFactorAuth     Zwei-Faktor-Authentifizierung: ob sie an ist (enabled),
                  seit wann (enabledAt) und wie viele unbenutzte
                  Backup-Codes übrig sind (backupCodesRemaining).
deletionStatus    Ob Ihr Konto zur Löschung vorgemerkt ist
                  (isScheduledForDeletion, scheduledDeletionAt) oder
                  gelöscht wurde (isDeleted, deletedAt).
exportLogs        Ihre früheren Datenexporte: wann (exportedAt) und in
                  welchem Format (format).
sessions          Ihre Anmeldesitzungen: id, ipAddress (teilweise
                  maskiert), deviceType, browserName, osName, die
                  Anmeldeplattform (provider, providerName), Beginn
                  (createdAt), Ablauf (expiresAt) und letzte Aktivität
                  (lastActivityAt).

IP-Adressen
-----------
IP-Adressen sind teilweise maskiert. Bei IPv4 ist der letzte Teil durch xxx
ersetzt (zum Beispiel 203.0.113.xxx), bei IPv6 bleiben nur die ersten drei
Gruppen erhalten (zum Beispiel 2001:db8:85a3:xxxx::). So ist grob erkennbar,
aus welchem Netz eine Sitzung kam, ohne eine einzelne Verbindung zu
identifizieren.

Nicht enthalten
---------------
Passwörter, vollständige API-Schlüssel, Client-Secrets von Apps,
Zwei-Faktor-Geheimnisse und Backup-Codes sind nie Teil eines Exports: Wer
dieses Archiv besitzt, könnte damit Ihr Konto übernehmen.
`))
)

// writeReadme writes README.txt in the language of m.
func writeReadme(w io.Writer, m *messages, data readmeData) error {
	return m.readme.Execute(w, data)
}
