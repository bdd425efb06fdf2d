// Package httpx holds hmid's HTTP plumbing shared by every area: JSON encoding
// and strict decoding, error responses, envelopes, pagination and links,
// client IP resolution, request ids, panic recovery, access logs and metrics,
// and the head and tail every REST handler shares (Bind, Respond: respond.go).
// It knows nothing about the areas.
package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"hmid/internal/apperr"
)

// MaxBodyBytes is the largest request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// bufPool recycles response buffers: JSON encoding is on every hot path.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// JSON writes v as a JSON response with the given status.
func JSON(w http.ResponseWriter, status int, v any) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":"InternalError","message":"response encoding failed"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// NoContent writes 204.
func NoContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

// Decode reads a JSON request body into dst. Bodies over 1 MiB, malformed JSON,
// values of the wrong type, trailing data, an empty body, and text no area
// can store (invalid UTF-8, \u0000, unpaired surrogates, nesting deeper than
// MaxJSONDepth, strings over MaxJSONString) give a 400 *apperr.Error naming
// the problem; unknown fields are ignored.
func Decode(r *http.Request, dst any) error {
	if r.Body == nil {
		return apperr.Bad("request body is required")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.Bad("request body is larger than 1 MiB")
		}
		return apperr.Bad("request body could not be read")
	}
	return DecodeBytes(body, dst)
}

// DecodeBytes is Decode on an already read body; it is what the fuzz test drives.
func DecodeBytes(body []byte, dst any) error {
	if len(body) > MaxBodyBytes {
		return apperr.Bad("request body is larger than 1 MiB")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return apperr.Bad("request body is required")
	}
	// The text check runs first, but a body that is not JSON at all gets
	// the decoder's syntax error rather than a finding of the text check.
	if err := checkJSONText(body); err != nil && json.Valid(body) {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return describeDecodeError(err)
	}
	if dec.More() {
		return apperr.Bad("request body must hold a single JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return apperr.Bad("request body must hold a single JSON value")
	}
	return nil
}

func describeDecodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &syn):
		return apperr.Bad("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return apperr.Bad("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return apperr.Bad("request body must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Bad("malformed JSON: unexpected end of body")
	case errors.As(err, &inv):
		return fmt.Errorf("httpx: decode target: %w", err)
	default:
		var fe *FieldError
		if errors.As(err, &fe) {
			return apperr.Bad("%s", fe.Error())
		}
		return apperr.Bad("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a different type"
}

// FieldError is returned by custom UnmarshalJSON methods to name the bad field.
type FieldError struct {
	Field, Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q %s", e.Field, e.Problem) }

// Opt is a field of a PATCH body that distinguishes "absent", "null" and a value.
// Only fields with Set true are changed.
type Opt[T any] struct {
	Set   bool // the key was present
	Null  bool // the value was JSON null
	Value T
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		o.Null = true
		var zero T
		o.Value = zero
		return nil
	}
	o.Null = false
	return json.Unmarshal(b, &o.Value)
}

// Ptr returns nil when absent or null, else a pointer to the value.
func (o Opt[T]) Ptr() *T {
	if !o.Set || o.Null {
		return nil
	}
	v := o.Value
	return &v
}
