package mail

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	eventTime = time.Date(2026, time.March, 5, 14, 7, 0, 0, time.UTC)
	expiry    = time.Date(2026, time.March, 6, 14, 7, 0, 0, time.UTC)
)

// fullData fills every field, so each kind finds what it needs.
func fullData() Data {
	return Data{
		Name:            "Anna",
		PlatformName:    "Discord",
		Time:            eventTime,
		ReportID:        "rep-42",
		Status:          "resolved",
		ResolutionNotes: "We blocked the address.",
		NewEmail:        "new@example.org",
		Email:           "link@example.org",
		Link:            "https://id.example.org/verify?token=tok123",
		Token:           "tok123",
		ExpiresAt:       expiry,
		PasskeyName:     "Anna's phone",
	}
}

func TestRenderEveryKindAndLocale(t *testing.T) {
	type want struct {
		subject string
		text    []string // in the plain-text body
		html    []string // in the HTML body
	}
	tests := []struct {
		kind string
		en   want
		de   want
	}{
		{
			kind: KindTwoFactorEnabled,
			en: want{
				subject: "Two-factor authentication enabled",
				text:    []string{"enabled for your account on Discord on 5 March 2026 14:07 UTC"},
				html:    []string{"<strong>Discord</strong> on 5 March 2026 14:07 UTC"},
			},
			de: want{
				subject: "Zwei-Faktor-Authentifizierung aktiviert",
				text:    []string{"am 5. März 2026 14:07 UTC die Zwei-Faktor-Authentifizierung auf Discord aktiviert"},
				html:    []string{"<strong>Discord</strong> aktiviert"},
			},
		},
		{
			kind: KindTwoFactorDisabled,
			en: want{
				subject: "Two-factor authentication was disabled",
				text:    []string{"disabled for your account on Discord on 5 March 2026 14:07 UTC", "If this was not you, secure your account now"},
				html:    []string{"If this was not you, secure your account now"},
			},
			de: want{
				subject: "Zwei-Faktor-Authentifizierung wurde deaktiviert",
				text:    []string{"am 5. März 2026 14:07 UTC", "Falls Sie das nicht waren, sichern Sie Ihr Konto sofort"},
				html:    []string{"Falls Sie das nicht waren, sichern Sie Ihr Konto sofort"},
			},
		},
		{
			kind: KindTwoFactorReset,
			en: want{
				subject: "An administrator reset your two-factor authentication",
				text:    []string{"turned off two-factor authentication for your account on Discord on 5 March 2026 14:07 UTC", "If you did not ask for this"},
				html:    []string{"<strong>Discord</strong> on 5 March 2026 14:07 UTC", "If you did not ask for this,"},
			},
			de: want{
				subject: "Ihre Zwei-Faktor-Authentifizierung wurde von einem Administrator zurückgesetzt",
				text:    []string{"am 5. März 2026 14:07 UTC die Zwei-Faktor-Authentifizierung auf Discord", "Falls Sie das nicht veranlasst haben"},
				html:    []string{"<strong>Discord</strong> für Ihr Konto", "Falls Sie das nicht veranlasst haben,"},
			},
		},
		{
			kind: KindBackupCodesRegenerated,
			en: want{
				subject: "New backup codes were generated",
				text:    []string{"on 5 March 2026 14:07 UTC", "Your old backup codes are no longer valid"},
				html:    []string{"Your old backup codes are no longer valid"},
			},
			de: want{
				subject: "Neue Backup-Codes wurden erstellt",
				text:    []string{"am 5. März 2026 14:07 UTC", "Ihre bisherigen Backup-Codes sind nicht mehr gültig"},
				html:    []string{"Ihre bisherigen Backup-Codes sind nicht mehr gültig"},
			},
		},
		{
			kind: KindAuditReportStatusChanged,
			en: want{
				subject: "Update on your security report",
				text:    []string{"report rep-42", `changed to "resolved" on 5 March 2026 14:07 UTC`, "We blocked the address."},
				html:    []string{"rep-42", "<strong>resolved</strong>", "We blocked the address."},
			},
			de: want{
				subject: "Neuigkeiten zu Ihrer Sicherheitsmeldung",
				text:    []string{"Meldung rep-42", "am 5. März 2026 14:07 UTC auf „gelöst“ geändert", "We blocked the address."},
				html:    []string{"rep-42", "<strong>gelöst</strong>", "We blocked the address."},
			},
		},
		{
			kind: KindEmailChangeVerify,
			en: want{
				subject: "Confirm your new email address",
				text:    []string{"to new@example.org", "https://id.example.org/verify?token=tok123", "Or enter this code: tok123", "valid for 24 hours, until 6 March 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, ">tok123</code>", "Confirm email address"},
			},
			de: want{
				subject: "Bestätigen Sie Ihre neue E-Mail-Adresse",
				text:    []string{"in new@example.org ändern", "https://id.example.org/verify?token=tok123", "Oder geben Sie diesen Code ein: tok123", "24 Stunden gültig, bis zum 6. März 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, ">tok123</code>", "E-Mail-Adresse bestätigen"},
			},
		},
		{
			kind: KindEmailLinkVerify,
			en: want{
				subject: "Confirm your email address for signing in",
				text:    []string{"link link@example.org to your account", "https://id.example.org/verify?token=tok123", "tok123", "valid until 6 March 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, ">tok123</code>"},
			},
			de: want{
				subject: "Bestätigen Sie Ihre E-Mail-Adresse für die Anmeldung",
				text:    []string{"link@example.org mit Ihrem Konto verknüpfen", "https://id.example.org/verify?token=tok123", "tok123", "gültig bis zum 6. März 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, ">tok123</code>"},
			},
		},
		{
			kind: KindEmailVerify,
			en: want{
				subject: "Confirm your email address",
				text:    []string{"created an account with the email address link@example.org", "https://id.example.org/verify?token=tok123", "Or enter this code: tok123", "valid for 24 hours, until 6 March 2026 14:07 UTC"},
				html:    []string{"<strong>link@example.org</strong>", `href="https://id.example.org/verify?token=tok123"`, ">tok123</code>", "Confirm email address"},
			},
			de: want{
				subject: "Bestätigen Sie Ihre E-Mail-Adresse",
				text:    []string{"Konto mit der E-Mail-Adresse link@example.org erstellt", "https://id.example.org/verify?token=tok123", "Oder geben Sie diesen Code ein: tok123", "24 Stunden gültig, bis zum 6. März 2026 14:07 UTC"},
				html:    []string{"<strong>link@example.org</strong>", `href="https://id.example.org/verify?token=tok123"`, ">tok123</code>", "E-Mail-Adresse bestätigen"},
			},
		},
		{
			kind: KindPasswordReset,
			en: want{
				subject: "Reset your password",
				text:    []string{"reset the password", "https://id.example.org/verify?token=tok123", "tok123", "valid until 6 March 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, "Choose a new password"},
			},
			de: want{
				subject: "Setzen Sie Ihr Passwort zurück",
				text:    []string{"Passwort Ihres Kontos zurückzusetzen", "https://id.example.org/verify?token=tok123", "tok123", "gültig bis zum 6. März 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, "Neues Passwort wählen"},
			},
		},
		{
			kind: KindInvitation,
			en: want{
				subject: "You have an account: choose your password",
				text:    []string{"account with the email address link@example.org", "https://id.example.org/verify?token=tok123", "tok123", "valid until 6 March 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, "Choose your password"},
			},
			de: want{
				subject: "Sie haben ein Konto: Wählen Sie Ihr Passwort",
				text:    []string{"Konto mit der E-Mail-Adresse link@example.org", "https://id.example.org/verify?token=tok123", "tok123", "gültig bis zum 6. März 2026 14:07 UTC"},
				html:    []string{`href="https://id.example.org/verify?token=tok123"`, "Passwort wählen"},
			},
		},
		{
			kind: KindPasswordChanged,
			en: want{
				subject: "Your password was changed",
				text:    []string{"changed on 5 March 2026 14:07 UTC", "Every other device and browser", "If this was not you, choose a new password right away:\nhttps://id.example.org/verify?token=tok123\n"},
				html:    []string{"If this was not you, secure your account now", `href="https://id.example.org/verify?token=tok123"`},
			},
			de: want{
				subject: "Ihr Passwort wurde geändert",
				text:    []string{"am 5. März 2026 14:07 UTC geändert", "Falls Sie das nicht waren, wählen Sie sofort ein neues Passwort:\nhttps://id.example.org/verify?token=tok123\n"},
				html:    []string{"Falls Sie das nicht waren, sichern Sie Ihr Konto sofort", `href="https://id.example.org/verify?token=tok123"`},
			},
		},
		{
			kind: KindPasskeyAdded,
			en: want{
				subject: "A passkey was added to your account",
				text:    []string{`The passkey "Anna's phone" was added to your account on 5 March 2026 14:07 UTC`},
				html:    []string{"<strong>Anna&#39;s phone</strong> was added"},
			},
			de: want{
				subject: "Ein Passkey wurde zu Ihrem Konto hinzugefügt",
				text:    []string{"der Passkey „Anna's phone“ wurde am 5. März 2026 14:07 UTC zu Ihrem Konto hinzugefügt"},
				html:    []string{"<strong>Anna&#39;s phone</strong> wurde am 5. März 2026 14:07 UTC"},
			},
		},
		{
			kind: KindPasskeyRemoved,
			en: want{
				subject: "A passkey was removed from your account",
				text:    []string{`The passkey "Anna's phone" was removed from your account on 5 March 2026 14:07 UTC`},
				html:    []string{"<strong>Anna&#39;s phone</strong> was removed"},
			},
			de: want{
				subject: "Ein Passkey wurde aus Ihrem Konto entfernt",
				text:    []string{"der Passkey „Anna's phone“ wurde am 5. März 2026 14:07 UTC aus Ihrem Konto entfernt"},
				html:    []string{"<strong>Anna&#39;s phone</strong> wurde am 5. März 2026 14:07 UTC"},
			},
		},
		{
			kind: KindAddressVerifiedElsewhere,
			en: want{
				subject: "Your email address was confirmed by a Discord sign-in",
				text:    []string{"On 5 March 2026 14:07 UTC someone signed in with Discord", "address link@example.org belongs to them", "It keeps working"},
				html:    []string{"<strong>link@example.org</strong> belongs to them", "It keeps working"},
			},
			de: want{
				subject: "Ihre E-Mail-Adresse wurde bei einer Anmeldung mit Discord bestätigt",
				text:    []string{"am 5. März 2026 14:07 UTC hat sich jemand mit Discord angemeldet", "Es funktioniert weiter"},
				html:    []string{"<strong>link@example.org</strong> zu diesem Konto gehört", "Es funktioniert weiter"},
			},
		},
	}
	if len(tests) != len(kinds) {
		t.Fatalf("test covers %d kinds, package has %d", len(tests), len(kinds))
	}

	for _, tt := range tests {
		for _, loc := range []struct {
			locale   string
			want     want
			greeting string
			footer   string
		}{
			{"en", tt.en, "Hello Anna,", "Please do not reply to it."},
			{"de", tt.de, "Hallo Anna,", "Bitte antworten Sie nicht darauf."},
		} {
			t.Run(tt.kind+"/"+loc.locale, func(t *testing.T) {
				m, err := Render(tt.kind, loc.locale, fullData())
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if m.Kind != tt.kind || m.Locale != loc.locale || m.To != "" {
					t.Errorf("Kind, Locale, To = %q, %q, %q; want %q, %q, empty", m.Kind, m.Locale, m.To, tt.kind, loc.locale)
				}
				if m.Subject != loc.want.subject {
					t.Errorf("Subject = %q, want %q", m.Subject, loc.want.subject)
				}
				if !strings.HasPrefix(m.Text, loc.greeting+"\n\n") {
					t.Errorf("Text does not start with %q:\n%s", loc.greeting, m.Text)
				}
				if !strings.Contains(m.Text, "\n-- \n") {
					t.Errorf("Text has no signature separator:\n%s", m.Text)
				}
				if !strings.Contains(m.Text, loc.footer) {
					t.Errorf("Text lacks footer %q", loc.footer)
				}
				for _, s := range loc.want.text {
					if !strings.Contains(m.Text, s) {
						t.Errorf("Text lacks %q:\n%s", s, m.Text)
					}
				}
				if strings.Contains(m.Text, "\n\n\n") || strings.Contains(m.Text, " \n\n") {
					t.Errorf("Text has stray blank lines or trailing spaces:\n%q", m.Text)
				}
				for _, s := range append([]string{
					`<html lang="` + loc.locale + `">`,
					"<title>" + loc.want.subject + "</title>",
					loc.greeting + "</p>",
					loc.footer + "</p>",
				}, loc.want.html...) {
					if !strings.Contains(m.HTML, s) {
						t.Errorf("HTML lacks %q:\n%s", s, m.HTML)
					}
				}
				if strings.Contains(m.HTML, "<img") {
					t.Error("HTML contains an image")
				}
			})
		}
	}
}

func TestRenderLocaleMatching(t *testing.T) {
	tests := []struct{ in, want, subject string }{
		{"de", "de", "Setzen Sie Ihr Passwort zurück"},
		{"de-DE", "de", "Setzen Sie Ihr Passwort zurück"},
		{"de_AT", "de", "Setzen Sie Ihr Passwort zurück"},
		{"DE", "de", "Setzen Sie Ihr Passwort zurück"},
		{"en-GB", "en", "Reset your password"},
		{"fr", "en", "Reset your password"},
		{"", "en", "Reset your password"},
	}
	for _, tt := range tests {
		m, err := Render(KindPasswordReset, tt.in, fullData())
		if err != nil {
			t.Fatalf("Render(%q): %v", tt.in, err)
		}
		if m.Locale != tt.want || m.Subject != tt.subject {
			t.Errorf("Render(%q): Locale %q, Subject %q; want %q, %q", tt.in, m.Locale, m.Subject, tt.want, tt.subject)
		}
	}
}

func TestRenderUnknownKind(t *testing.T) {
	_, err := Render("welcome", "en", fullData())
	if err == nil || !strings.Contains(err.Error(), `unknown kind "welcome"`) {
		t.Fatalf("err = %v, want unknown kind", err)
	}
}

func TestRenderRejectsMissingTime(t *testing.T) {
	d := fullData()
	d.ExpiresAt = time.Time{}
	_, err := Render(KindEmailChangeVerify, "de", d)
	if !errors.Is(err, errZeroTime) {
		t.Fatalf("err = %v, want errZeroTime", err)
	}
	d = fullData()
	d.Time = time.Time{}
	if _, err := Render(KindTwoFactorEnabled, "en", &d); !errors.Is(err, errZeroTime) {
		t.Fatalf("err = %v, want errZeroTime", err)
	}
}

func TestRenderRejectsDataWithoutFields(t *testing.T) {
	if _, err := Render(KindPasswordReset, "en", struct{ Name string }{"Anna"}); err == nil {
		t.Fatal("Render with data lacking Link, Token and ExpiresAt succeeded")
	}
}

func TestRenderOptionalParts(t *testing.T) {
	d := fullData()
	d.Name = ""
	d.Link = ""
	d.ResolutionNotes = ""
	m, err := Render(KindEmailLinkVerify, "en", d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Text, "Hello,\n") {
		t.Errorf("greeting without name: %q", m.Text)
	}
	if !strings.Contains(m.Text, "To confirm, enter this code: tok123") || strings.Contains(m.Text, "Or enter") {
		t.Errorf("token-only text wrong:\n%s", m.Text)
	}
	if strings.Contains(m.HTML, "<a ") {
		t.Errorf("HTML has a link although Link is empty:\n%s", m.HTML)
	}

	m, err = Render(KindAuditReportStatusChanged, "de", d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Text, "Anmerkungen") || strings.Contains(m.HTML, "Anmerkungen") {
		t.Errorf("notes section shown without notes:\n%s", m.Text)
	}
}

func TestRenderUnknownStatusShownAsIs(t *testing.T) {
	d := fullData()
	d.Status = "escalated"
	m, err := Render(KindAuditReportStatusChanged, "de", d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "„escalated“") {
		t.Errorf("Text = %s", m.Text)
	}
}

func TestRenderEscapesHTMLOnly(t *testing.T) {
	d := fullData()
	d.Name = `<script>alert("x")</script>`
	d.Link = "javascript:alert(1)"
	m, err := Render(KindPasswordReset, "en", d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.HTML, "<script>") || !strings.Contains(m.HTML, "&lt;script&gt;") {
		t.Errorf("name not escaped in HTML:\n%s", m.HTML)
	}
	if strings.Contains(m.HTML, `href="javascript:`) {
		t.Errorf("unsafe link kept in HTML:\n%s", m.HTML)
	}
	if !strings.Contains(m.Text, `Hello <script>alert("x")</script>,`) {
		t.Errorf("plain text must not be HTML-escaped:\n%s", m.Text)
	}
}

func TestFormatTime(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	in := time.Date(2026, time.December, 31, 23, 30, 0, 0, berlin) // 22:30 UTC
	if got, _ := locales["en"].formatTime(in); got != "31 December 2026 22:30 UTC" {
		t.Errorf("en: %q", got)
	}
	if got, _ := locales["de"].formatTime(in); got != "31. Dezember 2026 22:30 UTC" {
		t.Errorf("de: %q", got)
	}
	if got, _ := locales["de"].formatTime(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)); got != "2. Januar 2026 03:04 UTC" {
		t.Errorf("de: %q", got)
	}
}

func TestLocalesHaveTemplates(t *testing.T) {
	langs := slices.Sorted(maps.Keys(locales))
	for _, l := range langs {
		for _, k := range kinds {
			if _, ok := templates[l][k]; !ok {
				t.Errorf("no %s template for %s", l, k)
			}
		}
	}
	if !slices.Equal(langs, []string{"de", "en"}) {
		t.Errorf("locales = %v, want [de en]", langs)
	}
}
