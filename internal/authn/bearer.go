package authn

import "strings"

// ParseBearer extracts the token of an "Authorization: Bearer <token>" header
// (RFC 6750 §2.1: the scheme is case-insensitive). It returns false for any
// other shape, including tokens with characters outside the b64token set.
func ParseBearer(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > 512 {
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
