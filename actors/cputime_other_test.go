//go:build !unix

package actors_test

import "time"

// cpuTime is unknown here: the benchmark reports wall time only.
func cpuTime() time.Duration { return 0 }
