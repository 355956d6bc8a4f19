package shellguard

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// FuzzOracle is the differential oracle as a fuzz target: each input is a
// command (generated from the grammar in oraclegen_test.go, or taken
// verbatim when its first byte is odd); if the allowlist or the static
// read-only pass approves it, running it must change nothing and start
// nothing beyond what was approved. The corpus is in
// testdata/fuzz/FuzzOracle; .ci/run fuzzes it for a bounded time.
func FuzzOracle(f *testing.F) {
	o := startOracle(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd := genCommand(data)
		if _, problem := o.verdict(cmd); problem != "" {
			t.Fatalf("approved %q, and %s", cmd, problem)
		}
	})
}

// TestOracleSees proves the oracle can fail: its traps fire when run
// directly, and it sees writes, wrapped programs and git's own children.
func TestOracleSees(t *testing.T) {
	o := startOracle(t)
	cases := []struct {
		cmd  string
		want func(oracleResult) bool
	}{
		{"touch pwn", func(r oracleResult) bool { return strings.Contains(strings.Join(r.Changes, " "), "pwn") }},
		{"echo x > /tmp/pwn", func(r oracleResult) bool { return strings.Contains(strings.Join(r.Changes, " "), "/tmp/pwn") }},
		{"rm f", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"git --git-dir=evilbare status", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"HOME=./evilhome git status", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"git -C status tag x", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"sort {-o,pwn} f", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"env ls", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{"for PATH in ./bin; do ls; done", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"npx ls", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{"git -c alias.x='!true' x", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{"git rev-parse HEAD", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{`"ls /.bin/x"`, func(r oracleResult) bool { return len(r.Changes) > 0 && programsProblem(ByAllowlist, r) != "" }},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			r, err := o.run(tc.cmd)
			if err != nil || r.Err != "" {
				t.Fatalf("run: %v %s", err, r.Err)
			}
			if !tc.want(r) {
				t.Fatalf("the oracle did not see it: %+v", r)
			}
		})
	}
	// An embedded bare repository as the working directory: git refuses
	// it (HardenEnv), so its config runs nothing.
	if r, err := o.runIn("git status", "evilbare", nil); err != nil || len(r.Changes) > 0 || !strings.Contains(r.Stderr, "safe.bareRepository") {
		t.Fatalf("git status in evilbare: %v %+v", err, r)
	}
	// A nested repository's configuration runs its programs when git is
	// left to honour it.
	for _, cmd := range []string{"git status", "git diff"} {
		if r, err := o.runIn(cmd, "evilnest", nil); err != nil || len(r.Changes) == 0 {
			t.Fatalf("%s in evilnest ran no trap: %v %+v", cmd, err, r)
		}
	}
	// So does a submodule's, when .gitmodules has git look into it.
	if r, err := o.runIn("git status", "evilsuper", nil); err != nil || !strings.Contains(strings.Join(r.Changes, " "), "pwn-sub-clean") {
		t.Fatalf("git status in evilsuper ran no trap: %v %+v", err, r)
	}
	// And a read-only command changes nothing.
	for _, cmd := range []string{"git status", "git log -1 --stat", "ls -la", "cat f", "git diff"} {
		r, err := o.run(cmd)
		if err != nil || r.Err != "" || len(r.Changes) > 0 || programsProblem(ByStatic, r) != "" {
			t.Fatalf("%s: %v %+v", cmd, err, r)
		}
	}
}

// TestOracleGenerated runs the oracle over a fixed sample of generated
// commands in the ordinary test run, and reports the throughput. The
// corpus is not run again here: `go test` already runs every file of
// testdata/fuzz/FuzzOracle as a FuzzOracle seed.
func TestOracleGenerated(t *testing.T) {
	o := startOracle(t)
	rng := rand.New(rand.NewPCG(9, 9))
	n := 400
	if testing.Short() || raceEnabled {
		n = 40
	}
	start := time.Now()
	approved := 0
	check := func(cmd string) {
		ok, problem := o.verdict(cmd)
		if ok {
			approved++
		}
		if problem != "" {
			t.Errorf("approved %q, and %s", cmd, problem)
		}
	}
	for i := 0; i < n; i++ {
		data := make([]byte, 8+rng.IntN(40))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		data[0] &^= 1
		check(genCommand(data))
	}
	el := time.Since(start)
	total := n
	t.Logf("oracle: %d commands (%d approved and run) in %v: %.0f commands/s, %.0f approved/s",
		total, approved, el.Round(time.Millisecond), float64(total)/el.Seconds(), float64(approved)/el.Seconds())
}
