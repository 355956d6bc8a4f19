//go:build !unix

package main

import "os"

// maxRSSKiB is unknown where there is no getrusage.
func maxRSSKiB(*os.ProcessState) (int64, bool) { return 0, false }
