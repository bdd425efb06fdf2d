//go:build !unix

package db

// freeSpace is not measured on systems without statfs; Disk then reports
// only write failures.
func freeSpace(string) (free, total uint64, ok bool) { return 0, 0, false }
