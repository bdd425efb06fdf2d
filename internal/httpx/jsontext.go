package httpx

import (
	"strings"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// Limits every JSON request body is held to before it is decoded
// (docs/decisions.md, "Input bounds"). Areas set tighter bounds per field.
const (
	// MaxJSONDepth is the deepest nesting of arrays and objects in a body.
	// encoding/json alone allows 10,000 levels, so free-form values
	// (settings, metadata) could be stored so deep that every later reader
	// pays for them.
	MaxJSONDepth = 32
	// MaxJSONString is the longest JSON string, in characters, anywhere in
	// a body: the backstop for fields without a tighter bound of their own.
	// It leaves room for the longest legitimate one, a GraphQL document
	// (graphql.MaxQueryBytes, 32 KiB), which its own limit then judges.
	MaxJSONString = 64 << 10
)

// jsonScan walks the text of a JSON body once, keeping the path of object
// keys so a problem can name its field.
type jsonScan struct {
	b    []byte
	path []string // the key at each open level ("" in arrays)
}

// checkJSONText refuses what encoding/json would accept or silently change
// but no area can store or echo back: invalid UTF-8 (decoded as U+FFFD into
// strings but kept raw in json.RawMessage values), the \u0000 escape (a NUL
// that PostgreSQL refuses in text), unpaired UTF-16 surrogate escapes,
// nesting deeper than MaxJSONDepth and strings longer than MaxJSONString.
// It assumes nothing about the syntax: on malformed text its findings are
// discarded by the caller in favour of the decoder's syntax error.
func checkJSONText(b []byte) *apperr.Error {
	if !utf8.Valid(b) {
		return apperr.Bad("request body is not valid UTF-8")
	}
	s := jsonScan{b: b}
	return s.run()
}

func (s *jsonScan) run() *apperr.Error {
	for i := 0; i < len(s.b); i++ {
		switch s.b[i] {
		case '{', '[':
			s.path = append(s.path, "")
			if len(s.path) > MaxJSONDepth {
				return apperr.Bad("JSON is nested deeper than %d levels at %s", MaxJSONDepth, s.where())
			}
		case '}', ']':
			if len(s.path) > 0 {
				s.path = s.path[:len(s.path)-1]
			}
		case '"':
			end, err := s.str(i + 1)
			if err != nil {
				return err
			}
			if s.isKey(end+1) && len(s.path) > 0 {
				s.path[len(s.path)-1] = label(s.b[i+1 : end])
			}
			i = end
		}
	}
	return nil
}

// str scans the string whose text starts at i and returns the index of its
// closing quote (len(b) when there is none).
func (s *jsonScan) str(i int) (int, *apperr.Error) {
	chars := 0
	for i < len(s.b) {
		c := s.b[i]
		switch {
		case c == '"':
			return i, nil
		case c == '\\':
			n, err := s.escape(i)
			if err != nil {
				return 0, err
			}
			i += n
			chars++ // an escape is one character
		default:
			if utf8.RuneStart(c) {
				chars++
			}
			i++
		}
		if chars > MaxJSONString {
			return 0, apperr.Invalid("%s is longer than %d characters", s.where(), MaxJSONString)
		}
	}
	return len(s.b), nil
}

// escape checks the escape sequence at i and returns its length in bytes.
// RFC 8259 §7: a character outside the BMP is escaped as a surrogate pair;
// a lone surrogate names no character at all.
func (s *jsonScan) escape(i int) (int, *apperr.Error) {
	if i+1 >= len(s.b) || s.b[i+1] != 'u' {
		return 2, nil
	}
	r, ok := hex4(s.b, i+2)
	switch {
	case !ok:
		return 2, nil // malformed: the decoder says so
	case r == 0:
		return 0, apperr.Bad("%s holds a NUL character (\\u0000)", s.where())
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, apperr.Bad("%s holds an unpaired UTF-16 surrogate", s.where())
	case r >= 0xD800 && r <= 0xDBFF:
		if i+7 < len(s.b) && s.b[i+6] == '\\' && s.b[i+7] == 'u' {
			if lo, ok := hex4(s.b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 12, nil
			}
		}
		return 0, apperr.Bad("%s holds an unpaired UTF-16 surrogate", s.where())
	}
	return 6, nil
}

// isKey reports whether the string that ended before i is an object key:
// the next byte after white space is a colon.
func (s *jsonScan) isKey(i int) bool {
	for ; i < len(s.b); i++ {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}

// where names the current position: the dotted path of keys, or "the body".
func (s *jsonScan) where() string {
	var parts []string
	for _, k := range s.path {
		if k != "" {
			parts = append(parts, k)
		}
	}
	if len(parts) == 0 {
		return "a string of the body"
	}
	return "field " + `"` + strings.Join(parts, ".") + `"`
}

// label is a key as it may appear in a message: escapes left as written,
// at most 64 bytes, cut at a character boundary.
func label(k []byte) string {
	if len(k) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		return string(k[:cut]) + "…"
	}
	return string(k)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// HasNULEscape reports whether text holds the escape \u0000 that a JSON or
// GraphQL string would decode to NUL: a backslash preceded by an even number
// of backslashes, then u0000. GraphQL documents decode their own string
// literals after the body was checked, so the GraphQL endpoint asks this of
// the query text; a match in a comment or block string is refused too, which
// costs nothing real.
func HasNULEscape(text string) bool {
	for i := strings.Index(text, `\u0000`); i >= 0; {
		n := 0
		for j := i - 1; j >= 0 && text[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		next := strings.Index(text[i+1:], `\u0000`)
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}
