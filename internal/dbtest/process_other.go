//go:build !unix

package dbtest

// processAlive reports every process as running where there is no cheap
// way to tell: leftovers then stay, rather than a live process's files go.
func processAlive(int) bool { return true }
