//go:build unix

package realtime

import (
	"errors"
	"syscall"
)

// tryWrite writes what the socket takes of b at once and returns how much
// that was; it never waits for room (0, nil: the socket is full, or there
// is no descriptor to write to). Going through the poller's write path
// instead would park the caller.
func tryWrite(rc syscall.RawConn, b []byte) (int, error) {
	if rc == nil {
		return 0, nil
	}
	var n int
	var werr error
	err := rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // one attempt
	})
	if err != nil {
		return 0, err
	}
	if errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR) {
		return 0, nil
	}
	return max(n, 0), werr
}
