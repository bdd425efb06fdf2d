package db

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// SubstringMin is the shortest search UserSubstring finds anywhere in a
// text: a trigram index (PostgreSQL's pg_trgm, SQLite's FTS5 trigram
// tokenizer) finds a part of three characters or more; a shorter one
// matches the start of the texts through UserMatch instead.
const SubstringMin = 3

// UserSubstring is the condition, over the users table, of a search for
// users: their exact id, or search anywhere in their username, email or
// name, ignoring case; with fewer than SubstringMin characters, the start
// of them (UserMatch). Its arguments are numbered from first.
//
// PostgreSQL compares LOWER(col) LIKE '%search%' with the search's LIKE
// characters escaped, which the trigram indexes of migration 0931 serve;
// SQLite looks the search up as a phrase in the FTS5 table users_search,
// whose trigram tokenizer folds case.
func UserSubstring(f Flavor, search string, first int) (string, []any) {
	if utf8.RuneCountInString(search) < SubstringMin {
		return UserMatch(f, search, first, "username", "email", "name")
	}
	exact, part := "$"+strconv.Itoa(first), "$"+strconv.Itoa(first+1)
	if f == Postgres {
		return UserSubstringRow(f, search, first)
	}
	phrase := `"` + strings.ReplaceAll(search, `"`, `""`) + `"`
	return "(id = " + exact + " OR id IN (SELECT id FROM users_search WHERE users_search MATCH " + part + "))", []any{search, phrase}
}

// likeEscaper escapes the characters LIKE gives a meaning, with the escape
// character \.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// UserSubstringRow is UserSubstring tested on each row by LIKE: for a walk
// of the users in an order that stops at its page, where the index of a
// trigram search would hand over every match first. It is UserSubstring's
// own form on PostgreSQL, whose trigram indexes serve LIKE; on SQLite it
// folds ASCII letters only (SQLite's LOWER), where the FTS5 table folds
// every letter.
func UserSubstringRow(f Flavor, search string, first int) (string, []any) {
	if utf8.RuneCountInString(search) < SubstringMin {
		return UserMatch(f, search, first, "username", "email", "name")
	}
	exact, part := "$"+strconv.Itoa(first), "$"+strconv.Itoa(first+1)
	like := "%" + likeEscaper.Replace(FoldCase(f, search)) + "%"
	conds := []string{"id = " + exact}
	for _, c := range []string{"username", "email", "name"} {
		conds = append(conds, "LOWER("+c+") LIKE "+part+` ESCAPE '\'`)
	}
	return "(" + strings.Join(conds, " OR ") + ")", []any{search, like}
}
