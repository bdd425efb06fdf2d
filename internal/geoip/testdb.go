package geoip

import (
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// TestEntry maps a network in CIDR notation (e.g. "81.2.69.0/24" or
// "2a02:c7f::/32") to the location WriteTestDB records for it.
type TestEntry struct {
	CIDR string
	Location
}

// WriteTestDB writes a small GeoLite2-City-shaped database to path, for tests
// (of this and other packages) that need a real mmdb file to pass to Open.
// Empty Location fields are left out of the record, as in the real database.
//
// Reserved ranges such as the documentation networks 192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 are allowed, so tests can
// use addresses that never belong to anyone. Private ranges can be written but
// Lookup never resolves them.
func WriteTestDB(path string, entries []TestEntry) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "GeoLite2-City",
		Description:             map[string]string{"en": "hmid test database"},
		Languages:               []string{"en"},
		IncludeReservedNetworks: true,
		RecordSize:              24,
	})
	if err != nil {
		return fmt.Errorf("geoip: new test db: %w", err)
	}
	for _, e := range entries {
		_, network, err := net.ParseCIDR(e.CIDR)
		if err != nil {
			return fmt.Errorf("geoip: test entry: %w", err)
		}
		if err := tree.Insert(network, testRecord(e.Location)); err != nil {
			return fmt.Errorf("geoip: insert %s: %w", e.CIDR, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("geoip: write test db: %w", err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("geoip: write test db: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("geoip: write test db: %w", err)
	}
	return nil
}

func testRecord(l Location) mmdbtype.Map {
	named := func(name string) mmdbtype.Map {
		return mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(name)}}
	}
	rec := mmdbtype.Map{}
	if l.CountryCode != "" || l.CountryName != "" {
		c := mmdbtype.Map{}
		if l.CountryCode != "" {
			c["iso_code"] = mmdbtype.String(l.CountryCode)
		}
		if l.CountryName != "" {
			c["names"] = mmdbtype.Map{"en": mmdbtype.String(l.CountryName)}
		}
		rec["country"] = c
	}
	if l.City != "" {
		rec["city"] = named(l.City)
	}
	if l.Region != "" {
		rec["subdivisions"] = mmdbtype.Slice{named(l.Region)}
	}
	return rec
}
