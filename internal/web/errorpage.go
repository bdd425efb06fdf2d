package web

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Errors are pages, not JSON, for a person in a browser. Every area answers
// its errors as JSON (httpx.Error, the OAuth endpoints' {error,
// error_description}, the router's 404 and 405, the panic recovery of
// httpx.Base); ErrorPages, wrapped around the whole server, turns such an
// answer into an HTML page in the style of the login pages when, and only
// when, the request is a browser's navigation. API clients never pass
// through it, so their JSON stays exactly what the areas wrote
// (docs/decisions.md, "Account console: error pages").

// ErrorPages is the middleware that renders the error answers of next as
// HTML pages for browser navigations (see Navigation): a response with a
// status of 400 or more that is not already HTML is replaced by an error
// page with the same status. The page shows the service's own message of a
// refused request (a bad authorize request names what is wrong with it;
// see showsDetail), never the detail of a server error, whose page shows
// the request id instead, so a person can quote it.
// Responses to other requests are passed through untouched.
func (h *Handler) ErrorPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Navigation(r) {
			next.ServeHTTP(w, r)
			return
		}
		pw := &pageWriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		if pw.status == 0 {
			return
		}
		hdr := w.Header()
		detail := ""
		if showsDetail(pw.status) && isJSON(hdr.Get("Content-Type")) {
			detail = errorMessage(pw.body.Bytes())
		}
		// The JSON answer's own framing must not describe the page.
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Etag", "Last-Modified"} {
			hdr.Del(k)
		}
		h.ErrorPage(w, r, pw.status, detail)
	})
}

// Navigation reports whether r is a browser's navigation to a document:
// its fetch metadata says so (Sec-Fetch-Mode: navigate, or Sec-Fetch-Dest:
// document), or its Accept header ranks text/html above application/json
// (RFC 9110 §12.5.1). An API client sends Accept: application/json, */* or
// nothing, none of which prefers HTML.
func Navigation(r *http.Request) bool {
	// The keys are canonical already, so the map is read directly: this
	// runs on every request (ErrorPages), and Get would canonicalise each.
	if first(r.Header["Sec-Fetch-Mode"]) == "navigate" || first(r.Header["Sec-Fetch-Dest"]) == "document" {
		return true
	}
	accept := r.Header["Accept"]
	if len(accept) == 0 {
		return false
	}
	ranges := parseAccept(strings.Join(accept, ","))
	return quality(ranges, "text", "html") > quality(ranges, "application", "json")
}

// first returns vs[0], or "" when vs is empty (Header.Get's answer).
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// mediaRange is one entry of an Accept header.
type mediaRange struct {
	typ, sub string
	q        float64
}

// parseAccept reads the media ranges of an Accept header; malformed entries
// are skipped.
func parseAccept(s string) []mediaRange {
	var out []mediaRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		out = append(out, mediaRange{typ: typ, sub: sub, q: q})
	}
	return out
}

// quality is the weight ranges give typ/sub: that of the most specific range
// matching it (RFC 9110 §12.5.1: type/subtype over type/* over */*), 0 when
// none does.
func quality(ranges []mediaRange, typ, sub string) float64 {
	best, q := -1, 0.0
	for _, m := range ranges {
		spec := -1
		switch {
		case m.typ == typ && m.sub == sub:
			spec = 2
		case m.typ == typ && m.sub == "*":
			spec = 1
		case m.typ == "*" && m.sub == "*":
			spec = 0
		}
		if spec > best {
			best, q = spec, m.q
		}
	}
	return q
}

// maxErrorBody is how much of an error answer is kept to read its message.
const maxErrorBody = 16 << 10

// pageWriter holds back an error answer that is not HTML, to be replaced by
// a page; every other answer goes through as written.
type pageWriter struct {
	http.ResponseWriter
	decided bool
	status  int // the held-back error status; 0 while passing through
	body    bytes.Buffer
}

