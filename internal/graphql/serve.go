package graphql

import (
	"context"
	"encoding/json"
	stderrors "errors"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strings"

	gql "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
)

// Codes of extensions.code beyond the apperr kinds (the names GraphQL
// servers commonly use, so clients can share their handling).
const (
	CodeParseFailed      = "GRAPHQL_PARSE_FAILED"
	CodeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
	CodeTooComplex       = "QUERY_TOO_COMPLEX"
	CodeBadRequest       = "BAD_REQUEST"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeInternal         = "INTERNAL_SERVER_ERROR"
)

// codes maps each apperr kind to its extensions.code.
var codes = map[apperr.Kind]string{
	apperr.BadRequest:         "BAD_USER_INPUT",
	apperr.Validation:         "BAD_USER_INPUT",
	apperr.Unauthorized:       "UNAUTHENTICATED",
	apperr.Forbidden:          "FORBIDDEN",
	apperr.NotFound:           "NOT_FOUND",
	apperr.Conflict:           "CONFLICT",
	apperr.TooManyRequests:    "TOO_MANY_REQUESTS",
	apperr.ServiceUnavailable: "SERVICE_UNAVAILABLE",
	apperr.Internal:           CodeInternal,
}

// params are the GraphQL-over-HTTP request parameters.
type params struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// response is the GraphQL response body (GraphQL spec §7.1).
type response struct {
	Data   json.RawMessage         `json:"data,omitempty"`
	Errors []*gqlerrors.QueryError `json:"errors,omitempty"`
}

// ServeHTTP answers POST (queries and mutations, JSON body) and GET (queries
// only, in the URL). Executed operations answer 200 with their errors in
// the body; requests that cannot be read answer 400, a mutation sent by GET
// 405 (GraphQL over HTTP: GET must not change state).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p params
	schema := h.full
	switch r.Method {
	case http.MethodPost:
		if err := httpx.Decode(r, &p); err != nil {
			writeFailure(w, http.StatusBadRequest, CodeBadRequest, messageOf(err))
			return
		}
	case http.MethodGet:
		q := r.URL.Query()
		p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			// The same checks as a POST body: no NUL, no invalid UTF-8, bounded depth.
			if err := httpx.DecodeBytes([]byte(v), &p.Variables); err != nil {
				writeFailure(w, http.StatusBadRequest, CodeBadRequest, "variables: "+messageOf(err))
				return
			}
		}
		schema = h.readOnly
	default:
		w.Header().Set("Allow", "GET, POST")
		writeFailure(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use GET for queries or POST")
		return
	}
	if strings.TrimSpace(p.Query) == "" {
		writeFailure(w, http.StatusBadRequest, CodeBadRequest, "query is required")
		return
	}
	// String literals of the document decode to text only now; a NUL among
	// them would reach the database, which PostgreSQL refuses.
	if httpx.HasNULEscape(p.Query) {
		writeFailure(w, http.StatusBadRequest, CodeBadRequest, "the query holds a NUL character (\\u0000)")
		return
	}
	if r.Method == http.MethodGet && operationType(p.Query, p.OperationName) == "mutation" {
		w.Header().Set("Allow", "POST")
		writeFailure(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "mutations must be sent with POST")
		return
	}
	ctx := context.WithValue(r.Context(), reqKey{}, r)
	res := schema.Exec(ctx, p.Query, p.OperationName, p.Variables)
	h.classify(ctx, res)
	httpx.JSON(w, http.StatusOK, response{Data: res.Data, Errors: res.Errors})
}

// classify gives every error an extensions.code. Resolver errors keep their
// safe apperr message; anything else is internal: logged with its detail
// and answered with a generic message.
func (h *Handler) classify(ctx context.Context, res *gql.Response) {
	for _, e := range res.Errors {
		switch {
		case e.ResolverError != nil:
			var ae *apperr.Error
			if stderrors.As(e.ResolverError, &ae) && ae.Kind != apperr.Internal {
				e.Message = ae.Message
				e.Extensions = map[string]any{"code": codes[ae.Kind]}
				if ae.RetryAfter > 0 {
					// What REST sends as Retry-After (RFC 9110 §10.2.3), in seconds.
					e.Extensions["retryAfter"] = int(math.Ceil(ae.RetryAfter.Seconds()))
				}
				continue
			}
			if apperr.IsUnavailable(e.ResolverError) {
				// A store that cannot answer (a driver error apperr classifies):
				// the same answer REST gives, not an internal error.
				httpx.Logger(ctx).Warn("graphql: dependency unavailable", "path", e.Path, "err", e.ResolverError)
				e.Message = "a dependency is unavailable; try again later"
				e.Extensions = map[string]any{"code": codes[apperr.ServiceUnavailable]}
				continue
			}
			httpx.Logger(ctx).Error("graphql: resolver failed", "path", e.Path, "err", e.ResolverError)
			e.Message = "internal server error"
			e.Extensions = map[string]any{"code": CodeInternal}
		case e.Extensions != nil && e.Extensions["code"] != nil:
			// Set by the panic handler.
		case stderrors.Is(e, gql.ErrTooManySelections):
			e.Extensions = map[string]any{"code": CodeTooComplex}
		case stderrors.Is(e, gqlerrors.ErrSyntax):
			e.Extensions = map[string]any{"code": CodeParseFailed}
		default:
			e.Extensions = map[string]any{"code": CodeValidationFailed}
		}
	}
}

// writeFailure answers a request that was not executed.
func writeFailure(w http.ResponseWriter, status int, code, msg string) {
	httpx.JSON(w, status, response{Errors: []*gqlerrors.QueryError{{Message: msg, Extensions: map[string]any{"code": code}}}})
}

func messageOf(err error) string {
	var ae *apperr.Error
	if stderrors.As(err, &ae) {
		return ae.Message
	}
	return "the request body could not be read"
}

// panicHandler turns a resolver panic into an internal error without
// detail, and logs it.
type panicHandler struct{ log *slog.Logger }

// MakePanicError implements errors.PanicHandler.
func (panicHandler) MakePanicError(context.Context, any) *gqlerrors.QueryError {
	return &gqlerrors.QueryError{Message: "internal server error", Extensions: map[string]any{"code": CodeInternal}}
}

// LogPanic implements log.Logger.
func (p panicHandler) LogPanic(ctx context.Context, value any) {
	p.log.ErrorContext(ctx, "graphql: resolver panicked", "panic", value, "stack", string(debug.Stack()))
}
