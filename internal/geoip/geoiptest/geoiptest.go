// Package geoiptest writes small GeoLite2-City-shaped databases for tests
// that need a real mmdb file to pass to geoip.Open.
//
// It lives apart from package geoip so that only tests link the mmdb writer;
// the server only reads databases.
package geoiptest

import (
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"hmid/internal/geoip"
)

// Entry maps a network in CIDR notation (e.g. "81.2.69.0/24" or
// "2a02:c7f::/32") to the location WriteDB records for it.
type Entry struct {
	CIDR string
	geoip.Location
}

// WriteDB writes a small GeoLite2-City-shaped database to path.
// Empty Location fields are left out of the record, as in the real database.
//
// Reserved ranges such as the documentation networks 192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 are allowed, so tests can
// use addresses that never belong to anyone. Private ranges can be written but
// Lookup never resolves them.
func WriteDB(path string, entries []Entry) error {
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
		if err := tree.Insert(network, record(e.Location)); err != nil {
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

// record is the City record of l, shaped as in GeoLite2-City.
func record(l geoip.Location) mmdbtype.Map {
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
