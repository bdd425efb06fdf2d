package web

// messages are the texts of the pages, per language. Every key exists in
// every language (a test checks it).
var messages = map[string]map[string]string{
	"en": {
		"app.tagline":          "Your hmid account",
		"title.home":           "Your account",
		"title.login":          "Log in",
		"title.code":           "Two-step verification",
		"title.register":       "Create an account",
		"title.consent":        "Authorize access",
		"title.logout":         "Log out",
		"title.loggedout":      "Logged out",
		"title.forgot":         "Reset your password",
		"title.reset":          "Choose a new password",
		"title.error":          "Something went wrong",
		"field.email":          "Email address",
		"field.password":       "Password",
		"field.newpassword":    "New password",
		"field.username":       "Username (optional)",
		"field.code":           "Authentication code",
		"help.password":        "At least 8 characters.",
		"help.username":        "3 to 30 letters, digits or underscores. Leave empty to derive one from your email address.",
		"help.code":            "Enter the 6-digit code from your authenticator app, or one of your backup codes.",
		"login.submit":         "Log in",
		"login.forgot":         "Forgot your password?",
		"login.noaccount":      "No account yet?",
		"login.register":       "Create one",
		"code.submit":          "Verify",
		"code.restart":         "Start over",
		"register.submit":      "Create account",
		"register.have":        "Already have an account?",
		"register.login":       "Log in",
		"register.closed":      "Registration is closed on this server.",
		"consent.wants":        "%s would like to access your account.",
		"consent.scopes":       "It asks for permission to:",
		"consent.approve":      "Allow",
		"consent.as":           "Signed in as",
		"consent.notyou":       "Not you?",
		"consent.deny":         "Deny",
		"consent.note":         "You can revoke this access at any time. Only allow applications you trust.",
		"logout.confirm":       "Do you want to log out on this device?",
		"title.verifyemail":    "Confirm your new email address",
		"title.linkemail":      "Confirm your email login",
		"verify.email.confirm": "Confirm the change of your account's email address, signed in as",
		"verify.link.confirm":  "Confirm that email and password sign-in is added to your account, signed in as",
		"verify.submit":        "Confirm",
		"verify.email.done":    "Your email address has been changed.",
		"verify.link.done":     "Email and password sign-in has been added to your account.",
		"logout.submit":        "Log out",
		"logout.cancel":        "Cancel",
		"logout.done":          "You have been logged out.",
		"logout.none":          "You are not logged in.",
		"home.signedout":       "You are not signed in.",
		"forgot.help":          "Enter the email address of your account. We will send you a link to choose a new password.",
		"forgot.submit":        "Send link",
		"forgot.sent":          "If an account with this email address exists, a link to choose a new password has been sent to it. The link works for one hour.",
		"reset.submit":         "Change password",
		"reset.done":           "Your password has been changed and every session was signed out. You can now log in with the new password.",
		"reset.missing":        "This page needs the link from the password-reset mail.",
		"link.login":           "Log in",
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
		"err.state":            "Your login has expired. Please enter your email and password again.",
		"err.badlink":          "This link is invalid, has expired or was already used. Request a new one.",

		// The page the verification mail of a registration links to.
		"title.verifyaddress":      "Confirm your email address",
		"verify.address.confirm":   "Confirm that this email address is yours:",
		"verify.address.done":      "Your email address has been confirmed.",
		"verify.address.conflict":  "This email address has been confirmed for another account in the meantime, so it cannot be confirmed for this one.",
		"verify.address.missing":   "This page needs the link from the verification mail.",
		"login.or":                 "or",
		"login.with":               "Sign in with %s",
		"title.connected":          "Account connected",
		"connect.with":             "Connect %s",
		"link.continue":            "Continue",
		"upstream.unknown":         "This sign-in method is not offered on this server.",
		"upstream.disabled":        "Sign-in with %s is turned off on this server.",
		"upstream.denied":          "You cancelled the sign-in at %s. Nothing was changed; you can try again or choose another way to sign in.",
		"upstream.expired":         "The sign-in with %s took longer than ten minutes. Please start again.",
		"upstream.replayed":        "This sign-in with %s was already completed. Please start again from the login page.",
		"upstream.state":           "This sign-in with %s was not started in this browser, or its link is not valid. Please start again from the login page.",
		"upstream.callback":        "%s sent back an incomplete answer. Please start again.",
		"upstream.provider":        "%s did not answer as expected. Please try again in a moment, or choose another way to sign in.",
		"upstream.connect.done":    "Your %s account is now connected. You can sign in with it from now on.",
		"upstream.connect.already": "This %s account was already connected to your account.",
		"upstream.connect.session": "You are no longer signed in as the user who started connecting this account. Sign in and try again.",
		"title.cancelled":          "Sign-in cancelled",
		// End-session endpoint (RP-Initiated Logout).
		"endsession.confirm": "Log out of hmid?",
		"endsession.from":    "The application %s asks to log you out.",
		"endsession.as":      "You are signed in as",
		"endsession.return":  "You will then be sent back to the application.",
		"endsession.stay":    "Stay logged in",
	},
	"de": {
		"app.tagline":          "Ihr hmid-Konto",
		"title.home":           "Ihr Konto",
		"title.login":          "Anmelden",
		"title.code":           "Bestätigung in zwei Schritten",
		"title.register":       "Konto erstellen",
		"title.consent":        "Zugriff erlauben",
		"title.logout":         "Abmelden",
		"title.loggedout":      "Abgemeldet",
		"title.forgot":         "Passwort zurücksetzen",
		"title.reset":          "Neues Passwort wählen",
		"title.error":          "Etwas ist schiefgegangen",
		"field.email":          "E-Mail-Adresse",
		"field.password":       "Passwort",
		"field.newpassword":    "Neues Passwort",
		"field.username":       "Benutzername (optional)",
		"field.code":           "Bestätigungscode",
		"help.password":        "Mindestens 8 Zeichen.",
		"help.username":        "3 bis 30 Buchstaben, Ziffern oder Unterstriche. Leer lassen, um ihn aus der E-Mail-Adresse abzuleiten.",
		"help.code":            "Geben Sie den 6-stelligen Code aus Ihrer Authenticator-App oder einen Ihrer Backup-Codes ein.",
		"login.submit":         "Anmelden",
		"login.forgot":         "Passwort vergessen?",
		"login.noaccount":      "Noch kein Konto?",
		"login.register":       "Jetzt erstellen",
		"code.submit":          "Bestätigen",
		"code.restart":         "Von vorn beginnen",
		"register.submit":      "Konto erstellen",
		"register.have":        "Sie haben bereits ein Konto?",
		"register.login":       "Anmelden",
		"register.closed":      "Die Registrierung ist auf diesem Server geschlossen.",
		"consent.wants":        "%s möchte auf Ihr Konto zugreifen.",
		"consent.scopes":       "Die Anwendung bittet um folgende Berechtigungen:",
		"consent.approve":      "Erlauben",
		"consent.as":           "Angemeldet als",
		"consent.notyou":       "Nicht Sie?",
		"consent.deny":         "Ablehnen",
		"consent.note":         "Sie können diesen Zugriff jederzeit widerrufen. Erlauben Sie nur Anwendungen, denen Sie vertrauen.",
		"logout.confirm":       "Möchten Sie sich auf diesem Gerät abmelden?",
		"title.verifyemail":    "Neue E-Mail-Adresse bestätigen",
		"title.linkemail":      "E-Mail-Anmeldung bestätigen",
		"verify.email.confirm": "Bestätigen Sie die Änderung der E-Mail-Adresse Ihres Kontos, angemeldet als",
		"verify.link.confirm":  "Bestätigen Sie, dass die Anmeldung mit E-Mail und Passwort zu Ihrem Konto hinzugefügt wird, angemeldet als",
		"verify.submit":        "Bestätigen",
		"verify.email.done":    "Ihre E-Mail-Adresse wurde geändert.",
		"verify.link.done":     "Die Anmeldung mit E-Mail und Passwort wurde Ihrem Konto hinzugefügt.",
		"logout.submit":        "Abmelden",
		"logout.cancel":        "Abbrechen",
		"logout.done":          "Sie wurden abgemeldet.",
		"logout.none":          "Sie sind nicht angemeldet.",
		"home.signedout":       "Sie sind nicht angemeldet.",
		"forgot.help":          "Geben Sie die E-Mail-Adresse Ihres Kontos ein. Wir senden Ihnen einen Link, mit dem Sie ein neues Passwort wählen können.",
		"forgot.submit":        "Link senden",
		"forgot.sent":          "Falls ein Konto mit dieser E-Mail-Adresse existiert, wurde ein Link zum Wählen eines neuen Passworts dorthin gesendet. Der Link ist eine Stunde gültig.",
		"reset.submit":         "Passwort ändern",
		"reset.done":           "Ihr Passwort wurde geändert und alle Sitzungen wurden abgemeldet. Sie können sich jetzt mit dem neuen Passwort anmelden.",
		"reset.missing":        "Diese Seite braucht den Link aus der E-Mail zum Zurücksetzen des Passworts.",
		"link.login":           "Anmelden",
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
		"err.state":            "Ihre Anmeldung ist abgelaufen. Bitte geben Sie E-Mail-Adresse und Passwort erneut ein.",
		"err.badlink":          "Dieser Link ist ungültig, abgelaufen oder wurde bereits verwendet. Fordern Sie einen neuen an.",

		// The page the verification mail of a registration links to.
		"title.verifyaddress":      "E-Mail-Adresse bestätigen",
		"verify.address.confirm":   "Bestätigen Sie, dass diese E-Mail-Adresse Ihnen gehört:",
		"verify.address.done":      "Ihre E-Mail-Adresse wurde bestätigt.",
		"verify.address.conflict":  "Diese E-Mail-Adresse wurde inzwischen für ein anderes Konto bestätigt und kann daher für dieses nicht bestätigt werden.",
		"verify.address.missing":   "Diese Seite braucht den Link aus der Bestätigungs-E-Mail.",
		"login.or":                 "oder",
		"login.with":               "Mit %s anmelden",
		"title.connected":          "Konto verbunden",
		"connect.with":             "%s verbinden",
		"link.continue":            "Weiter",
		"upstream.unknown":         "Diese Anmeldemethode wird auf diesem Server nicht angeboten.",
		"upstream.disabled":        "Die Anmeldung mit %s ist auf diesem Server abgeschaltet.",
		"upstream.denied":          "Sie haben die Anmeldung bei %s abgebrochen. Es wurde nichts geändert; Sie können es erneut versuchen oder eine andere Anmeldemethode wählen.",
		"upstream.expired":         "Die Anmeldung mit %s hat länger als zehn Minuten gedauert. Bitte beginnen Sie von vorn.",
		"upstream.replayed":        "Diese Anmeldung mit %s wurde bereits abgeschlossen. Bitte beginnen Sie auf der Anmeldeseite von vorn.",
		"upstream.state":           "Diese Anmeldung mit %s wurde nicht in diesem Browser begonnen, oder ihr Link ist ungültig. Bitte beginnen Sie auf der Anmeldeseite von vorn.",
		"upstream.callback":        "%s hat eine unvollständige Antwort geschickt. Bitte beginnen Sie von vorn.",
		"upstream.provider":        "%s hat nicht wie erwartet geantwortet. Bitte versuchen Sie es gleich noch einmal oder wählen Sie eine andere Anmeldemethode.",
		"upstream.connect.done":    "Ihr Konto bei %s ist jetzt verbunden. Sie können sich ab sofort auch damit anmelden.",
		"upstream.connect.already": "Dieses Konto bei %s war bereits mit Ihrem Konto verbunden.",
		"upstream.connect.session": "Sie sind nicht mehr als die Person angemeldet, die das Verbinden begonnen hat. Bitte melden Sie sich an und versuchen Sie es erneut.",
		"title.cancelled":          "Anmeldung abgebrochen",
		// End-session endpoint (RP-Initiated Logout).
		"endsession.confirm": "Von hmid abmelden?",
		"endsession.from":    "Die Anwendung %s möchte Sie abmelden.",
		"endsession.as":      "Sie sind angemeldet als",
		"endsession.return":  "Danach kehren Sie zur Anwendung zurück.",
		"endsession.stay":    "Angemeldet bleiben",
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
