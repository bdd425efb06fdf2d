// Package clock provides the injected time source used by every area of hmid.
//
// Logic never calls time.Now directly: expiry, grace periods, rate-limit windows
// and token lifetimes all read a Clock so tests can move time without sleeping.
package clock

import "time"

// Clock tells the current time.
type Clock interface {
	Now() time.Time
}

// System is the wall clock, in UTC.
type System struct{}

// Now returns the current UTC time.
func (System) Now() time.Time { return time.Now().UTC() }

var _ Clock = System{}
