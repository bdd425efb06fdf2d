package geoip_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"hmid/internal/geoip"
	"hmid/internal/geoip/geoiptest"
)

var (
	london = geoip.Location{CountryCode: "GB", CountryName: "United Kingdom", City: "London", Region: "England"}
	berlin = geoip.Location{CountryCode: "DE", CountryName: "Germany", City: "Berlin", Region: "Land Berlin"}
	france = geoip.Location{CountryCode: "FR", CountryName: "France"}
)

func openTestDB(t *testing.T) *geoip.Resolver {
	t.Helper()
	path := filepath.Join(t.TempDir(), "city.mmdb")
	err := geoiptest.WriteDB(path, []geoiptest.Entry{
		{CIDR: "81.2.69.0/24", Location: london},
		{CIDR: "2a02:8100::/32", Location: berlin},
		{CIDR: "203.0.113.0/24", Location: france},
		// Present in the file but must never be resolved: private space.
		{CIDR: "10.0.0.0/8", Location: london},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := geoip.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestLookupHits(t *testing.T) {
	r := openTestDB(t)
	tests := []struct {
		ip   string
		want geoip.Location
	}{
		{"81.2.69.142", london},
		{"81.2.69.0", london},
		{"81.2.69.255", london},
		{" 81.2.69.142\n", london},
		{"81.2.69.142:51234", london},
		{"::ffff:81.2.69.142", london},
		{"2a02:8100::1", berlin},
		{"2a02:8100:ffff::abcd", berlin},
		{"[2a02:8100::1]:443", berlin},
		{"203.0.113.9", france},
	}
	for _, tt := range tests {
		if got := r.Lookup(tt.ip); got != tt.want {
			t.Errorf("Lookup(%q) = %+v, want %+v", tt.ip, got, tt.want)
		}
	}
}

func TestLookupZero(t *testing.T) {
	r := openTestDB(t)
	for _, ip := range []string{
		// misses
		"81.2.70.1", "8.8.8.8", "2a02:8101::1", "2606:4700::1111",
		// private, loopback, link-local, CGNAT, multicast, unspecified
		"10.1.2.3", "192.168.1.1", "172.16.0.1", "127.0.0.1", "::1", "fe80::1%eth0",
		"169.254.1.1", "100.64.1.1", "224.0.0.1", "0.0.0.0", "::", "fd00::1",
		// garbage
		"", "not an ip", "999.1.1.1", "81.2.69", "81.2.69.0/24", "81.2.69.142:port", "[::1",
	} {
		if got := r.Lookup(ip); !got.IsZero() {
			t.Errorf("Lookup(%q) = %+v, want zero", ip, got)
		}
	}
}

func TestNilResolver(t *testing.T) {
	var r *geoip.Resolver
	if got := r.Lookup("81.2.69.142"); !got.IsZero() {
		t.Fatalf("nil Lookup = %+v", got)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("nil Close = %v", err)
	}
}

func TestClosedResolver(t *testing.T) {
	r := openTestDB(t)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if got := r.Lookup("81.2.69.142"); !got.IsZero() {
		t.Fatalf("Lookup after Close = %+v", got)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := geoip.Open(filepath.Join(dir, "missing.mmdb")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	garbage := filepath.Join(dir, "garbage.mmdb")
	if err := os.WriteFile(garbage, []byte("this is not a MaxMind database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := geoip.Open(garbage); err == nil {
		t.Error("Open of a non-mmdb file succeeded")
	}
}

// A network with only registered_country (no observed country) still gets a
// country, as in GeoLite2 for anycast blocks.
func TestRegisteredCountryFallback(t *testing.T) {
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	_, network, _ := net.ParseCIDR("81.2.69.0/24")
	err = tree.Insert(network, mmdbtype.Map{"registered_country": mmdbtype.Map{
		"iso_code": mmdbtype.String("US"),
		"names":    mmdbtype.Map{"en": mmdbtype.String("United States"), "de": mmdbtype.String("USA")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reg.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := geoip.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := geoip.Location{CountryCode: "US", CountryName: "United States"}
	if got := r.Lookup("81.2.69.1"); got != want {
		t.Fatalf("Lookup = %+v, want %+v", got, want)
	}
}

func TestWriteDBRejectsBadCIDR(t *testing.T) {
	err := geoiptest.WriteDB(filepath.Join(t.TempDir(), "x.mmdb"), []geoiptest.Entry{{CIDR: "81.2.69.1"}})
	if err == nil {
		t.Fatal("WriteDB accepted an address without prefix length")
	}
}

func TestLocationJSON(t *testing.T) {
	b, err := json.Marshal(london)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"country_code":"GB","country_name":"United Kingdom","city":"London","region":"England"}`
	if string(b) != want {
		t.Fatalf("JSON = %s, want %s", b, want)
	}
}

func TestConcurrentLookupAndClose(t *testing.T) {
	r := openTestDB(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				if got := r.Lookup("81.2.69.142"); got != london && !got.IsZero() {
					t.Errorf("Lookup = %+v", got)
					return
				}
			}
		})
	}
	wg.Go(func() { r.Close() })
	wg.Wait()
	if got := r.Lookup("81.2.69.142"); !got.IsZero() {
		t.Fatalf("Lookup after Close = %+v", got)
	}
}
