package passkey

import (
	"strings"
	"testing"
)

func TestAMR(t *testing.T) {
	for _, c := range []struct {
		synced, uv bool
		want       string
	}{
		{false, true, "hwk user mfa"},
		{true, true, "swk user mfa"},
		{false, false, "hwk user"},
		{true, false, "swk user"},
	} {
		if got := strings.Join(AMR(c.synced, c.uv), " "); got != c.want {
			t.Errorf("AMR(%v, %v) = %s, want %s", c.synced, c.uv, got, c.want)
		}
	}
}

func TestDefaultName(t *testing.T) {
	for _, c := range []struct {
		aaguid     string
		transports []string
		want       string
	}{
		{"fbfc3007-154e-4ecc-8c0b-6e020557d7bd", []string{"internal", "hybrid"}, "iCloud Keychain"},
		{"00000000-0000-0000-0000-000000000000", []string{"usb", "nfc"}, "Security key"},
		{"00000000-0000-0000-0000-000000000000", []string{"internal"}, "Passkey"},
		{"00000000-0000-0000-0000-000000000000", []string{"usb", "hybrid"}, "Passkey"},
		{"00000000-0000-0000-0000-000000000000", nil, "Passkey"},
	} {
		if got := DefaultName(c.aaguid, c.transports); got != c.want {
			t.Errorf("DefaultName(%s, %v) = %s, want %s", c.aaguid, c.transports, got, c.want)
		}
	}
}

func TestCleanName(t *testing.T) {
	if got, err := cleanName("  Work \t laptop  "); err != nil || got != "Work laptop" {
		t.Errorf("cleanName = %q, %v", got, err)
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxName+1), "a\x00b", "a\x7fb"} {
		if _, err := cleanName(bad); err == nil {
			t.Errorf("cleanName(%q) accepted", bad)
		}
	}
}

func TestCountsAsSecondFactor(t *testing.T) {
	if !countsAsSecondFactor(1, 1, false) || countsAsSecondFactor(1, 1, true) || !countsAsSecondFactor(2, 1, true) || countsAsSecondFactor(0, 0, false) {
		t.Error("countsAsSecondFactor")
	}
}

func TestNewRefusesAnIPAddress(t *testing.T) {
	s, err := New(Service{}, "http://127.0.0.1:8080")
	if err != nil || s.Available() {
		t.Fatalf("IP relying party: %v, available %v", err, s != nil && s.Available())
	}
	s, err = New(Service{}, "https://id.example.org:8443/base")
	if err != nil || !s.Available() || s.RPID() != "id.example.org" || s.Origin() != "https://id.example.org:8443" {
		t.Fatalf("relying party: %v %+v", err, s)
	}
}
