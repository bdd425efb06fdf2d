//go:build !unix

package realtime

import "syscall"

// tryWrite writes nothing where a single non-blocking write is not
// available: every frame goes through the connection's writer goroutine.
func tryWrite(syscall.RawConn, []byte) (int, error) { return 0, nil }
