package httpx

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// Limits of the request line and headers that Boundary enforces
// (docs/decisions.md, "Input bounds").
const (
	// MaxQueryParams is the most query (or form) parameters a request may
	// carry. Go's net/url drops every parameter of a query over 10,000 and
	// reports that only as an error most callers ignore; hmid answers 400.
	MaxQueryParams = 1000
	// MaxQueryValueBytes is the longest query parameter value. Search and
	// prefix filters become LIKE patterns, and SQLite refuses one over
	// 50,000 bytes; a GraphQL document longer than this goes by POST.
	MaxQueryValueBytes = 16 << 10
	// MaxUserAgentBytes is how much of User-Agent is kept: it is recorded with
	// sessions and audit events, so it needs a bound like any stored input.
	MaxUserAgentBytes = 512
)

// Boundary is the middleware that refuses text no area can store: a NUL
// character or invalid UTF-8 in the URL path, a query parameter, a
// urlencoded form field or a header, and more than MaxQueryParams
// parameters. PostgreSQL refuses NUL and invalid UTF-8 in text columns
// (SQLite keeps them), so without this check the same request was a 400, a
// 200 or a 500 depending on the engine and the route. JSON bodies get the
// same check in Decode.
//
// User-Agent is not refused but cleaned (invalid bytes replaced, cut to
// MaxUserAgentBytes): it is descriptive and some clients send odd ones.
// Cookie is not checked: hmid reads only its own cookies, and a neighbour's
// cookie on the same host must not lock a browser out.
//
// Requests to oauthPaths are answered in the OAuth error format
// {error: invalid_request, error_description} (RFC 6749 §5.2); all others
// with {error: BadRequest, message}.
func Boundary(next http.Handler, oauthPaths ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := checkRequest(r); msg != "" {
			if isOAuthPath(r.URL.Path, oauthPaths) {
				JSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": msg})
				return
			}
			JSON(w, http.StatusBadRequest, ErrorBody{Error: string(apperr.BadRequest), Message: msg})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isOAuthPath(p string, paths []string) bool {
	for _, o := range paths {
		if p == o {
			return true
		}
	}
	return false
}

// checkRequest returns why r is refused, or "" when it may pass. It parses
// a urlencoded form body here, once, so every handler's later ParseForm
// finds the checked values.
func checkRequest(r *http.Request) string {
	if !ValidText(r.URL.Path) {
		return "the URL path holds a NUL character or invalid UTF-8"
	}
	if msg := checkHeaders(r.Header); msg != "" {
		return msg
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return queryProblem(err)
	}
	if msg := CheckValues("query parameter", q); msg != "" {
		return msg
	}
	for k, vs := range q {
		for _, v := range vs {
			if len(v) > MaxQueryValueBytes {
				return "the query parameter " + quoteName(k) + " is longer than " + strconv.Itoa(MaxQueryValueBytes) + " bytes"
			}
		}
	}
	if !isForm(r) {
		return ""
	}
	if err := r.ParseForm(); err != nil {
		return "the form body could not be read: " + formError(err)
	}
	return CheckValues("form field", r.PostForm)
}

func queryProblem(err error) string {
	if strings.Contains(err.Error(), "exceeded limit") {
		return "more than " + strconv.Itoa(MaxQueryParams) + " query parameters"
	}
	return "the query could not be parsed: " + err.Error()
}

// formError names what was wrong with a form body without echoing it.
func formError(err error) string {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return "it is larger than 1 MiB"
	}
	if strings.Contains(err.Error(), "exceeded limit") {
		return "it has more than " + strconv.Itoa(MaxQueryParams) + " fields"
	}
	return err.Error()
}

func isForm(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return false
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/x-www-form-urlencoded"
}

// CheckValues returns why a set of query or form parameters is refused, or
// "": too many of them, or a NUL or invalid UTF-8 in a name or value. what
// names them in the message ("query parameter", "form field").
func CheckValues(what string, vs url.Values) string {
	n := 0
	for k, v := range vs {
		n += len(v)
		if !ValidText(k) {
			return "a " + what + " name holds a NUL character or invalid UTF-8"
		}
		for _, s := range v {
			if !ValidText(s) {
				return "the " + what + " " + quoteName(k) + " holds a NUL character or invalid UTF-8"
			}
		}
	}
	if n > MaxQueryParams {
		return "more than " + strconv.Itoa(MaxQueryParams) + " " + what + "s"
	}
	return ""
}

// checkHeaders refuses invalid UTF-8 in any header but Cookie and cleans
// User-Agent. (NUL and other control bytes never get here: net/http refuses
// them with its own 400.)
func checkHeaders(h http.Header) string {
	for name, vs := range h {
		switch name {
		case "Cookie":
			continue
		case "User-Agent":
			for i, v := range vs {
				vs[i] = cleanUserAgent(v)
			}
			continue
		}
		for _, v := range vs {
			if !ValidText(v) {
				return "the header " + quoteName(name) + " holds a NUL character or invalid UTF-8"
			}
		}
	}
	return ""
}

// cleanUserAgent makes a User-Agent storable: valid UTF-8 without NUL, at
// most MaxUserAgentBytes long, cut at a character boundary.
func cleanUserAgent(v string) string {
	if !ValidText(v) {
		v = strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "")
	}
	if len(v) <= MaxUserAgentBytes {
		return v
	}
	cut := MaxUserAgentBytes
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

// ValidText reports whether s can be stored as text on both engines: valid
// UTF-8 without a NUL character.
func ValidText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// quoteName quotes a parameter or header name for a message, cut to 64
// bytes so a huge name is not echoed back.
func quoteName(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return `"` + strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "") + `"`
}
