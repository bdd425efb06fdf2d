package archive

import (
	"net/netip"
	"strconv"
)

// MaskIP returns ip with its host part hidden, for showing a user where their
// sessions came from without putting a full address into a file that may be
// shared or stored carelessly.
//
//   - IPv4 keeps the first three octets: "203.0.113.57" → "203.0.113.xxx".
//   - IPv6 keeps the first three groups (the /48 routing prefix, which names a
//     network rather than a device): "2001:db8:85a3::8a2e:370:7334" →
//     "2001:db8:85a3:xxxx::".
//   - An IPv4-mapped IPv6 address is masked as the IPv4 address it carries,
//     since that is the address the client really used.
//   - A port ("203.0.113.57:443", "[2001:db8::1]:443") and an IPv6 zone
//     ("fe80::1%eth0") are dropped.
//   - Anything else, including the empty string, yields "": a value that is
//     not an address cannot be masked, and copying it through could leak
//     whatever it holds.
func MaskIP(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		ap, perr := netip.ParseAddrPort(ip)
		if perr != nil {
			return ""
		}
		addr = ap.Addr()
	}
	addr = addr.Unmap()

	buf := make([]byte, 0, len("ffff:ffff:ffff:xxxx::"))
	if addr.Is4() {
		b := addr.As4()
		for _, octet := range b[:3] {
			buf = strconv.AppendUint(buf, uint64(octet), 10)
			buf = append(buf, '.')
		}
		return string(append(buf, "xxx"...))
	}
	b := addr.As16()
	for i := 0; i < 6; i += 2 {
		buf = strconv.AppendUint(buf, uint64(b[i])<<8|uint64(b[i+1]), 16)
		buf = append(buf, ':')
	}
	return string(append(buf, "xxxx::"...))
}
