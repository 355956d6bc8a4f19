package readtools

import (
	"io/fs"
	"syscall"
	"time"
)

// accessTime reads the access time from the platform stat; zero if absent.
func accessTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return time.Time{}
}
