// Package apptest runs API scenarios against the whole hmid application:
// a real database per engine (SQLite always, PostgreSQL and Redis when the
// HMID_TEST_* variables are set), an injected clock, and every response
// checked against api/openapi.yaml so the contract cannot drift from the code.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"hmid/api"
	"hmid/internal/app"
	"hmid/internal/clock/clocktest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
)

// Start is the fake clock's start time in every scenario.
var Start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// Env is a running hmid for one test.
type Env struct {
	T         *testing.T
	Engine    dbtest.Engine
	Server    *app.Server
	HTTP      *httptest.Server
	URL       string
	Clock     *clocktest.Fake
	SystemKey string
	Client    *http.Client

	router routers.Router
}

// Option changes the configuration of an Env before it starts.
type Option func(*config.Config)

// Each runs fn once per engine with a fresh Env, on a database of its own
// copied from one migrated once per process (dbtest.EachMigrated).
func Each(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	t.Helper()
	dbtest.EachMigrated(t, func(t *testing.T, eng dbtest.Engine) {
		fn(t, New(t, eng, opts...))
	})
}

// EachParallel is Each with the engines' subtests run in parallel, with
// each other and with the other parallel tests: for a long scenario (the
// operation fuzz) whose engines need not wait for each other. fn must not
// share unsynchronised state between its runs.
func EachParallel(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	t.Helper()
	dbtest.EachMigrated(t, func(t *testing.T, eng dbtest.Engine) {
		t.Parallel()
		fn(t, New(t, eng, opts...))
	})
}

// New starts hmid on engine eng, with Redis keys of its own.
func New(t *testing.T, eng dbtest.Engine, opts ...Option) *Env {
	t.Helper()
	return NewOnURL(t, eng, dbtest.Key(), opts...)
}

var (
	docOnce sync.Once
	doc     *openapi3.T
	docErr  error
)

// Contract returns the parsed and validated api/openapi.yaml.
func Contract() (*openapi3.T, error) {
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, docErr = loader.LoadFromData(api.OpenAPI)
		if docErr == nil {
			docErr = doc.Validate(context.Background())
		}
	})
	return doc, docErr
}

func contractRouter(base string) (routers.Router, error) {
	d, err := Contract()
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is invalid: %w", err)
	}
	// A shallow copy pointed at this test's server, so the router matches its host.
	cp := *d
	cp.Servers = openapi3.Servers{{URL: base}}
	r, err := gorillamux.NewRouter(&cp)
	if err != nil {
		return nil, fmt.Errorf("openapi router: %w", err)
	}
	return r, nil
}

// Resp is a response read whole.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object (nil when it is not one).
func (r *Resp) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Array decodes the body as an array.
func (r *Resp) Array() []any {
	var a []any
	_ = json.Unmarshal(r.Body, &a)
	return a
}

// Decode decodes the body into v.
func (r *Resp) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Req describes a request.
type Req struct {
	Method string
	Path   string
	Token  string            // bearer token, if any
	Body   any               // JSON-encoded unless it is a string or url.Values
	Header map[string]string // extra headers
}

// Do sends a request and checks the response against the contract.
func (e *Env) Do(t testing.TB, q Req) *Resp {
	t.Helper()
	var body io.Reader
	ctype := ""
	switch b := q.Body.(type) {
	case nil:
	case string:
		body, ctype = strings.NewReader(b), "application/json"
	case []byte:
		body, ctype = bytes.NewReader(b), "application/json"
	case url.Values:
		body, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		body, ctype = bytes.NewReader(raw), "application/json"
	}
	hdr := make(map[string]string, len(q.Header)+1)
	if ctype != "" {
		hdr["Content-Type"] = ctype
	}
	for k, v := range q.Header {
		hdr[k] = v
	}
	req, r, err := e.send(t, q.Method, q.Path, q.Token, body, hdr)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	e.checkContract(t, req, r)
	return r
}

// Raw sends a request as it is, without the contract check: for the answers
// a test provokes outside the contract on purpose (HTML error pages, the 503
// of an outage on any operation, refused bodies at the boundary). A body cut
// off by the server is returned as far as it came.
func (e *Env) Raw(t testing.TB, method, path, tok string, body io.Reader, hdr map[string]string) *Resp {
	t.Helper()
	_, r, _ := e.send(t, method, path, tok, body, hdr)
	return r
}

// send sends one request with the bearer token tok (if any) and the headers
// hdr, and reads the answer whole; err is the error of reading its body.
func (e *Env) send(t testing.TB, method, path, tok string, body io.Reader, hdr map[string]string) (req *http.Request, r *Resp, err error) {
	t.Helper()
	req, err = http.NewRequest(method, e.URL+path, body)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return req, &Resp{Status: res.StatusCode, Header: res.Header, Body: raw}, err
}

// Call is Do with the common arguments, failing unless the status is want.
func (e *Env) Call(t testing.TB, method, path, tok string, body any, want int) *Resp {
	t.Helper()
	r := e.Do(t, Req{Method: method, Path: path, Token: tok, Body: body})
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// checkContract validates a response against api/openapi.yaml. Unmatched
// routes (unknown paths, wrong methods) are skipped: they are the 404/405
// answers the tests provoke on purpose.
func (e *Env) checkContract(t testing.TB, req *http.Request, r *Resp) {
	t.Helper()
	vreq := req.Clone(context.Background())
	vreq.Body = nil
	route, params, err := e.router.FindRoute(vreq)
	if err != nil {
		if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Errorf("contract: %s %s (status %d) is not in api/openapi.yaml: %v", req.Method, req.URL.Path, r.Status, err)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{ExcludeRequestBody: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 r.Status,
		Header:                 r.Header,
		Body:                   io.NopCloser(bytes.NewReader(r.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("contract: %s %s → %d does not match api/openapi.yaml: %v\nbody: %.600s", req.Method, req.URL.Path, r.Status, err, r.Body)
	}
}
