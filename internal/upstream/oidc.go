package upstream

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// googleIssuer is Google's OpenID Connect issuer
// (https://developers.google.com/identity/openid-connect/openid-connect).
const googleIssuer = "https://accounts.google.com"

// openID signs in with an OpenID Connect provider (Google or a generic one):
// discovery of the issuer's endpoints, the authorization code flow with PKCE
// and a nonce, and the ID token verified against the issuer's JWKS by
// github.com/coreos/go-oidc (signature, iss, aud, exp; OpenID Connect Core
// §3.1.3.7), then the nonce checked here.
type openID struct {
	slug, name string
	issuer     string
	clientID   string
	secret     string
	redirect   string
	net        *network

	// mu guards disc: discovery runs on first use, not at start, so hmid
	// starts while a provider is down, and retries until it succeeds.
	mu   sync.Mutex
	disc *oidc.Provider
}

var _ Provider = (*openID)(nil)

func newOpenID(slug, name string, c endpointConfig, n *network) *openID {
	return &openID{slug: slug, name: name, issuer: c.issuer, clientID: c.clientID,
		secret: c.clientSecret, redirect: c.redirectURL, net: n}
}

func (o *openID) Slug() string { return o.slug }
func (o *openID) Name() string { return o.name }

// discover fetches and keeps the issuer's discovery document. go-oidc checks
// that the document names the configured issuer (Discovery §4.3), and keeps
// the client for later key-set fetches.
func (o *openID) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.disc != nil {
		return o.disc, nil
	}
	d, err := oidc.NewProvider(oidc.ClientContext(ctx, o.net.client), o.issuer)
	if err != nil {
		var mismatch *oidc.IssuerMismatchError
		if errors.As(err, &mismatch) {
			return nil, newError(ErrProvider, o.slug, "discovery document names another issuer", nil)
		}
		if isTimeout(err) {
			return nil, transportError(o.slug, "discovery", err)
		}
		return nil, newError(ErrProvider, o.slug, "discovery failed", nil)
	}
	if d.Endpoint().AuthURL == "" || d.Endpoint().TokenURL == "" {
		return nil, newError(ErrProvider, o.slug, "discovery document lacks endpoints", nil)
	}
	o.disc = d
	return d, nil
}

func (o *openID) config(d *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: o.clientID, ClientSecret: o.secret, RedirectURL: o.redirect,
		Endpoint: d.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

// AuthCodeURL discovers the issuer if needed and returns its authorization
// URL with the state, the nonce and the PKCE S256 challenge.
func (o *openID) AuthCodeURL(ctx context.Context, p Params) (string, error) {
	ctx, cancel := o.net.bound(ctx)
	defer cancel()
	d, err := o.discover(ctx)
	if err != nil {
		return "", err
	}
	return o.config(d).AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier)), nil
}

// oidcClaims are the standard claims hmid reads (OpenID Connect Core §5.1).
// email_verified is read leniently, as some providers send "true".
type oidcClaims struct {
	Email             string  `json:"email"`
	EmailVerified     lenBool `json:"email_verified"`
	Name              string  `json:"name"`
	Picture           string  `json:"picture"`
	PreferredUsername string  `json:"preferred_username"`
}

