package auth

import (
	"net/http"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
)

// PasskeyRequiredReason is the reason field of the answer POST
// /v1/auth/login gives a user whose only second factor is a passkey.
const PasskeyRequiredReason = "passkey_required"

// passkeyRequiredMessages say, per locale, what finishes the sign-in; %s is
// the browser URL.
var passkeyRequiredMessages = map[string]string{
	"en": "This account's second factor is a passkey, and only a browser can use it: sign in at %s. A code from an authenticator app or a backup code cannot finish this sign-in.",
	"de": "Der zweite Faktor dieses Kontos ist ein Passkey, und nur ein Browser kann ihn verwenden: Melden Sie sich unter %s an. Ein Code aus einer Authenticator-App oder ein Backup-Code kann diese Anmeldung nicht abschließen.",
}

// PasskeyRequiredError is the login's answer when a code was sent for a
// user whose only second factor is a passkey: no code can finish their
// sign-in. It is a Forbidden apperr for every caller that maps errors
// generically (the pages show its English message translated); the JSON
// login answers it as PasskeyRequiredAnswer in the person's language.
type PasskeyRequiredError struct {
	Locale string // the user's preferred locale, "" for none
}

func (e *PasskeyRequiredError) Error() string { return e.Unwrap().Error() }

// Unwrap gives the generic form: Forbidden with the English message.
func (e *PasskeyRequiredError) Unwrap() error {
	return apperr.Forbiddenf("this account's second factor is a passkey: sign in with it in a browser; a code cannot finish this sign-in")
}

// PasskeyRequiredAnswer is the 403 body of POST /v1/auth/login for a user
// whose only second factor is a passkey: the error envelope with a reason a
// client can branch on and the page that finishes the sign-in.
type PasskeyRequiredAnswer struct {
	Error    string `json:"error"`
	Message  string `json:"message"`
	Reason   string `json:"reason"`
	LoginURL string `json:"login_url"`
}

// writePasskeyRequired answers 403 PasskeyRequiredAnswer in the language of
// the user (locale), else of the request's Accept-Language, else English.
func (h *Handler) writePasskeyRequired(w http.ResponseWriter, r *http.Request, locale string) {
	url := h.S.PublicURL + "/login"
	msg := passkeyRequiredMessages[answerLanguage(locale, r)]
	httpx.JSON(w, http.StatusForbidden, PasskeyRequiredAnswer{
		Error: string(apperr.Forbidden), Message: strings.Replace(msg, "%s", url, 1), Reason: PasskeyRequiredReason, LoginURL: url,
	})
}

// answerLanguage picks en or de: the user's preferred locale when it is one
// of them, else the first of the two that Accept-Language names (RFC 9110
// §12.5.4, without weights: a client that names German before English reads
// German), else English.
func answerLanguage(locale string, r *http.Request) string {
	if _, ok := passkeyRequiredMessages[locale]; ok {
		return locale
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		lang, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if _, ok := passkeyRequiredMessages[lang]; ok {
			return lang
		}
	}
	return "en"
}
