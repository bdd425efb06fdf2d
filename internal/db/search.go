package db

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// UserMatch is the condition of a search for a user, as the users list's
// search and the audit log's user_search read it: the user's exact id, or a
// text column of cols (username, email, name) that starts with search,
// ignoring case. It returns the condition and its arguments, numbered from
// $first. Keycloak's user search matches the same way, by prefix: a prefix
// is a range of an ordered index, so a search reads only the users it
// finds, where a substring anywhere in the text had to compare every user.
//
// Each column is lower-cased and compared as a range of bytes, [prefix,
// the next string after every string with that prefix), which UTF-8 orders
// as code points. On PostgreSQL the comparison is in the "C" collation,
// which the indexes users_*_prefix hold (migration 0730); the database's
// own collation may order by language rules, where a prefix is no range.
// On SQLite the built-in collation compares bytes and the LOWER(column)
// indexes serve it. SQLite's LOWER folds ASCII letters only, so the search
// is folded the same way there, and other letters match in their own case.
func UserMatch(f Flavor, search string, first int, cols ...string) (string, []any) {
	low := FoldCase(f, search)
	exact, from, to := "$"+strconv.Itoa(first), "$"+strconv.Itoa(first+1), "$"+strconv.Itoa(first+2)
	args := []any{search, low}
	upper, bounded := prefixEnd(low)
	if bounded {
		args = append(args, upper)
	}
	conds := []string{"id = " + exact}
	for _, c := range cols {
		col := "LOWER(" + c + ")"
		if f == Postgres {
			col += ` COLLATE "C"`
		}
		cond := col + " >= " + from
		if bounded {
			cond += " AND " + col + " < " + to
		}
		conds = append(conds, "("+cond+")")
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

// FoldCase lower-cases s as the engine's LOWER does: every letter on
// PostgreSQL (its UTF-8 locales), ASCII letters only on SQLite.
func FoldCase(f Flavor, s string) string {
	if f == Postgres {
		return strings.ToLower(s)
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// prefixEnd is the least valid UTF-8 string greater than every string that
// starts with p: p with its last code point replaced by the next one (a
// code point that is already the greatest is dropped and the one before it
// moved on instead). ok is false when there is none, for an empty p or one
// made of the greatest code point alone; such a prefix has no upper bound.
func prefixEnd(p string) (string, bool) {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		switch {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF: // the surrogates are no characters of UTF-8
			return p + string(rune(0xE000)), true
		default:
			return p + string(r+1), true
		}
	}
	return "", false
}
