package web

import (
	"errors"
	"html/template"
	"sort"
	"sync"
)

// page is one page template, parsed the first time it is drawn. Every page
// is parsed with the frame and the parts it draws, so the parsed pages of
// both consoles in both languages hold about 17 MiB of parse trees: parsing
// them at start made every process (an API-only one, every test binary)
// carry and garbage-collect that heap, and pay the parsing. TestEveryPageParses
// (internal/app) parses them all, so a page that does not parse still fails
// the build's tests rather than a person's request.
type page struct {
	once  sync.Once
	parse func() (*template.Template, error)
	tpl   *template.Template
	err   error
}

// newPage returns the page parse makes.
func newPage(parse func() (*template.Template, error)) *page {
	return &page{parse: parse}
}

// get returns the parsed template, parsing it on first use.
func (p *page) get() (*template.Template, error) {
	if p == nil {
		return nil, errNoPage
	}
	p.once.Do(func() { p.tpl, p.err = p.parse() })
	return p.tpl, p.err
}

var errNoPage = errors.New("no such page")

// ParseAll parses every page added so far, in every language, and returns
// the errors of those that do not parse.
func ParseAll() error {
	var errs []error
	for _, set := range []map[string]map[string]*page{templates, consoleTemplates} {
		langs := make([]string, 0, len(set))
		for l := range set {
			langs = append(langs, l)
		}
		sort.Strings(langs)
		for _, l := range langs {
			for name, p := range set[l] {
				if _, err := p.get(); err != nil {
					errs = append(errs, errors.New(l+"/"+name+": "+err.Error()))
				}
			}
		}
	}
	return errors.Join(errs...)
}
