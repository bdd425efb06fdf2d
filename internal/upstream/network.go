package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"hmid/internal/outbound"
	"hmid/internal/telemetry"
)

// maxResponse caps every response body read from a provider. User objects,
// token responses, discovery documents and key sets are a few kilobytes.
const maxResponse = 1 << 20

// userAgent identifies hmid to provider APIs (GitHub's API requires one).
const userAgent = "hmid"

// errTooLarge is the read error of a response body over maxResponse.
var errTooLarge = errors.New("response body too large")

// network is the HTTP client every provider shares: one place for the time
// limit and the size cap, so no call can forget either.
type network struct {
	base   http.RoundTripper
	client *http.Client
	now    func() time.Time
}

func newNetwork() *network {
	n := &network{now: time.Now}
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Sign-ins go to a handful of hosts (each provider's token and user
	// API): keep enough idle connections per host for concurrent sign-ins,
	// or nearly every call pays a new TCP and TLS handshake (the default
	// keeps two).
	t.MaxIdleConnsPerHost = 64
	n.setClient(t, DefaultTimeout)
	return n
}

func (n *network) setClient(base http.RoundTripper, timeout time.Duration) {
	n.base = base
	n.client = &http.Client{Transport: telemetry.Transport(limitTransport{base: base}), Timeout: timeout}
}

// bound limits a whole provider operation (a token request and one or two
// API calls) to the same timeout as each call, so a provider that answers
// every call just in time cannot add them up.
func (n *network) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.client.Timeout)
}

// oauthContext carries the client to golang.org/x/oauth2, which takes its
// HTTP client from the context.
func (n *network) oauthContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, n.client)
}

// limitTransport wraps every response body so reading more than maxResponse
// bytes fails instead of filling memory; libraries that read a body whole
// (go-oidc's discovery and key set) are bounded too.
type limitTransport struct{ base http.RoundTripper }

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = outbound.LimitBody(resp.Body, maxResponse, errTooLarge)
	return resp, nil
}

// getJSON GETs url with the access token and decodes the JSON answer into v.
// Any failure is an *Error of kind ErrProvider naming what went wrong.
func (n *network) getJSON(ctx context.Context, slug, url string, tok *oauth2.Token, header http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return newError(ErrProvider, slug, "bad user API address", nil)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	tok.SetAuthHeader(req)
	resp, err := n.client.Do(req)
	if err != nil {
		return transportError(slug, "user API", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return newError(ErrProvider, slug, fmt.Sprintf("user API answered %d", resp.StatusCode), nil)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		if errors.Is(err, errTooLarge) {
			return newError(ErrProvider, slug, "user API answer too large", errTooLarge)
		}
		if isTimeout(err) {
			return transportError(slug, "user API", err)
		}
		return newError(ErrProvider, slug, "user API answered malformed JSON", nil)
	}
	return nil
}

// transportError describes a failed round trip without the URL or anything
// else a caller might not want shown.
func transportError(slug, what string, err error) *Error {
	if isTimeout(err) {
		return newError(ErrProvider, slug, what+" did not answer in time", context.DeadlineExceeded)
	}
	if errors.Is(err, context.Canceled) {
		return newError(ErrProvider, slug, what+" call was cancelled", context.Canceled)
	}
	if errors.Is(err, errTooLarge) {
		return newError(ErrProvider, slug, what+" answer too large", errTooLarge)
	}
	return newError(ErrProvider, slug, what+" unreachable", nil)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// oauthErrorCode matches RFC 6749 §5.2 error codes, which are safe to show;
// anything else a provider sends (error_description, a body) is not shown.
var oauthErrorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// exchangeError turns a failed token request into an *Error. The oauth2
// library's own error text quotes the response body, so it is not kept.
func exchangeError(slug string, err error) *Error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		detail := "token request refused"
		if oauthErrorCode.MatchString(re.ErrorCode) {
			detail += ": " + re.ErrorCode
		} else if re.Response != nil {
			detail += fmt.Sprintf(" with status %d", re.Response.StatusCode)
		}
		return newError(ErrProvider, slug, detail, nil)
	}
	var ue *url.Error
	if errors.As(err, &ue) || isTimeout(err) {
		return transportError(slug, "token endpoint", err)
	}
	if strings.HasPrefix(err.Error(), "oauth2: cannot fetch token") {
		// The library formats a body read error with %v, losing its type.
		return newError(ErrProvider, slug, "token endpoint answer could not be read", nil)
	}
	return newError(ErrProvider, slug, "token endpoint answered malformed data", nil)
}

// oauthClient is the OAuth 2.0 authorization-code client shared by the
// providers that are not OpenID Connect (Discord, Twitch, GitHub).
type oauthClient struct {
	slug, name string
	conf       oauth2.Config
	net        *network
}

// newOAuthClient is the client of the platform slug (display name name) at
// c's endpoints, sending its credentials as style says and asking for
// scopes.
func newOAuthClient(slug, name string, c endpointConfig, n *network, style oauth2.AuthStyle, scopes ...string) oauthClient {
	return oauthClient{slug: slug, name: name, net: n, conf: oauth2.Config{
		ClientID: c.clientID, ClientSecret: c.clientSecret, RedirectURL: c.redirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: c.authURL, TokenURL: c.tokenURL, AuthStyle: style},
		Scopes:   scopes,
	}}
}

func (c *oauthClient) Slug() string { return c.slug }
func (c *oauthClient) Name() string { return c.name }

// AuthCodeURL always sends a PKCE S256 challenge (RFC 7636 §4.3): Discord,
// Twitch and GitHub accept it, and RFC 6749 §3.1 makes a server that does not
// know the parameter ignore it.
func (c *oauthClient) AuthCodeURL(_ context.Context, p Params) (string, error) {
	return c.conf.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier)), nil
}

// exchange redeems code at the token endpoint with the PKCE verifier.
func (c *oauthClient) exchange(ctx context.Context, code string, p Params) (*oauth2.Token, error) {
	tok, err := c.conf.Exchange(c.net.oauthContext(ctx), code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		return nil, exchangeError(c.slug, err)
	}
	return tok, nil
}

// userObject reads the user object at url with tok (getJSON) and decodes it
// as decodeObject does.
func (c *oauthClient) userObject(ctx context.Context, url string, tok *oauth2.Token, header http.Header, v any) (map[string]any, error) {
	var body json.RawMessage
	if err := c.net.getJSON(ctx, c.slug, url, tok, header, &body); err != nil {
		return nil, err
	}
	return decodeObject(c.slug, body, v)
}

// decodeObject decodes a user object both into v (the fields hmid uses) and
// into a map (Identity.Raw). A body that is not a JSON object is an
// ErrProvider.
func decodeObject(slug string, body []byte, v any) (map[string]any, error) {
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, newError(ErrProvider, slug, "user API answered malformed JSON", nil)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, newError(ErrProvider, slug, "user API answered an unexpected user object", nil)
	}
	return raw, nil
}

// isDigits reports whether s is a non-empty decimal number of at most 32
// digits, the shape of Discord, Twitch and GitHub user ids.
func isDigits(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// httpsURL returns s when it is an absolute https URL (an avatar to show on
// a page with img-src https:), else "".
func httpsURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return ""
	}
	return u.String()
}
