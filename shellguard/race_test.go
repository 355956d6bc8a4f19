//go:build race

package shellguard

// raceEnabled: the race detector slows the oracle child tenfold, so the
// ordinary test run samples fewer generated commands.
const raceEnabled = true
