package graphql

import (
	"context"
	stderrors "errors"
	"strconv"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
)

// timestamp formats t as RFC 3339 in UTC, with the fraction the REST JSON shows.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

// principal returns the caller, or UNAUTHENTICATED on an anonymous request
// (the REST twins are Authenticated() routes).
func principal(ctx context.Context) (*authn.Principal, error) {
	p := authn.From(ctx)
	if p == nil {
		return nil, apperr.Unauthorizedf("authentication required: send Authorization: Bearer <token>")
	}
	return p, nil
}

// userPrincipal is principal for the records that belong to a user
// (consents, tokens): a system key acting for no user has none.
func userPrincipal(ctx context.Context) (*authn.Principal, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.UserID == "" {
		return nil, apperr.Forbiddenf("this operation needs a user: a system API key has no OAuth consents or tokens")
	}
	return p, nil
}

// page turns the optional page and limit arguments into the REST paging
// (page from 1, limit clamped to 1..100).
func page(pg, limit *int32, def int) httpx.Page {
	str := func(v *int32) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(int(*v))
	}
	return httpx.ParsePageValues(str(pg), str(limit), def)
}

// oauthClient is the GraphQL view of oauth.Client.
type oauthClient struct {
	ID            gql.ID
	Name          string
	Description   string
	LogoURL       *string
	ClientType    string
	AllowedScopes []string
	RedirectURIs  []string
	IsFirstParty  bool
	IsActive      bool
	CreatedAt     string
	GrantTypes    []string
	// The client's own token lifetimes (nil: the server's policies).
	AccessTokenLifetimeSeconds  *int32
	RefreshTokenLifetimeSeconds *int32
}

func clientView(c oauth.Client) oauthClient {
	return oauthClient{
		ID: gql.ID(c.ID), Name: c.Name, Description: c.Description, LogoURL: c.LogoURL, ClientType: c.ClientType,
		AllowedScopes: nonNil(c.AllowedScopes), RedirectURIs: nonNil(c.RedirectURIs),
		IsFirstParty: c.IsFirstParty, IsActive: c.IsActive, CreatedAt: timestamp(c.CreatedAt),
		GrantTypes:                 nonNil(c.GrantTypes),
		AccessTokenLifetimeSeconds: int32Ptr(c.AccessTokenLifetimeSeconds), RefreshTokenLifetimeSeconds: int32Ptr(c.RefreshTokenLifetimeSeconds),
	}
}

// int32Ptr is a lifetime as a GraphQL Int (lifetimes are at most a year of
// seconds, well within 32 bits).
func int32Ptr(v *int64) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

