package upstream

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Provider is one upstream identity provider.
type Provider interface {
	// Slug is the platform slug: "discord", "twitch", "github", "google" or
	// the name of a generic OpenID Connect provider. It is the {slug} of
	// /login/{slug} and /login/{slug}/callback.
	Slug() string
	// Name is the display name for the sign-in button.
	Name() string
	// AuthCodeURL returns the provider's authorization URL for a new sign-in.
	// It needs a context because an OpenID Connect provider may first fetch
	// its discovery document; it fails with ErrProvider when it cannot.
	AuthCodeURL(ctx context.Context, p Params) (string, error)
	// Exchange redeems the authorization code with the verifier of p and
	// returns who signed in. Failures are *Error of kind ErrProvider.
	Exchange(ctx context.Context, code string, p Params) (*Identity, error)
}

// Params are the per-sign-in secrets that tie the authorization request to
// its callback. Flow draws and keeps them; providers only use them.
type Params struct {
	// State is the OAuth state (RFC 6749 §10.12), 256 random bits.
	State string
	// Verifier is the PKCE code verifier (RFC 7636 §4.1); the authorization
	// request carries its S256 challenge.
	Verifier string
	// Nonce goes into an OpenID Connect authorization request and must come
	// back in the ID token (OpenID Connect Core §3.1.2.1); providers that
	// are not OpenID Connect ignore it.
	Nonce string
}

// Identity is the person a provider vouches for.
type Identity struct {
	// Provider is the slug of the provider that vouched.
	Provider string
	// Subject is the provider's stable user id (platform_user_id): the
	// Discord snowflake, the Twitch or GitHub user id, the OpenID Connect
	// "sub". Never empty.
	Subject string
	// Email is the address the provider gave, possibly empty.
	Email string
	// EmailVerified tells whether the provider says the person controls
	// Email. Only a verified address may be used to link accounts.
	EmailVerified bool
	// Username is the provider's handle (Discord username, Twitch login,
	// GitHub login, OpenID Connect preferred_username), possibly empty.
	Username string
	// DisplayName is the name to show, falling back to Username.
	DisplayName string
	// AvatarURL is an https URL of the person's picture, possibly empty.
	AvatarURL string
	// Raw is the provider's user object (or the ID token's claims) as
	// decoded JSON, for fields this struct does not name. It never holds a
	// token.
	Raw map[string]any
}

// Errors of this package. Every failure is an *Error whose Kind is one of
// these, so callers test with errors.Is.
var (
	// ErrProvider: the provider failed, answered something unusable, did
	// not answer in time, or refused the code.
	ErrProvider = errors.New("the sign-in provider failed")
	// ErrDenied: the person refused consent at the provider
	// (error=access_denied on the callback, RFC 6749 §4.1.2.1).
	ErrDenied = errors.New("sign-in was cancelled at the provider")
	// ErrStateInvalid: the callback's state is missing, malformed, unknown
	// (forged, or so old the cache forgot it) or issued for another provider.
	ErrStateInvalid = errors.New("the sign-in request is not valid")
	// ErrStateExpired: the state is older than the sign-in lifetime.
	ErrStateExpired = errors.New("the sign-in request has expired")
	// ErrStateReplayed: the state was already used.
	ErrStateReplayed = errors.New("the sign-in request was already used")
	// ErrStateBrowser: the state was started in another browser (the
	// binding cookie is missing or does not match): a login CSRF attempt or
	// a link opened elsewhere.
	ErrStateBrowser = errors.New("the sign-in request was started in another browser")
	// ErrCallback: the callback lacks the code or is otherwise malformed.
	ErrCallback = errors.New("the sign-in callback is not valid")
	// ErrUnknownProvider: no configured provider has this slug.
	ErrUnknownProvider = errors.New("unknown sign-in provider")
)

// Error is a failure of a sign-in. Its text is Kind's text plus a short
// detail; both are safe to show a user and to log, and never contain a code,
// token or secret.
type Error struct {
	Kind     error  // one of the Err… sentinels
	Provider string // slug, empty when not known
	Detail   string // safe detail, possibly empty
	cause    error  // underlying error without secrets, for errors.Is/As
}

func (e *Error) Error() string {
	s := e.Kind.Error()
	if e.Provider != "" {
		s = e.Provider + ": " + s
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap exposes Kind and the cause to errors.Is and errors.As, so a caller
// can also ask errors.Is(err, context.DeadlineExceeded).
func (e *Error) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.cause}
}

func newError(kind error, provider, detail string, cause error) *Error {
	return &Error{Kind: kind, Provider: provider, Detail: detail, cause: cause}
}

// Registry holds the configured providers in button order: discord, twitch,
// github, google, then the generic providers in the order of
// HMID_LOGIN_PROVIDERS.
type Registry struct {
	list []Provider
	net  *network
}

// DefaultTimeout bounds each HTTP call to a provider.
const DefaultTimeout = 10 * time.Second

// Providers returns the configured providers in button order.
func (r *Registry) Providers() []Provider {
	return append([]Provider(nil), r.list...)
}

// Get returns the provider with slug, or ErrUnknownProvider.
func (r *Registry) Get(slug string) (Provider, error) {
	for _, p := range r.list {
		if p.Slug() == slug {
			return p, nil
		}
	}
	return nil, newError(ErrUnknownProvider, "", "", nil)
}

// SetTimeout sets the time limit of each HTTP call to a provider (default
// DefaultTimeout). Call it before the registry is used.
func (r *Registry) SetTimeout(d time.Duration) { r.net.setClient(r.net.base, d) }

// SetTransport sets the transport used to reach providers (default: a clone
// of http.DefaultTransport); tests pass one that trusts their TLS servers.
// Call it before the registry is used.
func (r *Registry) SetTransport(t http.RoundTripper) { r.net.setClient(t, r.net.client.Timeout) }

// SetClock sets the clock ID tokens are checked against (default time.Now).
// Call it before the registry is used.
func (r *Registry) SetClock(now func() time.Time) { r.net.now = now }
