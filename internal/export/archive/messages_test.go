package archive

import (
	"reflect"
	"testing"
)

// Every text must exist in every language; an empty field would silently
// leave a blank heading or label in the report.
func TestMessagesComplete(t *testing.T) {
	for _, m := range []*messages{&english, &german} {
		v := reflect.ValueOf(*m)
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.String && f.String() == "" {
				t.Errorf("%s: %s is empty", m.lang, v.Type().Field(i).Name)
			}
		}
		if m.readme == nil {
			t.Errorf("%s: no README template", m.lang)
		}
	}
}
