package secretbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/crypto/hkdf"
)

func newBox(t testing.TB) *Box {
	t.Helper()
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := newBox(t)
	for _, plain := range [][]byte{nil, []byte("JBSWY3DPEHPK3PXP"), bytes.Repeat([]byte{0xff}, 4096)} {
		sealed, err := b.Seal(plain, []byte("user-42"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1.") {
			t.Fatalf("sealed value %q lacks version prefix", sealed)
		}
		if len(plain) > 0 && strings.Contains(sealed, string(plain)) {
			t.Fatalf("sealed value contains plaintext")
		}
		got, err := b.Open(sealed, []byte("user-42"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, want %q", got, plain)
		}
	}
}

func TestSameKeyTwoBoxes(t *testing.T) {
	key, _ := GenerateKey()
	b1, _ := New(key)
	b2, _ := New(key)
	sealed, err := b1.Seal([]byte("secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b2.Open(sealed, nil)
	if err != nil || string(got) != "secret" {
		t.Fatalf("Open with a second Box of the same key = %q, %v", got, err)
	}
}

func TestTamperFails(t *testing.T) {
	b := newBox(t)
	sealed, err := b.Seal([]byte("secret"), []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(sealed, '.') + 1
	raw, err := base64.RawURLEncoding.DecodeString(sealed[i:])
	if err != nil {
		t.Fatal(err)
	}
	for pos := range raw {
		mod := bytes.Clone(raw)
		mod[pos] ^= 0x01
		tampered := sealed[:i] + base64.RawURLEncoding.EncodeToString(mod)
		if _, err := b.Open(tampered, []byte("ad")); !errors.Is(err, ErrAuth) {
			t.Fatalf("flipping byte %d: err = %v, want ErrAuth", pos, err)
		}
	}
	truncated := sealed[:i] + base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1])
	if _, err := b.Open(truncated, []byte("ad")); !errors.Is(err, ErrAuth) {
		t.Fatalf("truncated: err = %v, want ErrAuth", err)
	}
}

func TestWrongAssociatedDataFails(t *testing.T) {
	b := newBox(t)
	sealed, err := b.Seal([]byte("secret"), []byte("user-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ad := range [][]byte{[]byte("user-2"), nil, []byte("user-1 ")} {
		if _, err := b.Open(sealed, ad); !errors.Is(err, ErrAuth) {
			t.Fatalf("Open with AD %q: err = %v, want ErrAuth", ad, err)
		}
	}
}

func TestWrongKeyFails(t *testing.T) {
	sealed, err := newBox(t).Seal([]byte("secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newBox(t).Open(sealed, nil); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("err = %v, want ErrWrongKey", err)
	}
}

func TestBadFormat(t *testing.T) {
	b := newBox(t)
	sealed, _ := b.Seal([]byte("x"), nil)
	id := strings.Split(sealed, ".")[1]
	for _, in := range []string{
		"",
		"v1",
		"v2." + sealed[3:],
		"v1." + id,
		"v1.short." + strings.Split(sealed, ".")[2],
		"v1." + id + ".not base64!",
		"v1." + id + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 27)),
		"JBSWY3DPEHPK3PXP",
	} {
		if _, err := b.Open(in, nil); !errors.Is(err, ErrFormat) {
			t.Errorf("Open(%q): err = %v, want ErrFormat", in, err)
		}
	}
}

func TestNonceUniqueness(t *testing.T) {
	b := newBox(t)
	seen := map[string]bool{}
	for range 1000 {
		sealed, err := b.Seal([]byte("same"), []byte("same"))
		if err != nil {
			t.Fatal(err)
		}
		nonce := strings.Split(sealed, ".")[2][:16] // 12 bytes = 16 base64 characters
		if seen[nonce] {
			t.Fatalf("nonce %s repeated", nonce)
		}
		seen[nonce] = true
	}
}

func TestNewRejectsBadKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New with %d-byte key succeeded", n)
		}
	}
}

