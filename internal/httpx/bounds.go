package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// The bounds shared by every area's decode step (docs/decisions.md, "Input
// bounds"; api/openapi.yaml documents them per field). Each check returns a
// 400 ValidationError naming the field, or nil.
const (
	// MaxText is the longest free text (notes, descriptions) in characters.
	MaxText = 10000
	// MaxFreeJSONBytes is the largest free-form JSON value (a setting's
	// value, a system config value, geofence or device metadata), compacted.
	MaxFreeJSONBytes = 16 << 10
	// MaxFreeJSONProperties is the most members of a free-form JSON object.
	MaxFreeJSONProperties = 100
)

// CheckLen refuses a string longer than max characters.
func CheckLen(field, v string, max int) error {
	if len(v) > max && utf8.RuneCountInString(v) > max {
		return apperr.Invalid("%s must be at most %d characters", field, max)
	}
	return nil
}

// CheckItems refuses an array of more than max items.
func CheckItems(field string, n, max int) error {
	if n > max {
		return apperr.Invalid("%s must have at most %d items", field, max)
	}
	return nil
}

// CheckJSONText checks raw as the text of one JSON value that did not come
// in a request body Decode read (a console form's field): it must be valid
// UTF-8 and one JSON value (RFC 8259 §2), with the text checks Decode applies
// to a body (no \u0000, no unpaired surrogate, the depth and string bounds).
// For a value Decode has read already, it always passes.
func CheckJSONText(field string, raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return apperr.Invalid("%s is empty: give a JSON value such as \"text\", 42, true, [] or {}", field)
	}
	if !utf8.Valid(raw) {
		return apperr.Invalid("%s is not valid UTF-8", field)
	}
	var syn *json.SyntaxError
	if err := json.Unmarshal(raw, new(json.RawMessage)); errors.As(err, &syn) {
		// Offset counts the bytes read up to and including the bad one.
		return apperr.Invalid("%s is not valid JSON (error at character %d)", field, max(1, utf8.RuneCount(raw[:syn.Offset])))
	} else if err != nil {
		return apperr.Invalid("%s is not valid JSON", field)
	}
	if err := checkJSONText(raw); err != nil {
		return apperr.Invalid("%s: %s", field, err.Message)
	}
	return nil
}

// CheckFreeJSON refuses a free-form JSON value larger than MaxFreeJSONBytes
// once compacted, or an object with more than MaxFreeJSONProperties members
// at any level. Depth, NUL and UTF-8 were checked when the body was decoded.
func CheckFreeJSON(field string, raw json.RawMessage) error {
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return apperr.Invalid("%s must be a JSON value", field)
	}
	if c.Len() > MaxFreeJSONBytes {
		return apperr.Invalid("%s must be at most %d bytes of JSON", field, MaxFreeJSONBytes)
	}
	if widestObject(c.Bytes()) > MaxFreeJSONProperties {
		return apperr.Invalid("%s must have at most %d properties per object", field, MaxFreeJSONProperties)
	}
	return nil
}

// widestObject returns the most members of any object in the compact JSON
// text b. A stack of member counts per open level follows the nesting.
func widestObject(b []byte) int {
	var counts []int // per open level; -1 marks an array
	widest := 0
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{':
			counts = append(counts, 0)
		case '[':
			counts = append(counts, -1)
		case ':':
			counts[len(counts)-1]++
			widest = max(widest, counts[len(counts)-1])
		case '}', ']':
			counts = counts[:len(counts)-1]
		}
	}
	return widest
}
