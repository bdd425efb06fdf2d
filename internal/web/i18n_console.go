package web

// AddMessages adds texts to the message table; each console area keeps its
// texts in a file of its own and adds them from init. A key already present
// is a programming error (two areas would show each other's text).
func AddMessages(more map[string]map[string]string) {
	for lang, m := range more {
		if messages[lang] == nil {
			panic("web: texts for unknown language " + lang)
		}
		for k, v := range m {
			if _, dup := messages[lang][k]; dup {
				panic("web: text " + k + " defined twice")
			}
			messages[lang][k] = v
		}
	}
}

// The texts of the console frame: navigation and the top bar.
func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"nav.skip":         "Skip to content",
			"nav.label":        "Account",
			"nav.profile":      "Profile",
			"nav.security":     "Security",
			"nav.sessions":     "Sessions",
			"nav.linked":       "Linked accounts",
			"nav.apps":         "Connected apps",
			"nav.activity":     "Activity",
			"nav.data":         "Your data",
			"nav.developer":    "Developer",
			"nav.integrations": "Integrations",
			"nav.admin":        "Administration",
			"nav.toadmin":      "Administration",
			"nav.toaccount":    "Your account",

			"admin.nav.overview":  "Overview",
			"admin.nav.users":     "Users",
			"admin.nav.roles":     "Roles",
			"admin.nav.clients":   "OAuth clients",
			"admin.nav.apikeys":   "API keys",
			"admin.nav.audit":     "Audit log",
			"admin.nav.platforms": "Platforms",
			"admin.nav.config":    "Configuration",
			"admin.nav.chat":      "Chat platform",
			"admin.nav.tracking":  "Tracking",
		},
		"de": {
			"nav.skip":         "Zum Inhalt springen",
			"nav.label":        "Konto",
			"nav.profile":      "Profil",
			"nav.security":     "Sicherheit",
			"nav.sessions":     "Sitzungen",
			"nav.linked":       "Verknüpfte Konten",
			"nav.apps":         "Verbundene Apps",
			"nav.activity":     "Aktivität",
			"nav.data":         "Ihre Daten",
			"nav.developer":    "Entwickler",
			"nav.integrations": "Integrationen",
			"nav.admin":        "Verwaltung",
			"nav.toadmin":      "Verwaltung",
			"nav.toaccount":    "Ihr Konto",

			"admin.nav.overview":  "Übersicht",
			"admin.nav.users":     "Benutzer",
			"admin.nav.roles":     "Rollen",
			"admin.nav.clients":   "OAuth-Clients",
			"admin.nav.apikeys":   "API-Schlüssel",
			"admin.nav.audit":     "Protokoll",
			"admin.nav.platforms": "Plattformen",
			"admin.nav.config":    "Konfiguration",
			"admin.nav.chat":      "Chat-Plattform",
			"admin.nav.tracking":  "Tracking",
		},
	})
}
