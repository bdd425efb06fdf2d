package web

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestMessagesComplete(t *testing.T) {
	for lang, m := range messages {
		for other, om := range messages {
			for k := range om {
				if _, ok := m[k]; !ok {
					t.Errorf("%s lacks %q (present in %s)", lang, k, other)
				}
			}
		}
	}
}

func TestLanguage(t *testing.T) {
	for header, want := range map[string]string{
		"":                          "en",
		"de":                        "de",
		"de-AT":                     "de",
		"fr-FR, de;q=0.8, en;q=0.9": "en",
		"fr-FR, de;q=0.9, en;q=0.8": "de",
		"en;q=0, de;q=0.1":          "de",
		"fr":                        "en",
		"DE;q=0.5":                  "de",
		"de;q=bogus, en":            "en",
	} {
		r := httptest.NewRequest("GET", "/login", nil)
		r.Header.Set("Accept-Language", header)
		if got := Language(r); got != want {
			t.Errorf("Accept-Language %q: %s, want %s", header, got, want)
		}
	}
}

func TestSafeReturn(t *testing.T) {
	h := &Handler{PublicURL: "https://id.example.com"}
	for in, want := range map[string]string{
		"/v1/oauth/authorize?x=1":            "/v1/oauth/authorize?x=1",
		"https://id.example.com/consent?a=b": "https://id.example.com/consent?a=b",
		"https://id.example.com":             "https://id.example.com",
		"https://id.example.com.evil.com/":   "/",
		"https://id.example.com@evil.com/":   "/",
		"http://id.example.com/x":            "/",
		"//evil.com":                         "/",
		"/\\evil.com":                        "/",
		"/ok\n":                              "/",
		"evil.com":                           "/",
		"data:text/html,x":                   "/",
	} {
		if got := h.SafeReturn(in); got != want {
			t.Errorf("SafeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUILocales(t *testing.T) {
	authz := "/v1/oauth/authorize?" + url.Values{"ui_locales": {"fr-CA de-AT en"}, "login_hint": {"ann@example.com"}}.Encode()
	for target, want := range map[string]string{
		"/consent?pending_authorization_id=x&ui_locales=de":             "de",
		"/consent?pending_authorization_id=x&ui_locales=fr+en-GB":       "en",
		"/consent?pending_authorization_id=x&ui_locales=fr":             "en",
		"/login?return_to=" + url.QueryEscape(authz):                    "de",
		"/login?return_to=" + url.QueryEscape("/account?ui_locales=de"): "en",
	} {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("Accept-Language", "en;q=0.1, fr")
		// Without a supported ui_locales tag Accept-Language decides: en.
		if got := Language(r); got != want {
			t.Errorf("%s: %s, want %s", target, got, want)
		}
	}
	r := httptest.NewRequest("GET", "/login?return_to="+url.QueryEscape(authz), nil)
	if got := LoginHint(r); got != "ann@example.com" {
		t.Errorf("login_hint: %q", got)
	}
	r = httptest.NewRequest("GET", "/login?return_to="+url.QueryEscape("/v1/oauth/authorize?login_hint=ann"), nil)
	if got := LoginHint(r); got != "" {
		t.Errorf("login_hint that is no email: %q, want none", got)
	}
}