func (p *pageWriter) WriteHeader(code int) {
	if p.decided {
		return
	}
	if code < 200 {
		// Informational answers (103 Early Hints) precede the real one.
		p.ResponseWriter.WriteHeader(code)
		return
	}
	p.decided = true
	if code >= 400 && !isHTML(p.Header().Get("Content-Type")) {
		p.status = code
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *pageWriter) Write(b []byte) (int, error) {
	if !p.decided {
		p.WriteHeader(http.StatusOK)
	}
	if p.status == 0 {
		return p.ResponseWriter.Write(b)
	}
	if room := maxErrorBody - p.body.Len(); room > 0 {
		p.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// Flush forwards to the underlying writer unless an answer is held back.
func (p *pageWriter) Flush() {
	if p.status == 0 {
		_ = http.NewResponseController(p.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (p *pageWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func isHTML(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "text/html"
}

func isJSON(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// showsDetail reports whether the page of status shows the service's
// message: for a refused request it says what is wrong with it; an unknown
// address, a wrong method or a missing sign-in say no more than the page's
// own text, in words of the API ("no route for GET /x"); a server error's
// Message is not the person's concern.
func showsDetail(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusUnauthorized &&
		status != http.StatusNotFound && status != http.StatusMethodNotAllowed
}

// errorMessage is the message of a JSON error answer: hmid's {error,
// message} or OAuth's {error, error_description} (RFC 6749 §5.2).
func errorMessage(body []byte) string {
	var e struct {
		Message     string `json:"message"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if e.Message != "" {
		return e.Message
	}
	return e.Description
}

// errorPageKeys are the statuses with texts of their own; others get those
// of their class (400 or 500).
var errorPageKeys = map[int]bool{400: true, 401: true, 403: true, 404: true, 405: true, 409: true, 413: true, 429: true, 500: true, 503: true}

// ErrorPage renders the error page of status: a title and a sentence for
// the status in the reader's language, detail (the service's message, shown
// as it is; "" for none) and, for server errors, the request id.
func (h *Handler) ErrorPage(w http.ResponseWriter, r *http.Request, status int, detail string) {
	key := status
	if !errorPageKeys[key] {
		key = status / 100 * 100
		if key != 400 && key != 500 {
			key = 500
		}
	}
	t := Translator(Language(r))
	v := View{Title: "error." + strconv.Itoa(key) + ".title", Notice: t("error." + strconv.Itoa(key) + ".text"),
		Status: status, Detail: detail}
	if status >= 500 {
		v.Detail, v.RequestID = "", w.Header().Get("X-Request-ID")
	}
	if r.URL.Path == "/v1/oauth/authorize" && status < 500 {
		// A bad authorization request before its client is known (RFC 6749
		// §4.1.2.1: not redirected back); the person did nothing wrong.
		v.Title, v.Notice = "error.authorize.title", t("error.authorize.text")
	}
	securityHeaders(w)
	// The same URL answers JSON to API clients.
	w.Header().Set("Vary", "Accept, Accept-Language, Cookie, Sec-Fetch-Dest, Sec-Fetch-Mode")
	h.write(w, r, status, "error", v)
}

// The texts of the error pages.
func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"error.code":            "Error %d",
			"error.detail":          "Details:",
			"error.reference":       "Reference for support:",
			"error.home":            "Go to the start page",
			"error.login":           "Log in",
			"error.400.title":       "This request cannot be handled",
			"error.400.text":        "The address or the form that brought you here is not valid.",
			"error.401.title":       "Please log in",
			"error.401.text":        "This address needs you to be signed in.",
			"error.403.title":       "Access denied",
			"error.403.text":        "Your account is not allowed to do this.",
			"error.404.title":       "Page not found",
			"error.404.text":        "There is nothing at this address. Check the link, or start again from the start page.",
			"error.405.title":       "Not available this way",
			"error.405.text":        "This address exists, but not for what your browser asked of it.",
			"error.409.title":       "This conflicts with something else",
			"error.409.text":        "The request clashes with the current state of your account.",
			"error.413.title":       "Too much data",
			"error.413.text":        "What was sent is larger than this server accepts.",
			"error.429.title":       "Too many requests",
			"error.429.text":        "Please wait a moment and try again.",
			"error.500.title":       "Something went wrong",
			"error.500.text":        "Something went wrong on our side. Please try again in a moment.",
			"error.503.title":       "Temporarily unavailable",
			"error.503.text":        "This service is not available right now. Please try again in a moment.",
			"error.authorize.title": "The sign-in request is not valid",
			"error.authorize.text":  "The app that sent you here made a sign-in request this server cannot accept. Please tell the app's developer what is wrong:",
		},
		"de": {
			"error.code":            "Fehler %d",
			"error.detail":          "Einzelheiten:",
			"error.reference":       "Referenz für den Support:",
			"error.home":            "Zur Startseite",
			"error.login":           "Anmelden",
			"error.400.title":       "Diese Anfrage kann nicht bearbeitet werden",
			"error.400.text":        "Die Adresse oder das Formular, das Sie hierher geführt hat, ist ungültig.",
			"error.401.title":       "Bitte melden Sie sich an",
			"error.401.text":        "Für diese Adresse müssen Sie angemeldet sein.",
			"error.403.title":       "Zugriff verweigert",
			"error.403.text":        "Ihr Konto darf das nicht tun.",
			"error.404.title":       "Seite nicht gefunden",
			"error.404.text":        "Unter dieser Adresse gibt es nichts. Prüfen Sie den Link oder beginnen Sie auf der Startseite neu.",
			"error.405.title":       "So nicht verfügbar",
			"error.405.text":        "Diese Adresse gibt es, aber nicht für das, was Ihr Browser angefragt hat.",
			"error.409.title":       "Das steht im Widerspruch zu etwas anderem",
			"error.409.text":        "Die Anfrage passt nicht zum aktuellen Stand Ihres Kontos.",
			"error.413.title":       "Zu viele Daten",
			"error.413.text":        "Das Gesendete ist größer, als dieser Server annimmt.",
			"error.429.title":       "Zu viele Anfragen",
			"error.429.text":        "Bitte warten Sie einen Moment und versuchen Sie es erneut.",
			"error.500.title":       "Etwas ist schiefgegangen",
			"error.500.text":        "Bei uns ist etwas schiefgegangen. Bitte versuchen Sie es gleich noch einmal.",
			"error.503.title":       "Vorübergehend nicht verfügbar",
			"error.503.text":        "Dieser Dienst ist gerade nicht verfügbar. Bitte versuchen Sie es gleich noch einmal.",
			"error.authorize.title": "Die Anmeldeanfrage ist ungültig",
			"error.authorize.text":  "Die App, die Sie hierher geschickt hat, hat eine Anmeldeanfrage gestellt, die dieser Server nicht annehmen kann. Bitte teilen Sie dem Entwickler der App mit, was falsch ist:",
		},
	})
}
