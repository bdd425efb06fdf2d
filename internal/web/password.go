package web

import (
	"errors"
	"fmt"

	"hmid/internal/auth"
	"hmid/internal/password"
)

// PasswordHint is what a form that sets a new password shows beside it: the
// rules in force (password.* policies) as a help text, and the texts of the
// strength hint that the page's script shows while one types (hmid.js,
// data-strength); without the script the help text alone is shown.
type PasswordHint struct {
	Min                       int
	Help                      string
	Short, Weak, Fair, Strong string
}

// NewPasswordHint is the hint of rules in lang.
func NewPasswordHint(lang string, rules password.Rules) PasswordHint {
	t := Translator(lang)
	help := fmt.Sprintf(t("pw.hint"), rules.MinLength)
	if rules.RefuseCommon {
		help += " " + t("pw.hint.common")
	}
	return PasswordHint{
		Min: rules.MinLength, Help: help,
		Short: fmt.Sprintf(t("pw.strength.short"), rules.MinLength),
		Weak:  t("pw.strength.weak"), Fair: t("pw.strength.fair"), Strong: t("pw.strength.strong"),
	}
}

// PasswordProblem is the text in lang of a refusal of the password rules
// (too short, too common), "" for any other error.
func PasswordProblem(lang string, err error, rules password.Rules) string {
	t := Translator(lang)
	switch {
	case errors.Is(err, password.ErrCommon):
		return t("pw.common")
	case errors.Is(err, password.ErrTooShort):
		return fmt.Sprintf(t("pw.short"), rules.MinLength)
	}
	return ""
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"pw.hint":            "At least %d characters.",
			"pw.hint.common":     "Common passwords such as 12345678 are refused; a few unrelated words make a strong one.",
			"pw.strength.short":  "Strength: too short, at least %d characters.",
			"pw.strength.weak":   "Strength: weak. Longer is stronger: add a word or two.",
			"pw.strength.fair":   "Strength: fair.",
			"pw.strength.strong": "Strength: strong.",
			"pw.common":          "This password is one of the most common ones, which are guessed first. Please choose another.",
			"pw.short":           "The password is too short. Use at least %d characters.",
		},
		"de": {
			"pw.hint":            "Mindestens %d Zeichen.",
			"pw.hint.common":     "Häufige Passwörter wie 12345678 werden abgelehnt; einige Wörter ohne Zusammenhang ergeben ein starkes.",
			"pw.strength.short":  "Stärke: zu kurz, mindestens %d Zeichen.",
			"pw.strength.weak":   "Stärke: schwach. Länger ist stärker: Fügen Sie ein oder zwei Wörter hinzu.",
			"pw.strength.fair":   "Stärke: mittel.",
			"pw.strength.strong": "Stärke: stark.",
			"pw.common":          "Dieses Passwort gehört zu den häufigsten, die zuerst geraten werden. Bitte wählen Sie ein anderes.",
			"pw.short":           "Das Passwort ist zu kurz. Verwenden Sie mindestens %d Zeichen.",
		},
	})
}

// BanText tells a banned person, in lang, until when their account is
// blocked (a localized date, or permanently) and the reason the operator
// gave, without the API's technical wording.
func BanText(lang string, b *auth.Ban) string {
	t := Translator(lang)
	s := t("ban.permanent")
	if b.Until != nil {
		s = fmt.Sprintf(t("ban.until"), formatTime(lang, *b.Until))
	}
	if b.Reason != "" {
		s += " " + fmt.Sprintf(t("ban.reason"), b.Reason)
	}
	return s
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"ban.until":     "Your account is blocked until %s.",
			"ban.permanent": "Your account is blocked permanently.",
			"ban.reason":    "Reason given: %s",
		},
		"de": {
			"ban.until":     "Ihr Konto ist bis %s gesperrt.",
			"ban.permanent": "Ihr Konto ist dauerhaft gesperrt.",
			"ban.reason":    "Angegebener Grund: %s",
		},
	})
}