// lifetime is a GraphQL Int lifetime as the service's input: absent or
// null is the server's policy.
func lifetime(v *int32) oauth.ClientLifetime {
	if v == nil {
		return oauth.ClientLifetime{}
	}
	return oauth.ClientLifetime{Set: true, Value: int64(*v)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MyOauthClients resolves query myOauthClients (GET /v1/oauth/clients).
func (r *resolver) MyOauthClients(ctx context.Context, args struct{ Page, Limit *int32 }) (*[]oauthClient, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, _, err := r.d.OAuth.ListClients(ctx, p, false, page(args.Page, args.Limit, 100))
	return views(list, err, clientView)
}

// createClientInput is CreateOAuthClientInput: the REST body in camelCase.
type createClientInput struct {
	Name              string
	Description       *string
	LogoURL           *string
	HomepageURL       *string
	PrivacyPolicyURL  *string
	TermsOfServiceURL *string
	RedirectURIs      []string
	AllowedScopes     []string
	ClientType        *string
	IsFirstParty      *bool
	GrantTypes        *[]string
	// Token lifetimes of the client (nil: the server's policies).
	AccessTokenLifetimeSeconds  *int32
	RefreshTokenLifetimeSeconds *int32
}

func opt[T any](v *T) httpx.Opt[T] {
	if v == nil {
		return httpx.Opt[T]{}
	}
	return httpx.Opt[T]{Set: true, Value: *v}
}

// clientInput converts the GraphQL input to the service's input. Unlike
// REST, allowedScopes is required (spec 1, OAuth client).
func (in createClientInput) clientInput() oauth.ClientInput {
	return oauth.ClientInput{
		Name:              httpx.Opt[string]{Set: true, Value: in.Name},
		Description:       opt(in.Description),
		LogoURL:           opt(in.LogoURL),
		HomepageURL:       opt(in.HomepageURL),
		PrivacyPolicyURL:  opt(in.PrivacyPolicyURL),
		TermsOfServiceURL: opt(in.TermsOfServiceURL),
		RedirectURIs:      httpx.Opt[[]string]{Set: true, Value: in.RedirectURIs},
		AllowedScopes:     httpx.Opt[[]string]{Set: true, Value: nonNil(in.AllowedScopes)},
		ClientType:        opt(in.ClientType),
		IsFirstParty:      opt(in.IsFirstParty),
		GrantTypes:        opt(in.GrantTypes),

		AccessTokenLifetimeSeconds:  lifetime(in.AccessTokenLifetimeSeconds),
		RefreshTokenLifetimeSeconds: lifetime(in.RefreshTokenLifetimeSeconds),
	}
}

type createClientPayload struct {
	Client       oauthClient
	ClientSecret *string
}

// CreateOauthClient resolves mutation createOauthClient (POST /v1/oauth/clients).
func (r *resolver) CreateOauthClient(ctx context.Context, args struct{ Input createClientInput }) (*createClientPayload, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	c, err := r.d.OAuth.CreateClient(ctx, p, args.Input.clientInput(), oauth.MetaFrom(request(ctx)))
	if err != nil {
		return nil, err
	}
	out := createClientPayload{Client: clientView(c)}
	if c.ClientSecret != "" {
		out.ClientSecret = &c.ClientSecret
	}
	return &out, nil
}

// mutationResult is MutationResult: every failure the caller can act on
// (unknown id, a rule of the operation, a missing permission) is reported in
// error with success false, as spec 1 gives these mutations {success, error};
// missing authentication, rate limits and internal failures go to the errors
// array.
type mutationResult struct {
	Success bool
	Error   *string
}

// outcome sorts err into the payload (business failure) or the errors array.
func outcome(err error) (*mutationResult, error) {
	if err == nil {
		return &mutationResult{Success: true}, nil
	}
	var ae *apperr.Error
	switch apperr.KindOf(err) {
	case apperr.NotFound, apperr.BadRequest, apperr.Validation, apperr.Conflict, apperr.Forbidden:
		if stderrors.As(err, &ae) {
			return &mutationResult{Error: &ae.Message}, nil
		}
	}
	return nil, err
}

type regeneratePayload struct {
	Success      bool
	ClientSecret *string
	Error        *string
}

// RegenerateOauthClientSecret resolves mutation regenerateOauthClientSecret
// (POST /v1/oauth/clients/{id}/regenerate-secret).
func (r *resolver) RegenerateOauthClientSecret(ctx context.Context, args struct{ ID gql.ID }) (*regeneratePayload, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	secret, err := r.d.OAuth.RegenerateSecret(ctx, p, string(args.ID), oauth.MetaFrom(request(ctx)))
	res, err := outcome(err)
	if err != nil {
		return nil, err
	}
	out := regeneratePayload{Success: res.Success, Error: res.Error}
	if res.Success {
		out.ClientSecret = &secret
	}
	return &out, nil
}

// DeleteOauthClient resolves mutation deleteOauthClient (DELETE /v1/oauth/clients/{id}).
func (r *resolver) DeleteOauthClient(ctx context.Context, args struct{ ID gql.ID }) (*mutationResult, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	return outcome(r.d.OAuth.DeleteClient(ctx, p, string(args.ID), oauth.MetaFrom(request(ctx))))
}

type scopeView struct {
	Name        string
	Description string
}

// OauthScopes resolves query oauthScopes (public, as in discovery).
func (r *resolver) OauthScopes() *[]scopeView {
	var out []scopeView
	for _, s := range oauth.Scopes() {
		out = append(out, scopeView{Name: s.Name, Description: s.Description})
	}
	return &out
}

type consentView struct {
	ClientID     gql.ID
	ClientName   string
	Scopes       []string
	IsFirstParty bool
	GrantedAt    string
}

// MyOauthConsents resolves query myOauthConsents: the clients the caller consented to.
func (r *resolver) MyOauthConsents(ctx context.Context) (*[]consentView, error) {
	return myList(ctx, r.d.OAuth.ListUserConsents, func(c oauth.ConsentInfo) consentView {
		return consentView{ClientID: gql.ID(c.ClientID), ClientName: c.ClientName, Scopes: nonNil(c.Scopes), IsFirstParty: c.IsFirstParty, GrantedAt: timestamp(c.GrantedAt)}
	})
}

// myList resolves a list of the caller's own records: list reads them for
// the user, view shapes each one.
func myList[T, V any](ctx context.Context, list func(context.Context, string) ([]T, error), view func(T) V) (*[]V, error) {
	p, err := userPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	items, err := list(ctx, p.UserID)
	return views(items, err, view)
}

// views shapes each of items with view for a list resolver, or passes on
// the error of reading them.
func views[T, V any](items []T, err error, view func(T) V) (*[]V, error) {
	if err != nil {
		return nil, err
	}
	out := make([]V, len(items))
	for i, it := range items {
		out[i] = view(it)
	}
	return &out, nil
}

type tokenView struct {
	ID         gql.ID
	ClientName string
	Scopes     []string
	ExpiresAt  string
}

// MyOauthTokens resolves query myOauthTokens: the caller's active tokens.
func (r *resolver) MyOauthTokens(ctx context.Context) (*[]tokenView, error) {
	return myList(ctx, r.d.OAuth.ListUserTokens, func(t oauth.TokenInfo) tokenView {
		return tokenView{ID: gql.ID(t.ID), ClientName: t.ClientName, Scopes: nonNil(t.Scopes), ExpiresAt: timestamp(t.ExpiresAt)}
	})
}

// RevokeOauthConsent resolves mutation revokeOauthConsent: the consent is
// deleted and the client's tokens for the caller revoked (spec 1, states).
func (r *resolver) RevokeOauthConsent(ctx context.Context, args struct{ ClientID gql.ID }) (*mutationResult, error) {
	p, err := userPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return outcome(r.d.OAuth.RevokeConsent(ctx, p.UserID, string(args.ClientID), oauth.MetaFrom(request(ctx))))
}

// RevokeOauthToken resolves mutation revokeOauthToken: one of the caller's tokens.
func (r *resolver) RevokeOauthToken(ctx context.Context, args struct{ TokenID gql.ID }) (*mutationResult, error) {
	p, err := userPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return outcome(r.d.OAuth.RevokeToken(ctx, p.UserID, string(args.TokenID)))
}

func forbidden(perm string) error { return apperr.Forbiddenf("missing permission %s", perm) }
