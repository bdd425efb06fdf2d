package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// timeout bounds one request, so a stuck server ends a run in errors.
const timeout = 30 * time.Second

// answer is what the scenarios read of a response.
type answer struct {
	status   int
	location string // the Location header, for redirects
	body     []byte
}

// send sends one request: body is nil, url.Values (sent as a form) or a
// value sent as JSON; tok, when set, goes in as a bearer token. Nothing is
// sent once ctx has ended.
func (e *Env) send(ctx context.Context, method, path, tok string, body any) (answer, error) {
	return e.sendFrom(ctx, "", method, path, tok, body)
}

// sendFrom is send on behalf of the client address from (X-Forwarded-For,
// which the in-process server believes of the load generator), so a
// scenario can spread its load over addresses as real clients are spread.
func (e *Env) sendFrom(ctx context.Context, from, method, path, tok string, body any) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, err
	}
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI(e.URL + path)
	req.Header.SetMethod(method)
	switch b := body.(type) {
	case nil:
	case url.Values:
		req.Header.SetContentType("application/x-www-form-urlencoded")
		req.SetBodyString(b.Encode())
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return answer{}, err
		}
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(raw)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if from != "" {
		req.Header.Set("X-Forwarded-For", from)
	}
	if err := e.Client.DoTimeout(req, res, timeout); err != nil {
		return answer{}, err
	}
	return answer{status: res.StatusCode(), location: string(res.Header.Peek("Location")), body: append([]byte(nil), res.Body()...)}, nil
}

// call sends one request (see send) and decodes a JSON answer into out (when
// not nil), failing unless the status is want.
func (e *Env) call(ctx context.Context, method, path, tok string, body any, want int, out any) error {
	a, err := e.send(ctx, method, path, tok, body)
	if err != nil {
		return err
	}
	if a.status != want {
		return fmt.Errorf("%s %s: status %d, want %d: %.200s", method, path, a.status, want, a.body)
	}
	if out != nil {
		return json.Unmarshal(a.body, out)
	}
	return nil
}

// get is an operation that GETs path with tok and expects 200.
func (e *Env) get(path, tok string) func(ctx context.Context, worker int) error {
	return func(ctx context.Context, _ int) error {
		return e.call(ctx, http.MethodGet, path, tok, nil, http.StatusOK, nil)
	}
}
