package store

import (
	"reflect"
	"testing"
)

// TestClientCloneSharesNothing fills every pointer and slice field of a
// Client and checks that Clone copied each: a field added later without a
// line in Clone would let a caller change the cached row.
func TestClientCloneSharesNothing(t *testing.T) {
	var c Client
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
	}
	d := reflect.ValueOf(c.Clone())
	for i := range v.NumField() {
		a, b := v.Field(i), d.Field(i)
		if !a.CanSet() || (a.Kind() != reflect.Pointer && a.Kind() != reflect.Slice) {
			continue
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("Clone shares field %s", v.Type().Field(i).Name)
		}
	}
}
