package web_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
)

// TestStylesheetsParse parses every stylesheet under static/ with a real
// CSS parser and fails on any error in it. Browsers recover from a broken
// stylesheet silently (CSS Syntax Level 3 §5.4: a block still open at the
// end of the file is closed there), so a missing "}" after an @media block
// made every later rule apply on phones only and no page test noticed; this
// test is what notices.
func TestStylesheetsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("static", "*.css"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no stylesheet under static/")
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range cssProblems(src) {
			t.Errorf("%s: %s", file, problem)
		}
	}
}

// TestCSSProblems shows that cssProblems finds the mistakes it is there for,
// among them the one that broke the admin console (an @media block that is
// never closed), and passes what is right.
func TestCSSProblems(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      string // a part of the first problem; "" for none
	}{
		{"fine", "a { color: red; }\n@media (max-width: 420px) {\n  .card { padding: 0; }\n}\n@media (min-width: 1px) { @media (prefers-color-scheme: dark) { a { color: blue; } } }\n", ""},
		{"unclosed media block", "@media (max-width: 420px) {\n  .card { padding: 0; }\n.tile { border: 0; }\n", "line 1: the block opened here is not closed"},
		{"unclosed rule", "a { color: red; }\nb { color: blue;\n", "line 2: the block opened here is not closed"},
		{"unclosed rule inside media", "@media print {\n  a { color: red;\n}\n", "not closed"},
		{"stray closing brace", "a { color: red; } }\nb { color: blue; }\n", "line 1"},
		{"unterminated comment", "a { color: red; }\n/* the end\nb { color: blue; }\n", "comment is not closed"},
		{"unterminated string", "a::before { content: \"x; }\n", "string"},
		{"bad url", "a { background: url(a b.png); }\n", "url("},
		{"declaration without a colon", "a { color red; }\n", "line 1"},
		{"selector without a block", "a { color: red; }\nb\n", "unexpected ending in qualified rule"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := cssProblems([]byte(c.src))
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("problems in a correct stylesheet: %q", got)
			case c.want != "" && len(got) == 0:
				t.Errorf("no problem found, want one with %q", c.want)
			case c.want != "" && !strings.Contains(got[0], c.want):
				t.Errorf("first problem %q, want one with %q (all: %q)", got[0], c.want, got)
			}
		})
	}
}

// cssProblems returns what is wrong with the stylesheet src, each with its
// line: what the tokenizer flags (an unterminated comment, string or url()),
// the grammar errors of tdewolff/parse's CSS parser, and every block still
// open at the end of the file, which that parser, like a browser, closes
// without complaint.
func cssProblems(src []byte) []string {
	var problems []string
	lineOf := func(offset int) int { return 1 + bytes.Count(src[:min(offset, len(src))], []byte("\n")) }

	// The tokens (CSS Syntax Level 3 §4): the tokenizer's parse errors.
	lex := css.NewLexer(parse.NewInputBytes(src))
	offset := 0
	for {
		tt, data := lex.Next()
		if tt == css.ErrorToken {
			if err := lex.Err(); err != nil && !errors.Is(err, io.EOF) {
				problems = append(problems, fmt.Sprintf("line %d: %v", lineOf(offset), err))
			}
			break
		}
		switch {
		case tt == css.CommentToken && (len(data) < 4 || !bytes.HasSuffix(data, []byte("*/"))):
			problems = append(problems, fmt.Sprintf("line %d: the comment is not closed", lineOf(offset)))
		case tt == css.BadStringToken:
			problems = append(problems, fmt.Sprintf("line %d: a string runs to the end of its line", lineOf(offset)))
		case tt == css.StringToken && (len(data) < 2 || data[len(data)-1] != data[0]):
			problems = append(problems, fmt.Sprintf("line %d: a string runs to the end of the file", lineOf(offset)))
		case tt == css.BadURLToken:
			problems = append(problems, fmt.Sprintf("line %d: a malformed url(…)", lineOf(offset)))
		}
		offset += len(data)
	}

	// The grammar (CSS Syntax Level 3 §5): rules, blocks and declarations.
	// opened keeps the line of each block not yet closed.
	p := css.NewParser(parse.NewInputBytes(src), false)
	var opened []int
	// Every call to Next consumes a token, so the file is through after at
	// most len(src) of them; the bound keeps a parser bug from hanging the test.
	for range len(src) + 2 {
		gt, tt, _ := p.Next()
		switch gt {
		case css.ErrorGrammar:
			if err := p.Err(); errors.Is(err, io.EOF) {
				for _, line := range opened {
					problems = append(problems, fmt.Sprintf("line %d: the block opened here is not closed before the end of the file", line))
				}
				return problems
			} else if pe := (*parse.Error)(nil); errors.As(err, &pe) {
				problems = append(problems, fmt.Sprintf("line %d: %s", pe.Line, pe.Message))
			} else {
				problems = append(problems, fmt.Sprintf("line %d: %v", lineOf(p.Offset()), err))
			}
		case css.BeginAtRuleGrammar, css.BeginRulesetGrammar:
			opened = append(opened, lineOf(p.Offset()))
		case css.EndAtRuleGrammar, css.EndRulesetGrammar:
			if tt != css.RightBraceToken {
				// Ended by the end of the file, not by a "}": the parser
				// closes it the way a browser does. Report it, and the
				// blocks around it, at the end.
				continue
			}
			if len(opened) > 0 {
				opened = opened[:len(opened)-1]
			}
		}
	}
	return append(problems, "the parser did not reach the end of the file")
}
