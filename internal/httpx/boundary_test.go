package httpx

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// FuzzBoundary checks the boundary middleware's promise: a request reaches
// the handler only when its path, query, urlencoded form fields and headers
// (but Cookie) are valid UTF-8 without NUL and within MaxQueryParams, with
// User-Agent cut to MaxUserAgentBytes; every other request gets a 400 JSON
// answer in the format of its endpoint.
func FuzzBoundary(f *testing.F) {
	for _, s := range [][4]string{
		{"/v1/platforms/a", "", "", ""},
		{"/v1/platforms/a\x00b", "", "", ""},
		{"/v1/platforms/\xff", "", "", ""},
		{"/v1/users", "search=a%00", "", ""},
		{"/v1/users", "search=%c3%28", "", ""},
		{"/v1/users", "a=1;b=2", "", ""},
		{"/v1/users", "a=%zz", "", ""},
		{"/v1/users", strings.Repeat("a&", 1001), "", ""},
		{"/v1/oauth/token", "", "", "client_id=a%00b&grant_type=x"},
		{"/v1/oauth/token", "", "", "client_id=%ff"},
		{"/login", "", "", "email=a%40b.c&password=pw"},
		{"/v1", "", "curl\xff/8", ""},
		{"/v1", "", strings.Repeat("é", 300), ""},
		{"/v1/users", "search=" + strings.Repeat("x", MaxQueryValueBytes+1), "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, path, query, header, form string) {
		r := &http.Request{
			Method: http.MethodPost, URL: &url.URL{Path: path, RawQuery: query},
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "User-Agent": {header}, "X-Source-Service": {header}},
			Body:   io.NopCloser(strings.NewReader(form)),
		}
		reached := false
		h := Boundary(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = true
			checkPassed(t, r)
		}), "/v1/oauth/token")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if reached {
			return
		}
		var body map[string]string
		if w.Code != http.StatusBadRequest || json.Unmarshal(w.Body.Bytes(), &body) != nil {
			t.Fatalf("refused with %d %q", w.Code, w.Body)
		}
		want, text := "BadRequest", body["message"]
		if path == "/v1/oauth/token" {
			want, text = "invalid_request", body["error_description"]
		}
		if body["error"] != want || text == "" || !utf8.ValidString(text) {
			t.Fatalf("refusal body %q", w.Body)
		}
	})
}

// checkPassed asserts what a handler behind Boundary may rely on.
func checkPassed(t *testing.T, r *http.Request) {
	t.Helper()
	if !ValidText(r.URL.Path) {
		t.Fatalf("path %q passed", r.URL.Path)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		t.Fatalf("query %q passed: %v", r.URL.RawQuery, err)
	}
	for _, vs := range q {
		for _, v := range vs {
			if len(v) > MaxQueryValueBytes {
				t.Fatalf("query value of %d bytes passed", len(v))
			}
		}
	}
	for _, vs := range []url.Values{q, r.PostForm} {
		n := 0
		for k, v := range vs {
			n += len(v)

			for _, s := range append(v, k) {
				if !ValidText(s) {
					t.Fatalf("parameter %q passed", s)
				}
			}
		}
		if n > MaxQueryParams {
			t.Fatalf("%d parameters passed", n)
		}
	}
	for name, vs := range r.Header {
		for _, v := range vs {
			if !ValidText(v) {
				t.Fatalf("header %s %q passed", name, v)
			}
		}
	}
	if len(r.UserAgent()) > MaxUserAgentBytes {
		t.Fatalf("user agent of %d bytes passed", len(r.UserAgent()))
	}
}

func TestCheckJSONText(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		body string
		kind apperr.Kind // "" when accepted
	}{
		{`{"a":"b"}`, ""},
		{`{"a":"\\u0000"}`, ""}, // an escaped backslash, then text
		{`{"a":"\u0000"}`, apperr.BadRequest},
		{`{"a\u0000":1}`, apperr.BadRequest},
		{"{\"a\":\"\xff\"}", apperr.BadRequest},
		{`{"a":"\ud83d\ude00"}`, ""},
		{`{"a":"\ud83d"}`, apperr.BadRequest},
		{`{"a":"\ud83dx"}`, apperr.BadRequest},
		{`{"a":"\ude00"}`, apperr.BadRequest},
		{deep(MaxJSONDepth), ""},
		{deep(MaxJSONDepth + 1), apperr.BadRequest},
		{`{"a":"` + strings.Repeat("é", MaxJSONString) + `"}`, ""},
		{`{"a":"` + strings.Repeat(`\n`, MaxJSONString+1) + `"}`, apperr.Validation},
		{`{"a":{"b":"` + strings.Repeat("x", MaxJSONString+1) + `"}}`, apperr.Validation},
	}
	for _, c := range cases {
		err := checkJSONText([]byte(c.body))
		switch {
		case c.kind == "" && err != nil:
			t.Errorf("%.60s: %v", c.body, err)
		case c.kind != "" && (err == nil || err.Kind != c.kind):
			t.Errorf("%.60s: %v, want %s", c.body, err, c.kind)
		}
	}
	if err := checkJSONText([]byte(`{"a":{"b":"` + strings.Repeat("x", MaxJSONString+1) + `"}}`)); !strings.Contains(err.Message, `"a.b"`) {
		t.Errorf("message %q does not name the field a.b", err.Message)
	}
}

// TestCheckJSONValueText checks a value's text as a form would send it:
// what Decode accepts in a body passes, the rest is a ValidationError that
// names the field and, for bad syntax, the character.
func TestCheckJSONValueText(t *testing.T) {
	for text, want := range map[string]string{
		`["en", "de"]`: "", ` 42 `: "", `"ä <b>"`: "", `null`: "", `{"a": {"b": true}}`: "",
		``:            "value is empty",
		"  \n ":       "value is empty",
		`["en", "de"`: "value is not valid JSON (error at character 11)",
		`{en: 1}`:     "value is not valid JSON (error at character 2)",
		`1 2`:         "value is not valid JSON (error at character 3)",
		`"ä"x`:        "value is not valid JSON (error at character 4)",
		"\"\xff\"":    "value is not valid UTF-8",
		`"a\u0000"`:   "value: a string of the body holds a NUL character",
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1): "value: JSON is nested deeper than 32 levels",
	} {
		err := CheckJSONText("value", []byte(text))
		if want == "" {
			if err != nil {
				t.Errorf("%.40q: %v", text, err)
			}
			continue
		}
		if err == nil || apperr.KindOf(err) != apperr.Validation || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want a ValidationError with %q", text, err, want)
		}
	}
}

func TestHasNULEscape(t *testing.T) {
	for text, want := range map[string]bool{
		`"a"`: false, `"a\u0000b"`: true, `"a\\u0000b"`: false, `"a\\\u0000b"`: true,
		`"\\u0000" "\u0000"`: true, `\u0001`: false, `\u0000`: true,
	} {
		if got := HasNULEscape(text); got != want {
			t.Errorf("HasNULEscape(%s) = %v", text, got)
		}
	}
}
