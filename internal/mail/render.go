package mail

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"regexp"
	"strings"
	texttemplate "text/template"
	"time"
)

// Data is what every template reads. Each kind uses only some fields:
//
//	two_factor_enabled, two_factor_disabled: Name, PlatformName, Time
//	two_factor_reset:                        Name, PlatformName, Time
//	backup_codes_regenerated:                Name, Time
//	audit_report_status_changed:             Name, ReportID, Status, ResolutionNotes, Time
//	email_change_verify:                     Name, NewEmail, Link, Token, ExpiresAt
//	email_link_verify:                       Name, Email, Link, Token, ExpiresAt
//	email_verify:                            Name, Email, Link, Token, ExpiresAt
//	password_reset:                          Name, Link, Token, ExpiresAt
//	password_changed:                        Name, Time, Link (to reset the password)
//	invitation:                              Name, Email, Link, Token, ExpiresAt
//	address_verified_elsewhere:              Name, Email, PlatformName, Time
//
// One struct rather than one per kind keeps callers simple: they fill the
// fields their kind needs, and Render fails if a time the kind shows is zero.
type Data struct {
	// Name greets the user; when empty the greeting has no name.
	Name string
	// PlatformName is the platform on which two-factor authentication changed.
	PlatformName string
	// PasskeyName is the name of the passkey added or removed.
	PasskeyName string
	// Time is when the reported event happened.
	Time time.Time
	// ReportID identifies the audit report whose status changed.
	ReportID string
	// Status is the report's new status (pending, reviewed, resolved or
	// dismissed are translated; any other value is shown as is).
	Status string
	// ResolutionNotes are the reviewer's notes; omitted from the mail when empty.
	ResolutionNotes string
	// NewEmail is the address the user wants to change to.
	NewEmail string
	// Email is the address being linked for password login, or the
	// registered address to confirm.
	Email string
	// Link opens the confirmation page with the token filled in; omitted when empty.
	Link string
	// Token is the code the user can enter by hand; omitted when empty.
	Token string
	// ExpiresAt is when Link and Token stop working.
	ExpiresAt time.Time
}

//go:embed templates
var templateFS embed.FS

// defaultLocale is used for an empty or unsupported locale, because English
// is the language every user of the service can be assumed to read.
const defaultLocale = "en"

// locale holds what differs between languages outside the template files.
type locale struct {
	months   [12]string
	dayDot   bool // German writes the day as an ordinal: "2. Januar"
	statuses map[string]string
}

var locales = map[string]locale{
	"en": {
		months: [12]string{"January", "February", "March", "April", "May", "June",
			"July", "August", "September", "October", "November", "December"},
		statuses: map[string]string{
			"pending": "pending", "reviewed": "reviewed", "resolved": "resolved", "dismissed": "dismissed",
		},
	},
	"de": {
		months: [12]string{"Januar", "Februar", "März", "April", "Mai", "Juni",
			"Juli", "August", "September", "Oktober", "November", "Dezember"},
		dayDot: true,
		statuses: map[string]string{
			"pending": "ausstehend", "reviewed": "geprüft", "resolved": "gelöst", "dismissed": "verworfen",
		},
	},
}

var kinds = []string{
	KindTwoFactorEnabled,
	KindTwoFactorDisabled,
	KindTwoFactorReset,
	KindBackupCodesRegenerated,
	KindAuditReportStatusChanged,
	KindEmailChangeVerify,
	KindEmailLinkVerify,
	KindEmailVerify,
	KindPasswordReset,
	KindPasswordChanged,
	KindPasskeyAdded,
	KindPasskeyRemoved,
	KindInvitation,
	KindAddressVerifiedElsewhere,
}

// errZeroTime stops a render whose data lacks a time the mail shows; a mail
// saying "1 January 0001" would be worse than no mail.
var errZeroTime = errors.New("time is not set")

// formatTime writes t in UTC as "2 January 2006 15:04 UTC" (en) or
// "2. Januar 2006 15:04 UTC" (de). UTC is stated because the service does not
// know the reader's time zone.
func (l locale) formatTime(t time.Time) (string, error) {
	if t.IsZero() {
		return "", errZeroTime
	}
	t = t.UTC()
	day := fmt.Sprint(t.Day())
	if l.dayDot {
		day += "."
	}
	return fmt.Sprintf("%s %s %d %02d:%02d UTC", day, l.months[t.Month()-1], t.Year(), t.Hour(), t.Minute()), nil
}

func (l locale) status(s string) string {
	if v, ok := l.statuses[s]; ok {
		return v
	}
	return s
}

