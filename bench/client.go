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
	location string            // the Location header, for redirects
	cookies  map[string]string // the values of the cookies it sets (Set-Cookie), by name
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
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
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
	return e.do(req)
}

// follow GETs rawURL, a redirect's absolute Location on hmid or on another
// host, as a browser following it does: with cookies (name to value), on
// behalf of the client address from (see sendFrom). Nothing is sent once
// ctx has ended.
func (e *Env) follow(ctx context.Context, from, rawURL string, cookies map[string]string) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(rawURL)
	req.Header.SetMethod(http.MethodGet)
	for name, value := range cookies {
		req.Header.SetCookie(name, value)
	}
	if from != "" {
		req.Header.Set("X-Forwarded-For", from)
	}
	return e.do(req)
}

// do sends req and copies out what an answer holds.
func (e *Env) do(req *fasthttp.Request) (answer, error) {
	res := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(res)
	if err := e.Client.DoTimeout(req, res, timeout); err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode(), location: string(res.Header.Peek("Location")), body: append([]byte(nil), res.Body()...)}
	for name, header := range res.Header.Cookies() {
		c := fasthttp.AcquireCookie()
		if c.ParseBytes(header) == nil {
			if a.cookies == nil {
				a.cookies = map[string]string{}
			}
			a.cookies[string(name)] = string(c.Value())
		}
		fasthttp.ReleaseCookie(c)
	}
	return a, nil
}

// clientAddr is worker's client address (in the RFC 2544 benchmarking
// range), for scenarios that spread their load over addresses as real
// clients are spread, so per-address limits are not what they measure.
func clientAddr(worker int) string {
	return fmt.Sprintf("198.18.%d.%d", worker/256, worker%256)
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
