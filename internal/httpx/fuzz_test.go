package httpx

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// fuzzBody has the field kinds request bodies use, PATCH options included.
type fuzzBody struct {
	Name    string          `json:"name"`
	Count   int             `json:"count"`
	Ratio   float64         `json:"ratio"`
	On      bool            `json:"on"`
	Tags    []string        `json:"tags"`
	Meta    map[string]any  `json:"meta"`
	When    Opt[time.Time]  `json:"when"`
	Maybe   Opt[string]     `json:"maybe"`
	Flag    Opt[bool]       `json:"flag"`
	Nested  *fuzzBody       `json:"nested"`
	Numbers Opt[[]int]      `json:"numbers"`
	Opaque  map[string]bool `json:"opaque"`
}

// FuzzDecodeBytes checks that no body makes DecodeBytes panic and that every
// rejection is an *apperr.Error (a 400), never an internal error.
func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `null`, `"x"`, `{"name":"a","count":1}`, `{"count":"1"}`, `{"count":1e400}`,
		`{"when":"2026-01-01T00:00:00Z"}`, `{"when":"yesterday"}`, `{"maybe":null,"flag":true}`, `{"flag":"yes"}`,
		`{"nested":{"nested":{"tags":[1]}}}`, `{} {}`, `{"a":1}x`, `{"name":"\ud800"}`, `{"numbers":[1,2,"3"]}`,
		`{"meta":{"k":[{"deep":true}]}}`, `{`, `{"name":`, "\xff\xfe", `{"opaque":{"a":null}}`,
		`{"name":"a\u0000b"}`, `{"name":"a\\u0000b"}`, "{\"name\":\"a\xffb\"}", `{"name":"\ud83d\ude00"}`, `{"a\u0000":1}`,
		strings.Repeat("[", 33) + strings.Repeat("]", 33), strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var free any
		for _, dst := range []any{&fuzzBody{}, &map[string]any{}, &[]any{}, new(string), new(int), &free} {
			err := DecodeBytes(body, dst)
			if err == nil {
				continue
			}
			var ae *apperr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("DecodeBytes(%q) into %T: %v is not an *apperr.Error", body, dst, err)
			}
			if ae.Kind != apperr.BadRequest && ae.Kind != apperr.Validation {
				t.Fatalf("DecodeBytes(%q): kind %s, want BadRequest or ValidationError", body, ae.Kind)
			}
		}
		if free != nil {
			checkDecoded(t, body, free, 1)
		}
	})
}

// checkDecoded asserts what a decoded body may hold: strings (keys too)
// that are valid UTF-8 without NUL and at most MaxJSONString characters,
// nested at most MaxJSONDepth deep.
func checkDecoded(t *testing.T, body []byte, v any, depth int) {
	str := func(s string) {
		if !ValidText(s) || utf8.RuneCountInString(s) > MaxJSONString {
			t.Fatalf("DecodeBytes(%q) let the string %q through", body, s)
		}
	}
	switch v := v.(type) {
	case string:
		str(v)
	case []any:
		if depth > MaxJSONDepth {
			t.Fatalf("DecodeBytes(%q) let depth %d through", body, depth)
		}
		for _, x := range v {
			checkDecoded(t, body, x, depth+1)
		}
	case map[string]any:
		if depth > MaxJSONDepth {
			t.Fatalf("DecodeBytes(%q) let depth %d through", body, depth)
		}
		for k, x := range v {
			str(k)
			checkDecoded(t, body, x, depth+1)
		}
	}
}

// FuzzParsePageValues checks the page and limit bounds and that the SQL
// offset can never overflow or go negative.
func FuzzParsePageValues(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"1", "20"}, {"0", "0"}, {"-5", "-5"}, {"2", "1000"}, {"abc", "x"},
		{"9223372036854775807", "9223372036854775807"}, {"-9223372036854775808", "100"}, {"1e3", "1.5"}, {" 2", "3 "},
	} {
		f.Add(s[0], s[1], 20)
	}
	f.Fuzz(func(t *testing.T, page, limit string, def int) {
		p := ParsePageValues(page, limit, def)
		if p.Page < 1 || p.Limit < 1 || p.Limit > 100 {
			t.Fatalf("ParsePageValues(%q, %q, %d) = %+v", page, limit, def, p)
		}
		off := p.Offset()
		if off < 0 || int64(off) != (int64(p.Page)-1)*int64(p.Limit) || off > math.MaxInt32 {
			t.Fatalf("offset %d for %+v", off, p)
		}
		if n, err := strconv.Atoi(limit); err == nil && n >= 1 && n <= 100 && p.Limit != n {
			t.Fatalf("limit %q became %d", limit, p.Limit)
		}
		if total := p.TotalPages(math.MaxInt32); total < 1 {
			t.Fatalf("total pages %d", total)
		}
	})
}
