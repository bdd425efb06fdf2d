package app_test

import (
	"testing"

	_ "hmid/internal/app" // every room of the web layer adds its pages
	"hmid/internal/web"
)

// TestEveryPageParses parses every page of every room in every language:
// pages are parsed when first drawn, so a page that does not parse must fail
// here rather than on a person's request.
func TestEveryPageParses(t *testing.T) {
	if err := web.ParseAll(); err != nil {
		t.Fatal(err)
	}
}
