package auth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"hmid/internal/cache"
	"hmid/internal/policy"
	"hmid/internal/secretbox"
	"hmid/internal/token"
)

// Throttling of failed logins. Only failures count, so a user who types the
// right password is never locked out by successes. The counters are:
//
//   - per account and address (FailPerAccount per FailWindow): a guesser
//     at one address is slowed down on one account without locking the
//     owner, who signs in from another address, out;
//   - per address (FailPerIP per FailWindow), over all accounts;
//   - per account from all addresses together, a backstop of at most
//     FailPerAccountDay failures in any 24 hours (NIST SP 800-63B §5.2.2:
//     no more than 100 consecutive failed attempts on one account), against
//     guessing spread over many addresses;
//   - per device: a browser that has signed in to the account before shows
//     a signed device cookie (OWASP, "Slow down online guessing attacks
//     with device cookies") and is counted on that cookie alone, outside
//     the three above, so neither an attacker at the owner's address nor
//     one who exhausted the backstop locks the owner out. The device counter
//     is more lenient in the short term (FailPerDevice per FailWindow) but
//     also bounded per day (FailPerDeviceDay), so a stolen cookie gives no
//     unbounded guessing.
//
// The two-factor step keeps its own limit (package twofactor).
//
// The constants are the defaults; the numbers in force are the login.*
// policies (package policy), which an operator may change while hmid runs.
const (
	FailWindow     = 15 * time.Minute
	FailPerAccount = 5
	FailPerIP      = 20
	// FailPerAccountDay bounds the failures of one account in any 24 hours,
	// from all addresses together.
	FailPerAccountDay = 100
	// FailPerDevice is the allowance of one device cookie per FailWindow.
	FailPerDevice = 10
	// FailPerDeviceDay bounds the failures of one device cookie in any 24 hours.
	FailPerDeviceDay = 100
	// RegisterPerIP bounds registrations per client address and hour.
	RegisterPerIP = 20
)

// DeviceCookieName is the cookie that marks a browser in which a user has
// signed in with their password before.
const DeviceCookieName = "hmid_device"

// DeviceCookieTTL is how long a device cookie is honoured (and kept by the
// browser) after it was issued.
const DeviceCookieTTL = 365 * 24 * time.Hour

// day is the span of the daily bounds.
const day = 24 * time.Hour

// perDay is a GCRA limit admitting at most n events in any 24 hours: a
// burst of n/2, refilled at n/2 per day. A GCRA admits at most
// Burst + T·Rate/Period events in an interval of length T (see cache.Limit),
// so a burst of n and a refill of n per day would admit up to 2n.
func perDay(n int) cache.Limit {
	return cache.Limit{Rate: n / 2, Period: day, Burst: n / 2}
}

// addressKey is the throttle key of a client address: an IPv6 address is
// counted by its /64, which one subscriber usually holds whole (RFC 6177),
// so walking through it gives no fresh allowances.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// loginQuotas are the allowances a login attempt without a device cookie of
// the account is reserved in: the account at this address, the address, and
// the account's daily backstop. The account is keyed by a hash of the
// normalized address (so the key has the same size whatever was sent).
func loginQuotas(email, ip string, l policy.Login) []cache.Quota {
	addr := addressKey(ip)
	acct := token.Hash(email)
	return []cache.Quota{
		{Key: "login:acctip:" + token.Hash(acct+"|"+addr), Limit: cache.PerPeriod(l.FailPerAccount, l.FailWindow)},
		{Key: "login:ip:" + addr, Limit: cache.PerPeriod(l.FailPerIP, l.FailWindow)},
		{Key: "login:acct:" + acct, Limit: perDay(l.FailPerAccountDay)},
	}
}

// deviceQuotas are the allowances of an attempt made with a valid device
// cookie of the account: the device's own, short-term and daily.
func deviceQuotas(nonce string, l policy.Login) []cache.Quota {
	return []cache.Quota{
		{Key: "login:dev:" + nonce, Limit: cache.PerPeriod(l.FailPerDevice, l.FailWindow)},
		{Key: "login:devday:" + nonce, Limit: perDay(l.FailPerDeviceDay)},
	}
}

// device is a verified device cookie.
type device struct {
	userID string
	nonce  string
}

// deviceMACLabel separates the device cookie's MAC from the server key's
// other uses.
var deviceMACLabel = []byte("hmid device cookie")

// newDevice issues a device cookie value for userID: the user id, a random
// nonce and the issue time, with an HMAC-SHA256 under the server key over
// all three. Without a key (a Service built without Box) there are none.
func newDevice(box *secretbox.Box, userID string, now time.Time) string {
	if box == nil {
		return ""
	}
	var n [16]byte
	_, _ = rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	issued := strconv.FormatInt(now.Unix(), 10)
	mac := box.MAC(deviceMACLabel, []byte(userID), []byte(nonce), []byte(issued))
	return userID + "." + nonce + "." + issued + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// openDevice verifies a device cookie value: its MAC (in constant time) and
// its age. A forged, altered or expired cookie is no device.
func openDevice(box *secretbox.Box, v string, now time.Time) (device, bool) {
	if box == nil || v == "" || len(v) > 256 {
		return device{}, false
	}
	parts := strings.Split(v, ".")
	if len(parts) != 4 {
		return device{}, false
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || !secretbox.Equal(mac, box.MAC(deviceMACLabel, []byte(parts[0]), []byte(parts[1]), []byte(parts[2]))) {
		return device{}, false
	}
	issued, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return device{}, false
	}
	if age := now.Sub(time.Unix(issued, 0)); age < -time.Minute || age > DeviceCookieTTL {
		return device{}, false
	}
	return device{userID: parts[0], nonce: parts[1]}, true
}

// SetDeviceCookie stores a device cookie issued by a successful sign-in
// (Result.Device) in the browser: HttpOnly, SameSite=Lax, Secure on https,
// for DeviceCookieTTL. An empty value sets nothing.
func SetDeviceCookie(w http.ResponseWriter, value string, secure bool) {
	if value == "" {
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: DeviceCookieName, Value: value, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(DeviceCookieTTL.Seconds()),
	})
}
