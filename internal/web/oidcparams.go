package web

import (
	"net/http"
	"net/url"
	"strings"
)

// The login and consent pages honour two OpenID Connect request parameters
// (Core §3.1.2.1) of the authorization request that sent the user here:
// ui_locales picks the page language before Accept-Language, and
// login_hint prefills the login page's email field. The authorization
// endpoint passes ui_locales to the consent page in its query; the login
// page reads both from the authorization request in its return_to.

// maxLoginHint bounds a login_hint shown in the email field (RFC 5321's
// longest address).
const maxLoginHint = 254

// requestUILocale is the page language the ui_locales of the request (or
// of the authorization request in its return_to) asks for, "" for none.
func requestUILocale(r *http.Request) string {
	v := r.URL.Query().Get("ui_locales")
	if v == "" {
		v = authorizeRequest(r).Get("ui_locales")
	}
	return UILocale(v)
}

// LoginHint is the login_hint of the authorization request in return_to
// when it is an email address (the field's only use); "" otherwise.
func LoginHint(r *http.Request) string {
	h := strings.TrimSpace(authorizeRequest(r).Get("login_hint"))
	if len(h) > maxLoginHint || !strings.Contains(h, "@") {
		return ""
	}
	return h
}

// authorizeRequest returns the query of the authorization request the page
// returns to (return_to in the query, or in the already parsed form of a
// POST), or nil when return_to is not an authorization request.
func authorizeRequest(r *http.Request) url.Values {
	rt := r.URL.Query().Get("return_to")
	if rt == "" && r.PostForm != nil {
		rt = r.PostForm.Get("return_to")
	}
	u, err := url.Parse(rt)
	if rt == "" || err != nil || !strings.HasSuffix(u.Path, "/v1/oauth/authorize") {
		return nil
	}
	return u.Query()
}

// UILocale returns the first language of a ui_locales value (space-separated
// BCP 47 tags in order of preference, OpenID Connect Core §3.1.2.1) that the
// pages speak, "" for none.
func UILocale(v string) string {
	for _, tag := range strings.Fields(v) {
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if _, ok := messages[primary]; ok {
			return primary
		}
	}
	return ""
}
