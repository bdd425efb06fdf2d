package apperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestOnField(t *testing.T) {
	orig := Invalid("name is required")
	err := OnField("name", orig)
	if FieldOf(err) != "name" || KindOf(err) != Validation || err.Error() != orig.Error() {
		t.Fatalf("OnField: field %q kind %s text %q", FieldOf(err), KindOf(err), err)
	}
	// The original is not changed: errors may be shared values.
	if orig.Field != "" {
		t.Error("OnField changed its argument")
	}
	// Wrapped errors keep their field; others have none and pass unchanged.
	if FieldOf(fmt.Errorf("create: %w", err)) != "name" {
		t.Error("the field is lost through wrapping")
	}
	plain := errors.New("disk on fire")
	if OnField("name", plain) != plain || FieldOf(plain) != "" || FieldOf(nil) != "" {
		t.Error("an error without a kind got a field")
	}
}
