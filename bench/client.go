package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// call sends one JSON request and decodes a JSON answer into out (when not
// nil), failing unless the status is want. The body is always drained so the
// connection is reused.
func (e *Env) call(ctx context.Context, method, path, tok string, body any, want int, out any) error {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd, ctype = bytes.NewReader(raw), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, rd)
	if err != nil {
		return err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := e.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %.200s", method, path, res.StatusCode, want, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// get is an operation that GETs path with tok and expects 200.
func (e *Env) get(path, tok string) func(ctx context.Context, worker int) error {
	return func(ctx context.Context, _ int) error {
		return e.call(ctx, http.MethodGet, path, tok, nil, http.StatusOK, nil)
	}
}
