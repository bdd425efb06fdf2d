package authn

import "strings"

// MaxBearerLen bounds a bearer token: room for an RFC 9068 JWT access
// token (about 1 KiB with RS256), far above hmid's own hm_ tokens.
const MaxBearerLen = 4096

// LooksLikeJWT reports whether tok has the shape of a compact JWS (three
// base64url parts, a JSON header): hmid's JWT access tokens (RFC 9068) are
// looked up by hash like hm_at_ ones.
func LooksLikeJWT(tok string) bool {
	return strings.HasPrefix(tok, "eyJ") && strings.Count(tok, ".") == 2 && len(tok) <= MaxBearerLen
}

// ParseBearer extracts the token of an "Authorization: Bearer <token>" header
// (RFC 6750 §2.1: the scheme is case-insensitive). It returns false for any
// other shape, including tokens with characters outside the b64token set.
func ParseBearer(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > MaxBearerLen {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=') {
			return "", false
		}
	}
	return tok, true
}
