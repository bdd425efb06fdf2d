package auth

import (
	"context"
)

// The parts of this service other areas build on: the rule of new
// passwords and their hashing, so the first administrator (package setup)
// and the users an operator creates (package useradmin) meet the same
// password policy as a registration.

// CheckNewPassword applies the rule of new passwords. Errors: Validation.
func (s *Service) CheckNewPassword(_ context.Context, pw string) error {
	return s.checkPassword(pw)
}

// HashNewPassword hashes a new password as registration does.
func (s *Service) HashNewPassword(pw string) (string, error) { return s.hash(pw) }
