package admin

import (
	"encoding/json"
	"fmt"
	"strings"

	"hmid/internal/policy"
	"hmid/internal/settings"
	"hmid/internal/web"
)

// The policies (package policy) are system-config entries like the others,
// posted to the same form action; /admin/config shows them first, grouped,
// with a translated title, their bounds and the value in words, so an
// operator need not know the keys.

// policyRow is a policy entry as the page shows it.
type policyRow struct {
	configRow
	Title, Help string
	// Min and Max bound the number input (none for a boolean).
	Min, Max int64
	// Words is the value in words ("30 days", "off"), "" when plain;
	// Bounds the values allowed, in words.
	Words, Bounds string
}

// policyGroup is a heading of the policies section with its entries.
type policyGroup struct {
	ID, Title string
	Rows      []policyRow
}

// policyGroups names the groups by key prefix, in the order shown.
var policyGroups = []struct{ prefix, id string }{
	{"session.", "sessions"}, {"oauth.", "tokens"}, {"password.", "passwords"}, {"login.", "login"},
}

// splitPolicies returns the policy entries of entries, grouped (with
// failed, the refused post, shown in place of its stored value), and the
// other entries.
func splitPolicies(entries []settings.ConfigEntry, failed *configRow, lang string) ([]policyGroup, []settings.ConfigEntry) {
	t := web.Translator(lang)
	byKey := map[string]settings.ConfigEntry{}
	var rest []settings.ConfigEntry
	for _, e := range entries {
		if _, ok := policy.Lookup(e.Key); ok {
			byKey[e.Key] = e
		} else {
			rest = append(rest, e)
		}
	}
	var groups []policyGroup
	for _, g := range policyGroups {
		pg := policyGroup{ID: g.id, Title: t("admin.policy.group." + g.id)}
		for _, pe := range policy.Entries {
			e, ok := byKey[pe.Key]
			if !ok || !strings.HasPrefix(pe.Key, g.prefix) {
				continue
			}
			pg.Rows = append(pg.Rows, newPolicyRow(pe, e, failed, lang))
		}
		if len(pg.Rows) > 0 {
			groups = append(groups, pg)
		}
	}
	return groups, rest
}

// newPolicyRow is the row of policy entry pe stored as e.
func newPolicyRow(pe policy.Entry, e settings.ConfigEntry, failed *configRow, lang string) policyRow {
	t := web.Translator(lang)
	row := policyRow{configRow: configEntryRow(e), Title: t("admin.policy." + pe.Key), Help: t("admin.policy." + pe.Key + ".help")}
	if !pe.IsBool() {
		row.Min, row.Max = pe.Min, pe.Max
		row.Bounds = fmt.Sprintf(t("admin.policy.bounds"), pe.Min, pe.Max)
		if pe.ZeroOff {
			row.Min = 0
			row.Bounds = fmt.Sprintf(t("admin.policy.bounds.off"), pe.Min, pe.Max)
		}
		row.Words = valueWords(pe, e.Value, lang)
	}
	if failed != nil && failed.Key == e.Key {
		row.Text, row.Checked, row.Error = failed.Text, failed.Checked, failed.Error
	}
	return row
}

// valueWords is a number of seconds in words ("30 days"), "off" for a 0
// that means off, and "" for counts, which read well as they are.
func valueWords(pe policy.Entry, raw json.RawMessage, lang string) string {
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return ""
	}
	t := web.Translator(lang)
	if pe.ZeroOff && n == 0 {
		return t("admin.policy.off")
	}
	if !strings.HasSuffix(pe.Key, "_seconds") {
		return ""
	}
	return durationWords(n, t)
}

// durationWords says n seconds in the largest unit that divides it whole.
func durationWords(n int64, t func(string) string) string {
	for _, u := range []struct {
		secs int64
		unit string
	}{{86400, "day"}, {3600, "hour"}, {60, "minute"}} {
		if n >= u.secs && n%u.secs == 0 {
			return plural(n/u.secs, u.unit, t)
		}
	}
	return plural(n, "second", t)
}

