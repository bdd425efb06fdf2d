package web

// messages are the texts of the pages, per language. Every key exists in
// every language (a test checks it).
var messages = map[string]map[string]string{
	"en": {
		"app.tagline":          "Your hmid account",
		"title.error":          "Something went wrong",
		"field.newpassword":    "New password",
		"logout.submit":        "Log out",
		"link.back":            "Back to login",
		"scope.openid":         "Know who you are (your user id)",
		"scope.profile":        "See your name, username and avatar",
		"scope.email":          "See your email address",
		"scope.roles":          "See your roles",
		"scope.permissions":    "See your permissions",
		"scope.offline_access": "Stay connected when you are not using it",
		"err.credentials":      "Invalid email or password.",
		"err.throttled":        "Too many attempts. Please wait a few minutes and try again.",
		"err.forbidden":        "This is not allowed:",
		"err.conflict":         "This email address or username is already in use.",
		"err.notfound":         "This request is unknown, has expired or was already answered.",
		"err.unavailable":      "This function is not available right now. Please try again later.",
		"err.invalid":          "Please check your input:",
		"err.internal":         "Something went wrong on our side. Please try again.",
		"err.csrf":             "This form has expired or was sent from another site. Please try again.",

		// The page the verification mail of a registration links to.
		"connect.with":  "Connect %s",
		"link.continue": "Continue",
		// End-session endpoint (RP-Initiated Logout).
	},
	"de": {
		"app.tagline":          "Ihr hmid-Konto",
		"title.error":          "Etwas ist schiefgegangen",
		"field.newpassword":    "Neues Passwort",
		"logout.submit":        "Abmelden",
		"link.back":            "Zurück zur Anmeldung",
		"scope.openid":         "Wissen, wer Sie sind (Ihre Benutzer-ID)",
		"scope.profile":        "Ihren Namen, Benutzernamen und Ihr Profilbild sehen",
		"scope.email":          "Ihre E-Mail-Adresse sehen",
		"scope.roles":          "Ihre Rollen sehen",
		"scope.permissions":    "Ihre Berechtigungen sehen",
		"scope.offline_access": "Verbunden bleiben, auch wenn Sie die Anwendung nicht nutzen",
		"err.credentials":      "E-Mail-Adresse oder Passwort ist falsch.",
		"err.throttled":        "Zu viele Versuche. Bitte warten Sie einige Minuten und versuchen Sie es erneut.",
		"err.forbidden":        "Das ist nicht erlaubt:",
		"err.conflict":         "Diese E-Mail-Adresse oder dieser Benutzername wird bereits verwendet.",
		"err.notfound":         "Diese Anfrage ist unbekannt, abgelaufen oder wurde bereits beantwortet.",
		"err.unavailable":      "Diese Funktion ist gerade nicht verfügbar. Bitte versuchen Sie es später erneut.",
		"err.invalid":          "Bitte prüfen Sie Ihre Eingabe:",
		"err.internal":         "Bei uns ist etwas schiefgegangen. Bitte versuchen Sie es erneut.",
		"err.csrf":             "Dieses Formular ist abgelaufen oder wurde von einer anderen Website gesendet. Bitte versuchen Sie es erneut.",

		// The page the verification mail of a registration links to.
		"connect.with":  "%s verbinden",
		"link.continue": "Weiter",
		// End-session endpoint (RP-Initiated Logout).
	},
}

// Translator returns the lookup of lang; an unknown key shows as itself, so
// a missing text is visible rather than blank.
func Translator(lang string) func(string) string {
	m := messages[lang]
	return func(key string) string {
		if s, ok := m[key]; ok {
			return s
		}
		return key
	}
}

// ScopeText is the localized description of a scope, or the provider's own
// description for a scope this package does not know.
func ScopeText(lang, name, fallback string) string {
	if s, ok := messages[lang]["scope."+name]; ok {
		return s
	}
	return fallback
}

// HasText reports whether the message table has a text for key (every key
// is in every language; a test checks it). A page that builds a key from
// data (an event type, a scope) asks first and shows the data otherwise.
func HasText(key string) bool {
	_, ok := messages["en"][key]
	return ok
}

// Languages are the languages the pages speak.
func Languages() []string {
	out := make([]string, 0, len(messages))
	for lang := range messages {
		out = append(out, lang)
	}
	return out
}

// Text is the text of key in lang, "" when there is none.
func Text(lang, key string) string { return messages[lang][key] }
