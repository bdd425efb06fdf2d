// Package geoip resolves client IP addresses to a country, region and city for
// audit events, from a MaxMind-format (mmdb) City or Country database such as
// GeoLite2-City (configured with HMID_GEOIP_DB).
//
// Geolocation is best effort: an audit event must be written whether or not
// the address can be placed, so Lookup never fails. It returns the zero
// Location when there is no database, the input is not an IP address, the
// address is private or otherwise not publicly routable, or the database has
// no entry for it.
package geoip

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Location is where an IP address is registered or used, as far as the
// database knows. Empty fields are unknown. The JSON names are those of the
// audit event fields.
type Location struct {
	// CountryCode is the ISO 3166-1 alpha-2 code, e.g. "GB".
	CountryCode string `json:"country_code"`
	// CountryName is the English country name, e.g. "United Kingdom".
	CountryName string `json:"country_name"`
	// City is the English city name, e.g. "London".
	City string `json:"city"`
	// Region is the English name of the largest subdivision, e.g. "England".
	Region string `json:"region"`
}

// IsZero reports whether nothing is known about the location.
func (l Location) IsZero() bool { return l == Location{} }

// Resolver looks up addresses in an open database. It is safe for concurrent
// use, including Close concurrently with Lookup. A nil *Resolver is valid and
// resolves nothing, so callers need no branch for "no database configured".
type Resolver struct {
	// mu guards db: the database is memory-mapped, and Close unmaps it, so a
	// lookup must never run on a reader that is being closed.
	mu sync.RWMutex
	db *maxminddb.Reader
}

// Open opens the mmdb database at path. The file is memory-mapped and read
// lazily, so opening a large database is cheap.
func Open(path string) (*Resolver, error) {
	db, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("geoip: open %s: %w", path, err)
	}
	return &Resolver{db: db}, nil
}

// Close releases the database. Later lookups return the zero Location.
// Closing a nil or already closed Resolver is a no-op.
func (r *Resolver) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	return err
}

// names holds only the English name: decoding a struct with one field skips
// the other languages instead of allocating a map for each lookup.
type names struct {
	EN string `maxminddb:"en"`
}

type country struct {
	ISOCode string `maxminddb:"iso_code"`
	Names   names  `maxminddb:"names"`
}

// record is the subset of the GeoIP2/GeoLite2 City (and Country) schema that
// Location needs.
type record struct {
	Country           country `maxminddb:"country"`
	RegisteredCountry country `maxminddb:"registered_country"`
	City              struct {
		Names names `maxminddb:"names"`
	} `maxminddb:"city"`
	Subdivisions []struct {
		Names names `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
}

// Lookup returns the location of ip, given as an IPv4 or IPv6 address, or as
// host:port (the form of http.Request.RemoteAddr). It returns the zero
// Location when the address cannot be placed; see the package documentation.
func (r *Resolver) Lookup(ip string) Location {
	if r == nil {
		return Location{}
	}
	addr, ok := parse(ip)
	if !ok || !public(addr) {
		return Location{}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.db == nil {
		return Location{}
	}
	var rec record
	res := r.db.Lookup(addr)
	if !res.Found() || res.Decode(&rec) != nil {
		return Location{}
	}
	c := rec.Country
	if c.ISOCode == "" {
		// Some networks (anycast, satellite providers) have no observed
		// country; the country the block is registered to is the best hint.
		c = rec.RegisteredCountry
	}
	loc := Location{CountryCode: c.ISOCode, CountryName: c.Names.EN, City: rec.City.Names.EN}
	if len(rec.Subdivisions) > 0 {
		loc.Region = rec.Subdivisions[0].Names.EN
	}
	return loc
}

func parse(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	addr, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		addr = ap.Addr()
	}
	// An IPv4-mapped IPv6 address (::ffff:1.2.3.4, common from dual-stack
	// listeners) is the IPv4 address; the zone of a link-local address
	// means nothing to the database.
	return addr.Unmap().WithZone(""), true
}

// sharedAddressSpace is RFC 6598 carrier-grade NAT space: not private by
// netip's definition, but never a client's real public address.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// public reports whether addr can appear in a geolocation database: loopback,
// private, link-local, multicast and unspecified addresses only ever tell
// where the service's own network is.
func public(addr netip.Addr) bool {
	return addr.IsGlobalUnicast() && !addr.IsPrivate() && !sharedAddressSpace.Contains(addr)
}