func TestMAC(t *testing.T) {
	key, _ := GenerateKey()
	b, _ := New(key)
	m := b.MAC([]byte("state"), []byte("client-1"))
	if len(m) != 32 {
		t.Fatalf("MAC length %d, want 32", len(m))
	}
	if !Equal(m, b.MAC([]byte("state"), []byte("client-1"))) {
		t.Fatal("MAC not deterministic")
	}
	if Equal(m, b.MAC([]byte("statec"), []byte("lient-1"))) {
		t.Fatal("moving bytes between parts gives the same MAC")
	}
	if Equal(m, b.MAC([]byte("state"), []byte("client-2"))) {
		t.Fatal("different data gives the same MAC")
	}
	if Equal(m, newBox(t).MAC([]byte("state"), []byte("client-1"))) {
		t.Fatal("different key gives the same MAC")
	}
	if b2, _ := New(key); !Equal(m, b2.MAC([]byte("state"), []byte("client-1"))) {
		t.Fatal("same key in a second Box gives a different MAC")
	}
	// The MAC is pinned to its documented construction: HMAC-SHA256 under
	// HKDF-SHA256(key, info "hmid mac") over length-prefixed parts. Values
	// signed by one release must verify in the next.
	sub := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, key, nil, []byte("hmid mac")), sub); err != nil {
		t.Fatal(err)
	}
	want := hmac.New(sha256.New, sub)
	want.Write([]byte{0, 0, 0, 0, 0, 0, 0, 5})
	want.Write([]byte("state"))
	want.Write([]byte{0, 0, 0, 0, 0, 0, 0, 8})
	want.Write([]byte("client-1"))
	if !Equal(m, want.Sum(nil)) {
		t.Fatal("MAC does not match HMAC-SHA256 under the HKDF subkey")
	}
}

func TestParseKey(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i*7 + 250) // includes bytes that differ between the std and URL alphabets
	}
	std := base64.StdEncoding.EncodeToString(key)
	url := base64.URLEncoding.EncodeToString(key)
	if std == url {
		t.Fatal("test key does not exercise the URL alphabet")
	}
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"base64 std", std, true},
		{"base64 std unpadded", strings.TrimRight(std, "="), true},
		{"base64 url", url, true},
		{"base64 url unpadded", strings.TrimRight(url, "="), true},
		{"hex lower", hex.EncodeToString(key), true},
		{"hex upper", strings.ToUpper(hex.EncodeToString(key)), true},
		{"trailing newline", std + "\n", true},
		{"empty", "", false},
		{"blank", "  \n", false},
		{"base64 16 bytes", base64.StdEncoding.EncodeToString(key[:16]), false},
		{"base64 33 bytes", base64.StdEncoding.EncodeToString(append(key, 1)), false},
		{"hex 31 bytes", hex.EncodeToString(key[:31]), false},
		{"garbage", "this is not a key!", false},
		{"hex with bad digit", "zz" + hex.EncodeToString(key)[2:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKey(tt.in)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseKey(%q) = %x, want error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tt.in, err)
			}
			if !bytes.Equal(got, key) {
				t.Fatalf("ParseKey(%q) = %x, want %x", tt.in, got, key)
			}
		})
	}
}

func TestGenerateAndEncodeKey(t *testing.T) {
	k1, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := GenerateKey()
	if len(k1) != KeySize || bytes.Equal(k1, k2) {
		t.Fatalf("GenerateKey: len %d, repeated %v", len(k1), bytes.Equal(k1, k2))
	}
	back, err := ParseKey(EncodeKey(k1))
	if err != nil || !bytes.Equal(back, k1) {
		t.Fatalf("ParseKey(EncodeKey(k)) = %x, %v", back, err)
	}
}

func FuzzOpen(f *testing.F) {
	b := newBox(f)
	sealed, _ := b.Seal([]byte("seed"), []byte("ad"))
	f.Add(sealed, []byte("ad"))
	f.Add("v1..", []byte(nil))
	f.Add("v1.00000000.AAAA", []byte("x"))
	f.Add("", []byte(nil))
	f.Fuzz(func(t *testing.T, in string, ad []byte) {
		plain, err := b.Open(in, ad)
		if err != nil {
			if plain != nil {
				t.Fatal("plaintext returned with an error")
			}
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrAuth) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Anything that opens must be exactly what was sealed: only the seed does.
		if in != sealed || string(ad) != "ad" || string(plain) != "seed" {
			t.Fatalf("Open(%q, %q) = %q succeeded unexpectedly", in, ad, plain)
		}
	})
}
