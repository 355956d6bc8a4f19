package isolate

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStart is the cost of one program start (/bin/true) without
// isolation and in the best mode this machine allows: what the
// namespaces, the fresh /proc and /dev and the covering mounts add to
// each execute_command, git call or custom tool.
func BenchmarkStart(b *testing.B) {
	var iso Isolator
	best := iso.Mode(context.Background())
	hide := []string{b.TempDir(), b.TempDir()}
	if best == None {
		b.Skipf("no isolation here: %s", iso.Why(context.Background()))
	}
	for _, m := range []Mode{None, best} {
		b.Run(m.String(), func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if err := Wrap(cmd, m, hide); err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
