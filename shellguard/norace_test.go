//go:build !race

package shellguard

const raceEnabled = false