func (l locale) funcs() map[string]any {
	return map[string]any{"date": l.formatTime, "status": l.status}
}

// templateSet is the parsed templates of one kind in one locale: the text
// set has "subject", and "text" (the shared layout around the kind's "body");
// the HTML set has "layout" around the kind's "content". Both get
// "greeting" and "footer" from the locale's common.tmpl.
type templateSet struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

// templates is parsed once at start: the files are embedded, so a parse
// error is a programming error that the package's tests catch.
var templates = mustParseTemplates()

func mustParseTemplates() map[string]map[string]templateSet {
	sets := make(map[string]map[string]templateSet, len(locales))
	for name, loc := range locales {
		sets[name] = make(map[string]templateSet, len(kinds))
		for _, kind := range kinds {
			dir := "templates/" + name + "/"
			text, err := texttemplate.New("text").Funcs(loc.funcs()).ParseFS(templateFS,
				"templates/layout.txt", dir+"common.tmpl", dir+kind+".txt")
			if err != nil {
				panic(fmt.Sprintf("mail: parse %s text template %s: %v", name, kind, err))
			}
			html, err := htmltemplate.New("html").Funcs(loc.funcs()).ParseFS(templateFS,
				"templates/layout.html", dir+"common.tmpl", dir+kind+".html")
			if err != nil {
				panic(fmt.Sprintf("mail: parse %s HTML template %s: %v", name, kind, err))
			}
			for _, n := range []string{"subject", "body", "text"} {
				if text.Lookup(n) == nil {
					panic(fmt.Sprintf("mail: %s text template %s does not define %q", name, kind, n))
				}
			}
			for _, n := range []string{"layout", "content"} {
				if html.Lookup(n) == nil {
					panic(fmt.Sprintf("mail: %s HTML template %s does not define %q", name, kind, n))
				}
			}
			sets[name][kind] = templateSet{text: text, html: html}
		}
	}
	return sets
}

// matchLocale maps a user's preferred locale to a template language: "de",
// "de-DE", "de_AT" and "DE" give "de"; empty or unknown ones give "en".
func matchLocale(tag string) string {
	lang, _, _ := strings.Cut(strings.ReplaceAll(tag, "_", "-"), "-")
	lang = strings.ToLower(strings.TrimSpace(lang))
	if _, ok := locales[lang]; ok {
		return lang
	}
	return defaultLocale
}

// htmlView is what the shared HTML layout reads; the kind's content
// template gets Data unchanged.
type htmlView struct {
	Lang    string
	Subject string
	Data    any
}

var blankLines = regexp.MustCompile(`\n{3,}`)

// Render builds the message of the given kind in the user's locale, filling
// Subject, Text, HTML, Kind and Locale (To is left to the caller). data is
// normally a Data or *Data. An unknown locale falls back to English; an
// unknown kind, or data missing a field or time the template shows, is an
// error.
func Render(kind, locale string, data any) (Message, error) {
	lang := matchLocale(locale)
	set, ok := templates[lang][kind]
	if !ok {
		return Message{}, fmt.Errorf("mail: unknown kind %q", kind)
	}

	var buf bytes.Buffer
	if err := set.text.ExecuteTemplate(&buf, "subject", data); err != nil {
		return Message{}, fmt.Errorf("mail: render %s subject (%s): %w", kind, lang, err)
	}
	// A subject is one header line; collapsing whitespace keeps user data
	// from adding line breaks to it.
	subject := strings.Join(strings.Fields(buf.String()), " ")

	buf.Reset()
	if err := set.text.ExecuteTemplate(&buf, "text", data); err != nil {
		return Message{}, fmt.Errorf("mail: render %s text (%s): %w", kind, lang, err)
	}
	text := tidyText(buf.String())

	buf.Reset()
	if err := set.html.ExecuteTemplate(&buf, "layout", htmlView{Lang: lang, Subject: subject, Data: data}); err != nil {
		return Message{}, fmt.Errorf("mail: render %s HTML (%s): %w", kind, lang, err)
	}

	return Message{
		Subject: subject,
		Text:    text,
		HTML:    buf.String(),
		Kind:    kind,
		Locale:  lang,
	}, nil
}

// tidyText removes the trailing spaces and extra blank lines that optional
// template sections leave behind, so the templates can stay readable.
func tidyText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		// "-- " is the signature separator (RFC 3676 §4.3); its trailing
		// space is what makes mail programs recognise it.
		if l != "-- " {
			lines[i] = strings.TrimRight(l, " \t")
		}
	}
	s = blankLines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.TrimSpace(s) + "\n"
}
