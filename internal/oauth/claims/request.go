package claims

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// MaxParam bounds the claims request parameter (docs/decisions.md,
// "OIDC request parameters").
const MaxParam = 4096

// Spec is one requested claim of the claims parameter (OpenID Connect
// Core §5.5.1): null, or an object with essential, value or values.
type Spec struct {
	Essential bool  `json:"essential,omitempty"`
	Value     any   `json:"value,omitempty"`
	Values    []any `json:"values,omitempty"`
}

// Request is the claims parameter (Core §5.5): the claims asked for in
// UserInfo and in the ID token. Other top-level members are ignored.
type Request struct {
	UserInfo map[string]*Spec `json:"userinfo,omitempty"`
	IDToken  map[string]*Spec `json:"id_token,omitempty"`
}

// ParseRequest parses the claims parameter. It must be a JSON object
// whose userinfo and id_token members, when present, are objects mapping
// claim names to null or to an object (Core §5.5.1).
func ParseRequest(v string) (*Request, error) {
	if len(v) > MaxParam {
		return nil, fmt.Errorf("at most %d bytes", MaxParam)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &top); err != nil || top == nil {
		return nil, errors.New("must be a JSON object")
	}
	cr := &Request{}
	for name, dst := range map[string]*map[string]*Spec{"userinfo": &cr.UserInfo, "id_token": &cr.IDToken} {
		raw, ok := top[name]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil || members == nil {
			return nil, fmt.Errorf("%s must be an object", name)
		}
		out := make(map[string]*Spec, len(members))
		for claim, rawSpec := range members {
			var spec *Spec
			if err := json.Unmarshal(rawSpec, &spec); err != nil {
				return nil, fmt.Errorf("%s.%s must be null or an object with essential, value or values", name, claim)
			}
			out[claim] = spec
		}
		*dst = out
	}
	return cr, nil
}

// EssentialACR returns the acr values the ID token member asks for as
// essential (Core §5.5.1.1); nil when acr is not essential or names no value.
func (cr *Request) EssentialACR() []string {
	if cr == nil {
		return nil
	}
	spec := cr.IDToken["acr"]
	if spec == nil || !spec.Essential {
		return nil
	}
	var out []string
	for _, v := range append([]any{spec.Value}, spec.Values...) {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SubValue is the sub the ID token member asks for by value, "" for none.
func (cr *Request) SubValue() string {
	if cr == nil || cr.IDToken["sub"] == nil {
		return ""
	}
	s, _ := cr.IDToken["sub"].Value.(string)
	return s
}

// scopeOf is the scope that releases a claim hmid has; "" for the claims
// every ID token and UserInfo answer carry, or that hmid does not have.
func scopeOf(claim string) string {
	switch claim {
	case "name", "picture", "preferred_username", "locale", "updated_at", "provider", "preferred_locale", "is_super_admin":
		return "profile"
	case "email", "email_verified":
		return "email"
	case "roles", "role_ids":
		return "roles"
	case "permissions":
		return "permissions"
	}
	return ""
}

// userInfoOnly are the claims a scope releases in UserInfo but not in the
// ID token (spec 1, UserInfo claims).
var userInfoOnly = []string{"provider", "preferred_locale", "is_super_admin", "role_ids"}

// Scopes are the scopes, beyond granted, whose claims cr asks for and
// that the client may request. They join the consent the request needs, so
// no claim is released that the user did not agree to; claims of scopes the
// client may not request are simply not returned (Core §5.5: no error).
func (cr *Request) Scopes(granted, allowed []string) []string {
	if cr == nil {
		return nil
	}
	var out []string
	for _, m := range []map[string]*Spec{cr.UserInfo, cr.IDToken} {
		for claim := range m {
			sc := scopeOf(claim)
			if sc != "" && !slices.Contains(granted, sc) && slices.Contains(allowed, sc) && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	slices.Sort(out)
	return out
}
