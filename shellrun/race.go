//go:build unix && race

package shellrun

// runnerEnv is the runner process's own environment. A race-enabled
// binary would otherwise sleep a second at every exit
// (GORACE atexit_sleep_ms defaults to 1000).
func runnerEnv() []string { return []string{"GORACE=atexit_sleep_ms=0"} }

// raceEnabled: the race runtime needs far more memory than RLIMIT_DATA
// tests allow.
const raceEnabled = true
