package web

import (
	"strings"
	"testing"
	"time"

	"hmid/internal/audit"
	"hmid/internal/auth"
	"hmid/internal/password"
)

func TestEventTitle(t *testing.T) {
	en, de := Translator("en"), Translator("de")
	for _, c := range []struct {
		t                 func(string) string
		typ, status, want string
	}{
		{en, audit.TwoFAVerified, audit.StatusSuccess, "Second factor confirmed"},
		{en, audit.TwoFAVerified, audit.StatusFailure, "Second factor rejected"},
		{de, audit.TwoFAVerified, audit.StatusFailure, "Zweiter Faktor abgelehnt"},
		{en, audit.TwoFABackupCodeUsed, audit.StatusSuccess, "Backup code used"},
		{en, audit.TwoFABackupCodeUsed, audit.StatusFailure, "Backup code rejected"},
		{en, audit.Login, audit.StatusFailure, EventText(en, audit.Login)}, // no failure title of its own
	} {
		if got := EventTitle(c.t, c.typ, c.status); got != c.want {
			t.Errorf("EventTitle(%s, %s) = %q, want %q", c.typ, c.status, got, c.want)
		}
	}
}

func TestBanText(t *testing.T) {
	until := time.Date(2026, 11, 29, 3, 38, 1, 0, time.UTC)
	if got := BanText("de", &auth.Ban{Reason: "Spam", Until: &until}); got != "Ihr Konto ist bis 29.11.2026, 03:38 UTC gesperrt. Angegebener Grund: Spam" {
		t.Errorf("de: %q", got)
	}
	if got := BanText("en", &auth.Ban{}); got != "Your account is blocked permanently." {
		t.Errorf("en permanent: %q", got)
	}
}

func TestPasswordProblem(t *testing.T) {
	rules := password.Rules{MinLength: 10, RefuseCommon: true}
	if got := PasswordProblem("de", rules.Check("12345678901"), rules); !strings.Contains(got, "häufigsten") {
		t.Errorf("common: %q", got)
	}
	if got := PasswordProblem("en", rules.Check("short"), rules); got != "The password is too short. Use at least 10 characters." {
		t.Errorf("short: %q", got)
	}
	if got := PasswordProblem("en", nil, rules); got != "" {
		t.Errorf("nil: %q", got)
	}
	h := NewPasswordHint("en", rules)
	if h.Min != 10 || !strings.Contains(h.Help, "At least 10 characters.") || !strings.Contains(h.Help, "Common passwords") {
		t.Errorf("hint: %+v", h)
	}
	if h := NewPasswordHint("en", password.Rules{MinLength: 8}); strings.Contains(h.Help, "Common") {
		t.Errorf("hint without the list: %+v", h)
	}
}
