package archive_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"hmid/internal/export/archive"
)

func TestMaskIP(t *testing.T) {
	tests := []struct{ in, want string }{
		{"203.0.113.57", "203.0.113.xxx"},
		{"10.0.0.1", "10.0.0.xxx"},
		{"255.255.255.255", "255.255.255.xxx"},
		{"0.0.0.0", "0.0.0.xxx"},
		{"203.0.113.57:443", "203.0.113.xxx"},
		{"2001:db8:85a3::8a2e:370:7334", "2001:db8:85a3:xxxx::"},
		{"2001:0DB8:85A3:0000:0000:8A2E:0370:7334", "2001:db8:85a3:xxxx::"},
		{"2001:db8::1", "2001:db8:0:xxxx::"},
		{"::1", "0:0:0:xxxx::"},
		{"fe80::1%eth0", "fe80:0:0:xxxx::"},
		{"[2001:db8:85a3::1]:8080", "2001:db8:85a3:xxxx::"},
		{"::ffff:198.51.100.23", "198.51.100.xxx"},
		{"", ""},
		{"unknown", ""},
		{"203.0.113", ""},
		{"203.0.113.256", ""},
		{"203.0.113.057", ""},
		{" 203.0.113.57", ""},
		{"203.0.113.57, 10.0.0.1", ""},
		{"2001:db8:::1", ""},
		{"203.0.113.xxx", ""},
	}
	for _, tt := range tests {
		if got := archive.MaskIP(tt.in); got != tt.want {
			t.Errorf("MaskIP(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzMaskIP(f *testing.F) {
	for _, seed := range []string{"203.0.113.57", "1.2.3.4:80", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1%en0", "[::1]:1", "", "x.y.z.w", "1.2.3.4.5"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := archive.MaskIP(in)
		if out == "" {
			return
		}
		addr, err := netip.ParseAddr(in)
		if err != nil {
			ap, perr := netip.ParseAddrPort(in)
			if perr != nil {
				t.Fatalf("MaskIP(%q) = %q for a value that is not an address", in, out)
			}
			addr = ap.Addr()
		}
		addr = addr.Unmap()
		if addr.Is4() {
			b := addr.As4()
			last := strconv.Itoa(int(b[3]))
			want := strconv.Itoa(int(b[0])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[2])) + ".xxx"
			if out != want || strings.HasSuffix(out, "."+last) {
				t.Fatalf("MaskIP(%q) = %q, want %q (last octet hidden)", in, out, want)
			}
			if strings.Contains(out, addr.String()) {
				t.Fatalf("MaskIP(%q) = %q contains the address", in, out)
			}
			return
		}
		groups := strings.Split(strings.TrimSuffix(out, ":xxxx::"), ":")
		if !strings.HasSuffix(out, ":xxxx::") || len(groups) != 3 {
			t.Fatalf("MaskIP(%q) = %q, want three groups and :xxxx::", in, out)
		}
		b := addr.As16()
		for i, g := range groups {
			if want := strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16); g != want {
				t.Fatalf("MaskIP(%q) = %q, group %d = %q, want %q", in, out, i, g, want)
			}
		}
	})
}