func plural(n int64, unit string, t func(string) string) string {
	key := "admin.policy.unit." + unit
	if n != 1 {
		key += "s"
	}
	return fmt.Sprintf(t(key), n)
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.policy.title":           "Policies",
			"admin.policy.intro":           "Rules for sessions, tokens, passwords and sign-in. A change applies at once on every instance, to what is issued from then on; sessions and tokens issued before keep their lifetime.",
			"admin.policy.group.sessions":  "Sessions",
			"admin.policy.group.tokens":    "OAuth tokens",
			"admin.policy.group.passwords": "Passwords",
			"admin.policy.group.login":     "Failed sign-ins",
			"admin.policy.bounds":          "%d to %d",
			"admin.policy.bounds.off":      "0 (off) or %d to %d",
			"admin.policy.off":             "off",
			"admin.policy.unit.second":     "%d second",
			"admin.policy.unit.seconds":    "%d seconds",
			"admin.policy.unit.minute":     "%d minute",
			"admin.policy.unit.minutes":    "%d minutes",
			"admin.policy.unit.hour":       "%d hour",
			"admin.policy.unit.hours":      "%d hours",
			"admin.policy.unit.day":        "%d day",
			"admin.policy.unit.days":       "%d days",

			"admin.policy.session.absolute_timeout_seconds":          "Session lifetime (seconds)",
			"admin.policy.session.absolute_timeout_seconds.help":     "How long a sign-in lasts at most. Applies to sign-ins from now on.",
			"admin.policy.session.idle_timeout_seconds":              "Idle timeout (seconds)",
			"admin.policy.session.idle_timeout_seconds.help":         "A session not used for this long ends; 0 turns it off. Counted from the last use, but never from before the change.",
			"admin.policy.oauth.access_token_lifetime_seconds":       "Access token lifetime (seconds)",
			"admin.policy.oauth.access_token_lifetime_seconds.help":  "For apps that do not set their own. Applies to tokens issued from now on.",
			"admin.policy.oauth.refresh_token_lifetime_seconds":      "Refresh token lifetime (seconds)",
			"admin.policy.oauth.refresh_token_lifetime_seconds.help": "For apps that do not set their own. Each refresh issues a new one with this lifetime.",
			"admin.policy.password.min_length":                       "Minimum password length (characters)",
			"admin.policy.password.min_length.help":                  "For new passwords: registration, change and reset. Existing passwords keep working.",
			"admin.policy.password.refuse_common":                    "Refuse the 100,000 most common passwords",
			"admin.policy.password.refuse_common.help":               "Passwords such as 12345678 or iloveyou are guessed first (NIST SP 800-63B). For new passwords.",
			"admin.policy.login.fail_window_seconds":                 "Counting window (seconds)",
			"admin.policy.login.fail_window_seconds.help":            "The period the following limits per account, address and device count failed sign-ins in.",
			"admin.policy.login.fail_per_account":                    "Per account and address",
			"admin.policy.login.fail_per_account.help":               "Failed sign-ins to one account from one address in the window.",
			"admin.policy.login.fail_per_ip":                         "Per address",
			"admin.policy.login.fail_per_ip.help":                    "Failed sign-ins from one address, to any account, in the window.",
			"admin.policy.login.fail_per_account_day":                "Per account and day",
			"admin.policy.login.fail_per_account_day.help":           "Failed sign-ins to one account from all addresses in any 24 hours.",
			"admin.policy.login.fail_per_device":                     "Per known device",
			"admin.policy.login.fail_per_device.help":                "Failed sign-ins from a browser that signed in to the account before, in the window.",
			"admin.policy.login.fail_per_device_day":                 "Per known device and day",
			"admin.policy.login.fail_per_device_day.help":            "Failed sign-ins from such a browser in any 24 hours.",
		},
		"de": {
			"admin.policy.title":           "Richtlinien",
			"admin.policy.intro":           "Regeln für Sitzungen, Tokens, Passwörter und Anmeldungen. Eine Änderung gilt sofort auf jeder Instanz, für alles, was danach ausgestellt wird; bestehende Sitzungen und Tokens behalten ihre Gültigkeit.",
			"admin.policy.group.sessions":  "Sitzungen",
			"admin.policy.group.tokens":    "OAuth-Tokens",
			"admin.policy.group.passwords": "Passwörter",
			"admin.policy.group.login":     "Fehlgeschlagene Anmeldungen",
			"admin.policy.bounds":          "%d bis %d",
			"admin.policy.bounds.off":      "0 (aus) oder %d bis %d",
			"admin.policy.off":             "aus",
			"admin.policy.unit.second":     "%d Sekunde",
			"admin.policy.unit.seconds":    "%d Sekunden",
			"admin.policy.unit.minute":     "%d Minute",
			"admin.policy.unit.minutes":    "%d Minuten",
			"admin.policy.unit.hour":       "%d Stunde",
			"admin.policy.unit.hours":      "%d Stunden",
			"admin.policy.unit.day":        "%d Tag",
			"admin.policy.unit.days":       "%d Tage",

			"admin.policy.session.absolute_timeout_seconds":          "Gültigkeit einer Sitzung (Sekunden)",
			"admin.policy.session.absolute_timeout_seconds.help":     "Wie lange eine Anmeldung höchstens gilt. Gilt für Anmeldungen ab jetzt.",
			"admin.policy.session.idle_timeout_seconds":              "Inaktivitäts-Timeout (Sekunden)",
			"admin.policy.session.idle_timeout_seconds.help":         "Eine Sitzung, die so lange nicht genutzt wird, endet; 0 schaltet das aus. Gezählt ab der letzten Nutzung, aber nie von vor der Änderung an.",
			"admin.policy.oauth.access_token_lifetime_seconds":       "Gültigkeit der Access-Tokens (Sekunden)",
			"admin.policy.oauth.access_token_lifetime_seconds.help":  "Für Anwendungen ohne eigene Angabe. Gilt für Tokens, die ab jetzt ausgestellt werden.",
			"admin.policy.oauth.refresh_token_lifetime_seconds":      "Gültigkeit der Refresh-Tokens (Sekunden)",
			"admin.policy.oauth.refresh_token_lifetime_seconds.help": "Für Anwendungen ohne eigene Angabe. Jede Erneuerung stellt ein neues mit dieser Gültigkeit aus.",
			"admin.policy.password.min_length":                       "Mindestlänge von Passwörtern (Zeichen)",
			"admin.policy.password.min_length.help":                  "Für neue Passwörter: Registrierung, Änderung und Zurücksetzen. Bestehende Passwörter funktionieren weiter.",
			"admin.policy.password.refuse_common":                    "Die 100.000 häufigsten Passwörter ablehnen",
			"admin.policy.password.refuse_common.help":               "Passwörter wie 12345678 oder iloveyou werden zuerst geraten (NIST SP 800-63B). Für neue Passwörter.",
			"admin.policy.login.fail_window_seconds":                 "Zeitfenster (Sekunden)",
			"admin.policy.login.fail_window_seconds.help":            "Der Zeitraum, in dem die folgenden Grenzen je Konto, Adresse und Gerät fehlgeschlagene Anmeldungen zählen.",
			"admin.policy.login.fail_per_account":                    "Je Konto und Adresse",
			"admin.policy.login.fail_per_account.help":               "Fehlgeschlagene Anmeldungen an einem Konto von einer Adresse im Zeitfenster.",
			"admin.policy.login.fail_per_ip":                         "Je Adresse",
			"admin.policy.login.fail_per_ip.help":                    "Fehlgeschlagene Anmeldungen von einer Adresse, an beliebigen Konten, im Zeitfenster.",
			"admin.policy.login.fail_per_account_day":                "Je Konto und Tag",
			"admin.policy.login.fail_per_account_day.help":           "Fehlgeschlagene Anmeldungen an einem Konto von allen Adressen in beliebigen 24 Stunden.",
			"admin.policy.login.fail_per_device":                     "Je bekanntem Gerät",
			"admin.policy.login.fail_per_device.help":                "Fehlgeschlagene Anmeldungen aus einem Browser, der sich schon einmal an dem Konto angemeldet hat, im Zeitfenster.",
			"admin.policy.login.fail_per_device_day":                 "Je bekanntem Gerät und Tag",
			"admin.policy.login.fail_per_device_day.help":            "Fehlgeschlagene Anmeldungen aus einem solchen Browser in beliebigen 24 Stunden.",
		},
	})
}
