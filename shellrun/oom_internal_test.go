package shellrun

import "testing"

// TestRuntimeFault: a fault inside the Go runtime (the collector hit by
// RLIMIT_DATA) counts as memory; a fault in other code does not.
func TestRuntimeFault(t *testing.T) {
	gc := "SIGSEGV: segmentation violation\nPC=0x434f3d m=8 sigcode=1 addr=0x0\n\ngoroutine 0 gp=0x1 m=8 mp=0x2 [idle]:\nruntime.(*spanQueue).tryDrain(0x7f1000000400?)\n\t/usr/local/go/src/runtime/mgcmark_greenteagc.go:520 +0x5d\n"
	user := "SIGSEGV: segmentation violation\nPC=0x1 m=0 sigcode=1 addr=0x0\n\ngoroutine 1 gp=0x1 m=0 [running]:\nmvdan.cc/sh/v3/interp.(*Runner).stmt(0x1)\n"
	panicked := "panic: boom\n\ngoroutine 1 [running]:\nruntime.gopanic()\n"
	if !runtimeFault(gc) || runtimeFault(user) || runtimeFault(panicked) {
		t.Fatalf("gc %v user %v panic %v", runtimeFault(gc), runtimeFault(user), runtimeFault(panicked))
	}
}
