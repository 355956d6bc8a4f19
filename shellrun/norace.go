//go:build unix && !race

package shellrun

// runnerEnv is the runner process's own environment: none of jazz's (the
// command's comes in the request).
func runnerEnv() []string { return []string{} }

const raceEnabled = false