// Exchange redeems the code, verifies the ID token and its nonce, and reads
// the claims. When the ID token carries no address it asks the UserInfo
// endpoint, whose answer counts only for the same subject (Core §5.3.2).
func (o *openID) Exchange(ctx context.Context, code string, p Params) (*Identity, error) {
	ctx, cancel := o.net.bound(ctx)
	defer cancel()
	d, err := o.discover(ctx)
	if err != nil {
		return nil, err
	}
	ctx = oidc.ClientContext(o.net.oauthContext(ctx), o.net.client)
	tok, err := o.config(d).Exchange(ctx, code, oauth2.VerifierOption(p.Verifier))
	if err != nil {
		return nil, exchangeError(o.slug, err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return nil, newError(ErrProvider, o.slug, "token response without an ID token", nil)
	}
	idt, err := d.Verifier(&oidc.Config{ClientID: o.clientID, Now: o.net.now}).Verify(ctx, rawID)
	if err != nil {
		return nil, idTokenError(o.slug, err)
	}
	// The nonce ties the ID token to this browser's sign-in (Core §3.1.3.7
	// step 11); go-oidc leaves the check to the caller.
	if p.Nonce == "" || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.Nonce)) != 1 {
		return nil, newError(ErrProvider, o.slug, "ID token nonce does not match", nil)
	}
	var c oidcClaims
	var raw map[string]any
	if err := idt.Claims(&c); err != nil {
		return nil, newError(ErrProvider, o.slug, "ID token claims are malformed", nil)
	}
	_ = idt.Claims(&raw)
	if c.Email == "" && d.UserInfoEndpoint() != "" {
		if err := o.userInfo(ctx, d, tok, idt.Subject, &c); err != nil {
			return nil, err
		}
	}
	id := &Identity{
		Provider: o.slug, Subject: idt.Subject, Email: strings.TrimSpace(c.Email),
		Username: c.PreferredUsername, DisplayName: strings.TrimSpace(c.Name),
		AvatarURL: httpsURL(c.Picture), Raw: raw,
	}
	id.EmailVerified = bool(c.EmailVerified) && id.Email != ""
	if id.DisplayName == "" {
		id.DisplayName = id.Username
	}
	return id, nil
}

// userInfo fills the address (and missing profile claims) from the UserInfo
// endpoint.
func (o *openID) userInfo(ctx context.Context, d *oidc.Provider, tok *oauth2.Token, sub string, c *oidcClaims) error {
	ui, err := d.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		if isTimeout(err) {
			return transportError(o.slug, "UserInfo", err)
		}
		return newError(ErrProvider, o.slug, "UserInfo failed", nil)
	}
	if ui.Subject != sub {
		return newError(ErrProvider, o.slug, "UserInfo answered for another subject", nil)
	}
	var more oidcClaims
	if err := ui.Claims(&more); err != nil {
		return newError(ErrProvider, o.slug, "UserInfo claims are malformed", nil)
	}
	c.Email, c.EmailVerified = more.Email, more.EmailVerified
	if c.Name == "" {
		c.Name = more.Name
	}
	if c.Picture == "" {
		c.Picture = more.Picture
	}
	if c.PreferredUsername == "" {
		c.PreferredUsername = more.PreferredUsername
	}
	return nil
}

// idTokenError says which check an ID token failed, in words of our own:
// go-oidc's messages quote claim values.
func idTokenError(slug string, err error) *Error {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return newError(ErrProvider, slug, "ID token has expired", nil)
	case isTimeout(err) || strings.Contains(msg, "Client.Timeout exceeded") || strings.Contains(msg, "deadline exceeded"):
		// go-oidc formats the key-set fetch error with %v, so its type
		// is lost and only the text tells a timeout.
		return transportError(slug, "key set", context.DeadlineExceeded)
	case strings.Contains(msg, "fetching keys"):
		return newError(ErrProvider, slug, "key set could not be fetched", nil)
	case strings.Contains(msg, "issued by a different provider"):
		return newError(ErrProvider, slug, "ID token is from another issuer", nil)
	case strings.Contains(msg, "expected audience"):
		return newError(ErrProvider, slug, "ID token is for another client", nil)
	case strings.Contains(msg, "signature"):
		return newError(ErrProvider, slug, "ID token signature is not valid", nil)
	}
	return newError(ErrProvider, slug, "ID token is not valid", nil)
}

// lenBool reads a JSON boolean, or the strings "true" and "false" some
// providers send instead; anything else is false.
type lenBool bool

func (b *lenBool) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "true", `"true"`:
		*b = true
	default:
		*b = false
	}
	return nil
}
