package signin

import "hmid/internal/web"

// The texts of the device verification page (device.go).
func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.device":         "Connect a device",
			"title.device.confirm": "Sign in on a device?",
			"title.device.done":    "Device signed in",
			"title.device.denied":  "Request denied",
			"device.warning.title": "Only continue with a code shown on your own device.",
			"device.warning":       "If someone sent you this code or link, stop: approving it would give them access to your account.",
			"device.field":         "Code shown on your device",
			"device.field.help":    "Eight letters, such as BCDF-GHJK. Upper or lower case, with or without the hyphen.",
			"device.continue":      "Continue",
			"device.wants":         "%s wants to sign in to your account on a device.",
			"device.code.is":       "The device shows this code:",
			"device.code.label":    "Code",
			"device.code.compare":  "Check that it is exactly the code on the screen in front of you.",
			"device.other":         "Enter another code",
			"device.approved":      "Done: %s is signed in on your device. You can close this page and go back to the device.",
			"device.denied":        "The request was denied; the device gets no access. You can close this page.",
			"device.err.code":      "This code is not valid: it may be mistyped, expired or already used. Check the code on your device.",
			"device.err.throttled": "Too many wrong codes. Wait a few minutes, then try again.",
			"device.err.decision":  "Choose Allow or Deny.",
		},
		"de": {
			"title.device":         "Gerät verbinden",
			"title.device.confirm": "Auf einem Gerät anmelden?",
			"title.device.done":    "Gerät angemeldet",
			"title.device.denied":  "Anfrage abgelehnt",
			"device.warning.title": "Fahren Sie nur mit einem Code fort, den Ihr eigenes Gerät anzeigt.",
			"device.warning":       "Wenn Ihnen jemand diesen Code oder Link geschickt hat, brechen Sie ab: Mit der Freigabe erhielte diese Person Zugriff auf Ihr Konto.",
			"device.field":         "Code auf Ihrem Gerät",
			"device.field.help":    "Acht Buchstaben, etwa BCDF-GHJK. Groß- oder Kleinschreibung, mit oder ohne Bindestrich.",
			"device.continue":      "Weiter",
			"device.wants":         "%s möchte sich auf einem Gerät bei Ihrem Konto anmelden.",
			"device.code.is":       "Das Gerät zeigt diesen Code:",
			"device.code.label":    "Code",
			"device.code.compare":  "Prüfen Sie, dass es genau der Code auf dem Bildschirm vor Ihnen ist.",
			"device.other":         "Anderen Code eingeben",
			"device.approved":      "Fertig: %s ist auf Ihrem Gerät angemeldet. Sie können diese Seite schließen und zum Gerät zurückkehren.",
			"device.denied":        "Die Anfrage wurde abgelehnt; das Gerät erhält keinen Zugriff. Sie können diese Seite schließen.",
			"device.err.code":      "Dieser Code ist ungültig: vielleicht vertippt, abgelaufen oder schon benutzt. Prüfen Sie den Code auf Ihrem Gerät.",
			"device.err.throttled": "Zu viele falsche Codes. Warten Sie einige Minuten und versuchen Sie es dann erneut.",
			"device.err.decision":  "Wählen Sie Erlauben oder Ablehnen.",
		},
	})
}
