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
	for _, c := range oracleAttacks {
		f.Add(append([]byte{1}, c...))
	}
	o := startOracle(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd := genCommand(data)
		if _, problem := o.verdict(cmd); problem != "" {
			t.Fatalf("approved %q, and %s", cmd, problem)
		}
	})
}

// oracleAttacks are commands of every class issue 9 names, kept as seeds.
var oracleAttacks = []string{
	"git -C status tag x", "git -C evilbare status", "git -c core.fsmonitor='touch pwn' status",
	"git --git-dir=evilbare status", "git --exec-path=./bin status", "git --config-env=core.fsmonitor=EVIL status",
	"HOME=./evilhome git status", "XDG_CONFIG_HOME=./evilhome/.config git status", "GIT_DIR=evilbare git status",
	"sort {-o,pwn} f", "sort -{o,}pwn f", "sort * ", "ls; sort --o=pwn f", "sort --outp=pwn f", "sort -uopwn f",
	"npx ls", "bunx cat f", "node_modules/.bin/ls", "./bin/ls", "PATH=./bin:$PATH ls", "\\ls -la",
	"rm -v -r dir", "find . -delete", "find . -fprint pwn", "sed -n 'w pwn' f", "sed 's/a/b/w pwn' f",
	"awk 'BEGIN{system(\"touch pwn\")}'", "tree -o pwn", "tree -Ro pwn", "uniq f pwn", "date 01010000",
	"git log --output=pwn", "git diff --o=pwn", "git log --format=%G?", "git grep -Otouch x",
	"echo x > pwn", "cat f >> pwn", "ls &>pwn", "git status && touch pwn", "ls | tee pwn",
	"LANG=C ls -la", "git status", "git --no-pager log -1 --stat", "sed -n 1p f", "awk '{print $1}' a.txt",
	"grep -rn a .", "find . -name '*.go' -print", "head -1 f | wc -l", "cat ~/.keep", "ls ~",
	"for x in -o pwn; do sort $x f; done", "x=-opwn; sort $x f", "sort ${x:--opwn} f", "cat <<EOF\n$(touch pwn)\nEOF",
	"tail -f f", "rg --pre ./bin/ls a", "file -C -m f", "sed -f script.sed f", "awk -f prog.awk",
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
		{"git -C evilbare status", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"HOME=./evilhome git status", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"git -C status tag x", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"sort {-o,pwn} f", func(r oracleResult) bool { return len(r.Changes) > 0 }},
		{"env ls", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{"git -c alias.x='!true' x", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
		{"git log -1", func(r oracleResult) bool { return programsProblem(ByAllowlist, r) != "" }},
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
	// And a read-only command changes nothing.
	for _, cmd := range []string{"git status", "git log -1 --stat", "ls -la", "cat f", "git diff"} {
		r, err := o.run(cmd)
		if err != nil || r.Err != "" || len(r.Changes) > 0 || programsProblem(ByStatic, r) != "" {
			t.Fatalf("%s: %v %+v", cmd, err, r)
		}
	}
}

// TestOracleGenerated runs the oracle over the seeds and a fixed sample
// of generated commands in the ordinary test run, and reports the
// throughput.
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
	for _, c := range oracleAttacks {
		check(c)
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
	total := n + len(oracleAttacks)
	t.Logf("oracle: %d commands (%d approved and run) in %v: %.0f commands/s, %.0f approved/s",
		total, approved, el.Round(time.Millisecond), float64(total)/el.Seconds(), float64(approved)/el.Seconds())
}
