//go:build !linux

package wsclient

import (
	"context"
	"time"
)

// Clients are open, subscribed connections (Linux only).
type Clients struct{}

// Dial fails: the clients need Linux.
func Dial(context.Context, Config) (*Clients, error) { return nil, ErrUnsupported }

// Close does nothing.
func (c *Clients) Close() {}

// Collect fails: the clients need Linux.
func (c *Clients) Collect(context.Context, int, func([]byte) time.Time) (Result, error) {
	return Result{}, ErrUnsupported
}
