// Package claims is what hmid says about a user in ID tokens and UserInfo
// answers (OpenID Connect Core §5.1; spec 1, ID token and UserInfo
// claims): the user columns they come from (Cols, Row), which scope
// releases which claim (Fill), the claims request parameter that asks for
// more or fewer (Core §5.5; Request) and the JSON of a UserInfo answer,
// written without reflection because UserInfo is a hot path (Set.Write).
package claims

import (
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
)

// claim is one user claim hmid releases (spec 1, ID token and UserInfo
// claims; OpenID Connect Core §5.1). The constants run in the byte order of
// the claims' JSON names, so a Set written slot by slot has the sorted
// keys encoding/json gives a map.
type claim uint8

const (
	claimEmail claim = iota
	claimEmailVerified
	claimIsSuperAdmin
	claimLocale
	claimName
	claimPermissions
	claimPicture
	claimPreferredLocale
	claimPreferredUsername
	claimProvider
	claimRoleIDs
	claimRoles
	claimSub
	claimUpdatedAt
	numClaims
)

// claimNames are the JSON names of the claims, by claim.
var claimNames = [numClaims]string{
	"email", "email_verified", "is_super_admin", "locale", "name", "permissions", "picture",
	"preferred_locale", "preferred_username", "provider", "role_ids", "roles", "sub", "updated_at",
}

// claimKeys are the claims' names as JSON object keys with their colon,
// encoded once.
var claimKeys = func() (k [numClaims][]byte) {
	for c, name := range claimNames {
		k[c] = append(appendJSONString(nil, name), ':')
	}
	return k
}()

// valueKind says which field of a claimValue holds the claim; kindNone marks a
// claim the set does not carry.
type valueKind uint8

const (
	kindNone valueKind = iota
	kindString
	kindBool
	kindInt
	kindList
)

// claimValue is one claim's value: a string, a boolean, a number (unix
// seconds) or a list of strings.
type claimValue struct {
	kind valueKind
	flag bool
	num  int64
	str  string
	list []string
}

// Set holds the user claims of one answer. It replaces a map because
// UserInfo is a hot path: a fixed array needs no allocation, no hashing and
// no sorting of keys, and its slots are already in the order the JSON
// object lists them.
type Set [numClaims]claimValue

func (s *Set) setString(c claim, v string) { s[c] = claimValue{kind: kindString, str: v} }
func (s *Set) setBool(c claim, v bool)     { s[c] = claimValue{kind: kindBool, flag: v} }
func (s *Set) setInt(c claim, v int64)     { s[c] = claimValue{kind: kindInt, num: v} }
func (s *Set) setList(c claim, v []string) { s[c] = claimValue{kind: kindList, list: v} }

// value is the claim as encoding/json would see it in a map; nil when the
// set does not carry it.
func (v claimValue) value() any {
	switch v.kind {
	case kindString:
		return v.str
	case kindBool:
		return v.flag
	case kindInt:
		return v.num
	case kindList:
		return v.list
	}
	return nil
}

// ToMap returns the claims the set carries as a map, for the ID token,
// which adds its own claims and is signed as a map.
func (s *Set) ToMap() map[string]any {
	// Room for the ID token's own claims too, so the map never grows.
	m := make(map[string]any, len(s)+10)
	for c := range s {
		if s[c].kind != kindNone {
			m[claimNames[c]] = s[c].value()
		}
	}
	return m
}

// Write answers 200 with the claims as a JSON object: the same bytes
// httpx.JSON writes for ToMap (keys sorted, HTML characters not escaped, a
// final newline), without reflection or a map.
func (s *Set) Write(w http.ResponseWriter) {
	bp := claimBufs.Get().(*[]byte)
	b := append(s.appendJSON((*bp)[:0]), '\n')
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

// appendJSON appends the set to b as a JSON object.
func (s *Set) appendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	for c := range s {
		v := &s[c]
		if v.kind == kindNone {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, claimKeys[c]...)
		switch v.kind {
		case kindString:
			b = appendJSONString(b, v.str)
		case kindBool:
			b = strconv.AppendBool(b, v.flag)
		case kindInt:
			b = strconv.AppendInt(b, v.num, 10)
		case kindList:
			b = appendJSONList(b, v.list)
		}
	}
	return append(b, '}')
}

// appendJSONList appends a list of strings; a nil list is null, as
// encoding/json writes it.
func appendJSONList(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
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

// plainWord reports whether the eight bytes of s from i are all plain
// (jsonPlain), testing them together as one word: a byte below 0x20, a
// quotation mark or a reverse solidus makes the matching term's top bit of
// that byte set, and so does a byte of 0x80 or more through x itself. Each
// term is the exact "has a byte below n" test of bit twiddling (n <= 0x80);
// false positives are harmless, since the caller then looks byte by byte.
func plainWord(s string, i int) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs|x)&tops == 0
}

// appendJSONString appends s as a JSON string (RFC 8259 §7) exactly as
// encoding/json does with HTML escaping off: quotation mark, reverse solidus
// and control characters escaped, invalid UTF-8 replaced by U+FFFD, and
// U+2028 and U+2029 escaped so the text stays valid JavaScript.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(s, i) {
			i += 8
			continue
		}
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
