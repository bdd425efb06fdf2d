// Package graphql serves hmid's GraphQL endpoint (DECISIONS: GraphQL at
// POST /v1/graphql, and GET for queries, with the same bearer authentication).
//
// The schema (schema.graphql, mutation.graphql) covers OAuth client
// management, consents and tokens (spec 1) and two-factor authentication,
// platforms and roles (spec 2). Resolvers hold no rules of their own: each
// calls the service method its REST twin calls, with the request's principal,
// so both APIs answer the same caller the same way. Errors go into the
// GraphQL errors array with extensions.code derived from the apperr kind;
// internal errors are logged and answered without detail.
//
// Abuse limits: the document is at most MaxQueryBytes long, nests at most
// MaxDepth fields deep and expands (after fragment spreads) to at most
// MaxSelections field selections; each root field is one or two database
// round trips, so the selection budget also bounds the work of one request.
package graphql

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"

	gql "github.com/graph-gophers/graphql-go"

	"hmid/internal/access"
	"hmid/internal/oauth"
	"hmid/internal/passkey"
	"hmid/internal/platforms"
	"hmid/internal/twofactor"
)

// Limits of one GraphQL document.
const (
	// MaxQueryBytes bounds the length of the query text (the request body
	// itself is bounded at 1 MiB by httpx).
	MaxQueryBytes = 32 << 10
	// MaxDepth bounds field nesting. hmid's own types nest at most three
	// deep; the standard introspection query (with its seven-level TypeRef
	// fragment) needs about a dozen.
	MaxDepth = 15
	// MaxSelections bounds the field selections of one operation after
	// fragment expansion (the complexity limit). The standard introspection
	// query expands to about 200. Each root field costs one or two database
	// round trips, so this also caps the work aliases can request.
	MaxSelections = 500
)

//go:embed schema.graphql
var querySchema string

//go:embed mutation.graphql
var mutationSchema string

// Deps are the services the resolvers call: the same ones the REST handlers use.
type Deps struct {
	OAuth     *oauth.Service
	TwoFactor *twofactor.Service
	Platforms *platforms.Service
	Access    *access.Service
	Passkeys  *passkey.Service
	Log       *slog.Logger
}

// Handler serves /v1/graphql.
type Handler struct {
	full     *gql.Schema // queries and mutations, for POST
	readOnly *gql.Schema // queries only, for GET
	log      *slog.Logger
}

// New parses the schema and binds it to the resolvers.
func New(d Deps) (*Handler, error) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	root := &resolver{d: d}
	opts := []gql.SchemaOpt{
		gql.UseFieldResolvers(),
		gql.MaxDepth(MaxDepth),
		gql.MaxSelections(MaxSelections),
		gql.MaxQueryLength(MaxQueryBytes),
		gql.PanicHandler(panicHandler{log: d.Log}),
		gql.Logger(panicHandler{log: d.Log}),
	}
	full, err := gql.ParseSchema(querySchema+"\n"+mutationSchema, root, opts...)
	if err != nil {
		return nil, fmt.Errorf("graphql schema: %w", err)
	}
	readOnly, err := gql.ParseSchema(querySchema, root, opts...)
	if err != nil {
		return nil, fmt.Errorf("graphql read-only schema: %w", err)
	}
	return &Handler{full: full, readOnly: readOnly, log: d.Log}, nil
}

// resolver is the root resolver of queries and mutations.
type resolver struct {
	d Deps
}

type reqKey struct{}

// request returns the HTTP request being served, for the audit metadata
// (client IP, user agent, X-Source-Service) the REST handlers also record.
func request(ctx context.Context) *http.Request {
	r, _ := ctx.Value(reqKey{}).(*http.Request)
	if r == nil {
		r = &http.Request{Header: http.Header{}}
	}
	return r
}
