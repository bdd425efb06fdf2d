package oauth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// writeClaims answers 200 with claims as a JSON object: the same bytes
// httpx.JSON writes (keys sorted, HTML characters not escaped, a final
// newline), but without reflection for the value types claims hold. UserInfo
// is a hot path, and encoding its map through reflection (sorting the keys as
// reflect values, boxing each entry) was a tenth of its work.
func writeClaims(w http.ResponseWriter, claims map[string]any) {
	bp := claimBufs.Get().(*[]byte)
	b, err := appendClaims((*bp)[:0], claims)
	if err != nil {
		claimBufs.Put(bp)
		http.Error(w, `{"error":"server_error","error_description":"response encoding failed"}`, http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	*bp = b
	claimBufs.Put(bp)
}

var (
	claimBufs       = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
	jsonContentType = []string{"application/json; charset=utf-8"}
)

// appendClaims appends claims to b as a JSON object with sorted keys.
func appendClaims(b []byte, claims map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(claims))
	for k := range claims {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendClaimValue(b, claims[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendClaimValue appends one claim's value: the kinds claims are made of
// directly, anything else (a requested claim's object) through encoding/json.
func appendClaimValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		return append(b, ']'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// jsonPlain marks the bytes a JSON string holds as they are: printable
// ASCII but the quotation mark and the reverse solidus. One table lookup per
// byte is the whole cost of the usual claim value.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string (RFC 8259 §7) exactly as
// encoding/json does with HTML escaping off: quotation mark, reverse solidus
// and control characters escaped, invalid UTF-8 replaced by U+FFFD, and
// U+2028 and U+2029 escaped so the text stays valid JavaScript.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if jsonPlain[s[i]] {
			i++
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
