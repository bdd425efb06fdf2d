package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// MaxClaimsParam bounds the claims request parameter (docs/decisions.md,
// "OIDC request parameters").
const MaxClaimsParam = 4096

// claimSpec is one requested claim of the claims parameter (OpenID Connect
// Core §5.5.1): null, or an object with essential, value or values.
type claimSpec struct {
	Essential bool  `json:"essential,omitempty"`
	Value     any   `json:"value,omitempty"`
	Values    []any `json:"values,omitempty"`
}

// claimsRequest is the claims parameter (Core §5.5): the claims asked for in
// UserInfo and in the ID token. Other top-level members are ignored.
type claimsRequest struct {
	UserInfo map[string]*claimSpec `json:"userinfo,omitempty"`
	IDToken  map[string]*claimSpec `json:"id_token,omitempty"`
}

// parseClaimsRequest parses the claims parameter. It must be a JSON object
// whose userinfo and id_token members, when present, are objects mapping
// claim names to null or to an object (Core §5.5.1).
func parseClaimsRequest(v string) (*claimsRequest, error) {
	if len(v) > MaxClaimsParam {
		return nil, fmt.Errorf("at most %d bytes", MaxClaimsParam)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &top); err != nil || top == nil {
		return nil, errors.New("must be a JSON object")
	}
	cr := &claimsRequest{}
	for name, dst := range map[string]*map[string]*claimSpec{"userinfo": &cr.UserInfo, "id_token": &cr.IDToken} {
		raw, ok := top[name]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil || members == nil {
			return nil, fmt.Errorf("%s must be an object", name)
		}
		out := make(map[string]*claimSpec, len(members))
		for claim, rawSpec := range members {
			var spec *claimSpec
			if err := json.Unmarshal(rawSpec, &spec); err != nil {
				return nil, fmt.Errorf("%s.%s must be null or an object with essential, value or values", name, claim)
			}
			out[claim] = spec
		}
		*dst = out
	}
	return cr, nil
}

// essentialACR returns the acr values the ID token member asks for as
// essential (Core §5.5.1.1); nil when acr is not essential or names no value.
func (cr *claimsRequest) essentialACR() []string {
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

// subValue is the sub the ID token member asks for by value, "" for none.
func (cr *claimsRequest) subValue() string {
	if cr == nil || cr.IDToken["sub"] == nil {
		return ""
	}
	s, _ := cr.IDToken["sub"].Value.(string)
	return s
}

// claimScope is the scope that releases a claim hmid has; "" for the claims
// every ID token and UserInfo answer carry, or that hmid does not have.
func claimScope(claim string) string {
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

// claimScopes are the scopes, beyond granted, whose claims cr asks for and
// that the client may request. They join the consent the request needs, so
// no claim is released that the user did not agree to; claims of scopes the
// client may not request are simply not returned (Core §5.5: no error).
func (cr *claimsRequest) claimScopes(granted, allowed []string) []string {
	if cr == nil {
		return nil
	}
	var out []string
	for _, m := range []map[string]*claimSpec{cr.UserInfo, cr.IDToken} {
		for claim := range m {
			sc := claimScope(claim)
			if sc != "" && !slices.Contains(granted, sc) && slices.Contains(allowed, sc) && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	slices.Sort(out)
	return out
}

// releasedClaims sets in out the user claims of one answer (the ID token,
// or UserInfo when userInfo is set): those the granted scopes release
// there, plus those the claims parameter asks for in that member, when
// consent covered their scope.
func (s *Service) releasedClaims(ctx context.Context, userID string, row *claimRow, scopes []string, ac authContext, userInfo bool, out *claimSet) error {
	var asked map[string]*claimSpec
	if ac.Claims != nil {
		asked = ac.Claims.IDToken
		if userInfo {
			asked = ac.Claims.UserInfo
		}
	}
	all := scopes
	if len(asked) > 0 {
		all = union(scopes, ac.ClaimScopes)
	}
	var err error
	if row != nil {
		err = s.claims(ctx, userID, row, all, userInfo || len(asked) > 0, out)
	} else {
		err = s.userClaims(ctx, userID, all, userInfo || len(asked) > 0, out)
	}
	if err != nil || len(asked) == 0 {
		return err
	}
	for c := range out {
		k := claimNames[c]
		byScope := slices.Contains(scopes, claimScope(k)) && (userInfo || !slices.Contains(userInfoOnly, k))
		_, requested := asked[k]
		if claim(c) != claimSub && !byScope && !requested {
			out[c] = claimValue{}
		}
	}
	return nil
}
