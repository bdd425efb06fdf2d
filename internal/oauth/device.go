package oauth

import (
	"context"
	"crypto/rand"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// The device authorization grant (RFC 8628). A device without a browser (a
// TV, a console, a command-line tool) asks the device authorization
// endpoint for a device code and a short user code, shows the user code,
// and polls the token endpoint while a person enters the code on the
// verification page (/device, internal/web/signin) and approves or denies.
// Every step reads and writes oauth_device_authorizations, so the device
// may poll one instance while the person approves on another.

// Lifetimes and polling of RFC 8628 §3.2 and §3.5.
const (
	DeviceCodeTTL  = 10 * time.Minute
	DeviceInterval = 5 * time.Second
	// slowDownStep is what each slow_down adds to the interval (§3.5).
	slowDownStep = 5 * time.Second
	// pollGrace is how much earlier than the interval a poll may come
	// without counting as too fast: network delays bunch up the requests
	// of a client that keeps the interval exactly.
	pollGrace = 500 * time.Millisecond
)

// ErrAuthorizationPending, ErrSlowDown and ErrExpiredToken are the token
// endpoint's answers while a device authorization is not decided (RFC 8628 §3.5).
const (
	ErrAuthorizationPending = "authorization_pending"
	ErrSlowDown             = "slow_down"
	ErrExpiredToken         = "expired_token"
)

// PrefixDeviceCode is the prefix of device codes (hm_ like every hmid secret).
const PrefixDeviceCode = "hm_dc_"

// userCodeAlphabet are the characters of user codes: consonants only, so no
// word is spelled and nothing is mistaken for a digit (RFC 8628 §6.1: 20
// characters, 8 of them give 34.5 bits).
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// userCodeLen is the length of a user code, shown as two groups of four.
const userCodeLen = 8

// Throttling of user code guesses on the verification page (RFC 8628 §5.1):
// a failed lookup counts against the person and their address; a match is
// given back.
const (
	userCodeGuessesPerUser = 10
	userCodeGuessesPerIP   = 30
	userCodeGuessWindow    = 10 * time.Minute
)

// DeviceAuthorizationResponse is the answer of the device authorization
// endpoint (RFC 8628 §3.2).
type DeviceAuthorizationResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// DeviceVerificationPath is the verification page (internal/web/signin).
const DeviceVerificationPath = "/device"

// UserCodeParam is the form and query field of the user code on the
// verification page, as verification_uri_complete carries it.
const UserCodeParam = "user_code"

// newUserCode draws a user code (without its hyphen).
func newUserCode() string {
	b := make([]byte, userCodeLen)
	max := big.NewInt(int64(len(userCodeAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("oauth: crypto/rand failed: " + err.Error())
		}
		b[i] = userCodeAlphabet[n.Int64()]
	}
	return string(b)
}

// FormatUserCode shows a normalized user code as ABCD-EFGH.
func FormatUserCode(code string) string {
	if len(code) != userCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// normalizeUserCode turns what a person typed into the stored form:
// upper case, without hyphens and spaces (RFC 8628 §6.1). It reports false
// for anything that cannot be a user code.
func normalizeUserCode(in string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(in) {
		switch {
		case r == '-' || r == ' ':
		case strings.ContainsRune(userCodeAlphabet, r) && b.Len() < userCodeLen:
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), b.Len() == userCodeLen
}

// DeviceAuthorization serves POST /v1/oauth/device_authorization (RFC 8628
// §3.1). The client authenticates as at the token endpoint (public clients
// with their client_id alone) and must be registered for the device grant.
func (h *Handler) DeviceAuthorization(w http.ResponseWriter, r *http.Request) {
	s := h.S
	c, form, ok := callerForm(w, r, s.formClient)
	if !ok {
		return
	}
	oe := checkGrant(c, GrantDeviceCode)
	var scopes, resources []string
	if oe == nil {
		scopes, oe = deviceScopes(c, form)
	}
	if oe == nil {
		// RFC 8707 §2: a device authorization request names resources as
		// an authorization request does; the poll may only narrow them.
		resources, oe = requestedResources(c, form)
	}
	if oe != nil {
		writeOAuthError(w, logged(r, oe))
		return
	}
	resp, err := s.startDevice(r.Context(), c, scopes, resources)
	respondOAuth(w, r, resp, err)
}

// deviceScopes checks the scope of a device authorization request: OpenID
// Connect scopes of the client, as at the authorization endpoint (a device
// acts for a person; permission scopes are for the client credentials grant).
func deviceScopes(c Client, form url.Values) ([]string, *Error) {
	scopes := parseScope(form.Get("scope"))
	if len(scopes) == 0 {
		return nil, oerr(ErrInvalidScope, "scope is required")
	}
	for _, sc := range scopes {
		if _, ok := knownScope(sc); !ok {
			return nil, oerr(ErrInvalidScope, "unknown scope "+sc)
		}
		if !slices.Contains(c.AllowedScopes, sc) {
			return nil, oerr(ErrInvalidScope, "the client may not request scope "+sc)
		}
	}
	return scopes, nil
}

// startDevice stores a new device authorization and returns its codes. A
// user code that happens to equal a stored one is drawn again.
func (s *Service) startDevice(ctx context.Context, c Client, scopes, resources []string) (DeviceAuthorizationResponse, error) {
	now := s.Clock.Now()
	deviceCode := token.New(PrefixDeviceCode)
	for attempt := 0; ; attempt++ {
		userCode := newUserCode()
		err := s.Store.StartDevice(ctx, store.DeviceAuthorization{ID: db.NewID(), DeviceCodeHash: token.Hash(deviceCode),
			UserCodeHash: token.Hash(userCode), ClientID: c.ID, Scopes: scopes, Resources: resources, Interval: DeviceInterval, Created: now, Expires: now.Add(DeviceCodeTTL)})
		if err != nil && db.IsUniqueViolation(err) && attempt < 3 {
			continue
		}
		if err != nil {
			return DeviceAuthorizationResponse{}, err
		}
		verify := s.Issuer + DeviceVerificationPath
		shown := FormatUserCode(userCode)
		return DeviceAuthorizationResponse{
			DeviceCode: deviceCode, UserCode: shown, VerificationURI: verify,
			VerificationURIComplete: verify + "?" + url.Values{UserCodeParam: {shown}}.Encode(),
			ExpiresIn:               int(DeviceCodeTTL / time.Second), Interval: int(DeviceInterval / time.Second),
		}, nil
	}
}
