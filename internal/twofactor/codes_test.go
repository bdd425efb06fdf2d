package twofactor

import (
	"regexp"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"hmid/internal/password"
	"hmid/internal/secretbox"
)

// The RFC 6238 Appendix B test secret ("12345678901234567890" in ASCII),
// base32-encoded, and its SHA1 test vectors truncated to 6 digits.
const rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

func TestMatchTOTPVectors(t *testing.T) {
	for _, tc := range []struct {
		unix int64
		code string
	}{
		{59, "287082"},
		{1111111109, "081804"},
		{1111111111, "050471"},
		{1234567890, "005924"},
		{2000000000, "279037"},
	} {
		at := time.Unix(tc.unix, 0)
		stp, ok := matchTOTP(tc.code, rfcSecret, at)
		if !ok || stp != tc.unix/30 {
			t.Errorf("T=%d: matchTOTP(%s) = %d, %v; want step %d", tc.unix, tc.code, stp, ok, tc.unix/30)
		}
	}
}

func TestMatchTOTPSkew(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 15, 0, time.UTC)
	for _, off := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		code, err := totp.GenerateCodeCustom(rfcSecret, now.Add(off), totpOpts)
		if err != nil {
			t.Fatal(err)
		}
		stp, ok := matchTOTP(code, rfcSecret, now)
		if !ok || stp != step(now.Add(off)) {
			t.Errorf("offset %v: step %d, %v", off, stp, ok)
		}
	}
	for _, off := range []time.Duration{-90 * time.Second, 90 * time.Second} {
		code, _ := totp.GenerateCodeCustom(rfcSecret, now.Add(off), totpOpts)
		if _, ok := matchTOTP(code, rfcSecret, now); ok {
			t.Errorf("offset %v accepted (two steps of skew)", off)
		}
	}
	if _, ok := matchTOTP("12345", rfcSecret, now); ok {
		t.Error("5-digit code accepted")
	}
}

func TestIsTOTP(t *testing.T) {
	for code, want := range map[string]bool{"123456": true, "000000": true, "12345": false, "1234567": false, "12345a": false, "١٢٣٤٥٦": false, "": false} {
		if got := isTOTP(code); got != want {
			t.Errorf("isTOTP(%q) = %v", code, got)
		}
	}
}

var displayShape = regexp.MustCompile(`^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$`)

func TestBackupCodes(t *testing.T) {
	box, err := secretbox.New(make([]byte, secretbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Box: box}
	codes, rows, err := s.newBackupCodes("user-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != BackupCodeCount || len(rows) != BackupCodeCount {
		t.Fatalf("%d codes, %d rows", len(codes), len(rows))
	}
	seen := map[string]bool{}
	for i, c := range codes {
		if !displayShape.MatchString(c) || seen[c] {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
		canon, ok := normalizeBackup(c)
		if !ok || len(canon) != backupLen {
			t.Fatalf("normalize(%q) = %q, %v", c, canon, ok)
		}
		if ok, err := password.Verify(canon, rows[i].hash); !ok || err != nil {
			t.Fatalf("hash %d does not verify: %v", i, err)
		}
		// The tag is 4 hex digits, bound to the user and the canonical code.
		if tag := rows[i].tag; len(tag) != 4 || tag != s.lookupTag("user-1", canon) || tag == s.lookupTag("user-2", canon) && tag == s.lookupTag("user-3", canon) {
			t.Fatalf("lookup tag %q", tag)
		}
	}
	for in, want := range map[string]string{
		"abcd-efgh-2345":   "abcdefgh2345",
		"ABCDEFGH2345":     "abcdefgh2345",
		" abcd efgh 2345 ": "abcdefgh2345",
		"Abcd-Efgh2345":    "abcdefgh2345",
		"abcd-efgh-2341":   "", // 1 is not in the base32 alphabet
		"abcd-efgh-234":    "",
		"abcd-efgh-23456":  "",
		"":                 "",
	} {
		got, ok := normalizeBackup(in)
		if got != want || ok != (want != "") {
			t.Errorf("normalizeBackup(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func FuzzNormalizeBackup(f *testing.F) {
	for _, s := range []string{"abcd-efgh-2345", "ABCDEFGH2345", "123456", "", "----", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := normalizeBackup(in)
		if ok {
			again, ok2 := normalizeBackup(got)
			if !ok2 || again != got || len(got) != backupLen {
				t.Fatalf("normalizeBackup(%q) = %q is not canonical", in, got)
			}
		} else if got != "" {
			t.Fatalf("rejected input gave %q", got)
		}
		_ = isTOTP(in)
	})
}
