package graphql

// operationType returns the type ("query", "mutation" or "subscription") of
// the operation of doc that operationName selects (the only operation when
// operationName is empty), or "" when the document cannot be read that far
// or names no such operation; the executor then reports the problem itself.
//
// It reads just enough of the GraphQL grammar (spec §2.2, §2.1 lexical
// tokens): top-level definitions start with "{" (a query), with query,
// mutation or subscription and an optional name, or with fragment. Strings,
// block strings and comments are skipped so braces inside them do not count.
func operationType(doc, operationName string) string {
	l := lexer{src: doc}
	var ops []struct{ typ, name string }
	for {
		tok := l.next()
		switch tok {
		case "":
			return pick(ops, operationName)
		case "{":
			ops = append(ops, struct{ typ, name string }{"query", ""})
			if !l.skipBlock() {
				return ""
			}
		case "query", "mutation", "subscription", "fragment":
			name := ""
			next := l.next()
			if isName(next) {
				name, next = next, l.next()
			}
			// Variable definitions, "on Type" and directives come before the selection set.
			for next != "{" {
				if next == "" {
					return ""
				}
				if next == "(" && !l.skipUntil(")") {
					return ""
				}
				next = l.next()
			}
			if tok != "fragment" {
				ops = append(ops, struct{ typ, name string }{tok, name})
			}
			if !l.skipBlock() {
				return ""
			}
		default:
			return ""
		}
	}
}

func pick(ops []struct{ typ, name string }, name string) string {
	if name == "" {
		if len(ops) == 1 {
			return ops[0].typ
		}
		return ""
	}
	for _, o := range ops {
		if o.name == name {
			return o.typ
		}
	}
	return ""
}

func isName(tok string) bool {
	if tok == "" {
		return false
	}
	c := tok[0]
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// lexer yields punctuators and names; strings, numbers and other tokens
// come back as "$" placeholders (only their extent matters here).
type lexer struct {
	src string
	pos int
}

// skipBlock skips to the "}" closing a "{" just read.
func (l *lexer) skipBlock() bool { return l.skipUntil("}") }

// skipUntil skips to the closing token of the bracket just opened.
func (l *lexer) skipUntil(closing string) bool {
	depth := 1
	opening := map[string]string{"}": "{", ")": "(", "]": "["}[closing]
	for {
		switch l.next() {
		case "":
			return false
		case opening:
			depth++
		case closing:
			depth--
			if depth == 0 {
				return true
			}
		}
	}
}

func (l *lexer) next() string {
	s := l.src
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			l.pos++
		case c == '#':
			l.skipComment()
		case c == '"':
			return l.stringToken()
		case isName(string(c)):
			return l.name()
		default:
			l.pos++
			return string(c)
		}
	}
	return ""
}

// skipComment moves past a comment up to the end of its line.
func (l *lexer) skipComment() {
	s := l.src
	for l.pos < len(s) && s[l.pos] != '\n' && s[l.pos] != '\r' {
		l.pos++
	}
}

// stringToken moves past a string or block string starting at l.pos and
// returns "$" for it, or "" when it is not closed.
func (l *lexer) stringToken() string {
	s := l.src
	if len(s)-l.pos >= 3 && s[l.pos:l.pos+3] == `"""` {
		return l.blockString()
	}
	l.pos++
	for l.pos < len(s) && s[l.pos] != '"' && s[l.pos] != '\n' {
		if s[l.pos] == '\\' {
			l.pos++
		}
		l.pos++
	}
	if l.pos >= len(s) || s[l.pos] != '"' {
		return ""
	}
	l.pos++
	return "$"
}

// blockString moves past a """block string""", where \""" does not close it.
func (l *lexer) blockString() string {
	s := l.src
	l.pos += 3
	for l.pos < len(s) {
		if s[l.pos] == '\\' && len(s)-l.pos >= 4 && s[l.pos+1:l.pos+4] == `"""` {
			l.pos += 4
			continue
		}
		if len(s)-l.pos >= 3 && s[l.pos:l.pos+3] == `"""` {
			l.pos += 3
			return "$"
		}
		l.pos++
	}
	return ""
}

// name moves past a name token and returns it.
func (l *lexer) name() string {
	s := l.src
	start := l.pos
	for l.pos < len(s) && (isName(string(s[l.pos])) || s[l.pos] >= '0' && s[l.pos] <= '9') {
		l.pos++
	}
	return s[start:l.pos]
}
