//go:build unix

package db

import "golang.org/x/sys/unix"

// freeSpace returns the space available to an unprivileged writer and the
// total size of the file system holding dir.
func freeSpace(dir string) (free, total uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bs := uint64(st.Bsize) //nolint:unconvert // int64 on Linux, uint32 on Darwin
	return uint64(st.Bavail) * bs, uint64(st.Blocks) * bs, true
}
