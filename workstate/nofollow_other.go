//go:build !unix

package workstate

// noFollow: no O_NOFOLLOW here; the Lstat before each open stands in.
const noFollow = 0
