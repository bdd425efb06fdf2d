package apptest

import (
	"net/netip"

	"hmid/internal/config"
)

// AllowLoopbackOutbound is the Option of tests whose receivers of
// user-supplied URLs (a relying party's back-channel logout endpoint) are
// httptest servers on 127.0.0.1: it sets HMID_OUTBOUND_ALLOW_CIDRS to
// 127.0.0.0/8 and ::1, which a deployment leaves empty so that such
// addresses are refused (package outbound).
func AllowLoopbackOutbound(c *config.Config) {
	c.OutboundAllowCIDRs = append(c.OutboundAllowCIDRs, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
}
