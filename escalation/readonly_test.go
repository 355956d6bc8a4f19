package escalation

import "testing"

// TestWriteProtected: read-only is what the permission bits refuse this
// process, as the kernel judges without privilege, and no write bit at
// all for root too.
func TestWriteProtected(t *testing.T) {
	in7 := func(g uint32) bool { return g == 7 }
	for _, c := range []struct {
		perm, uid, gid uint32
		euid           int
		want           bool
	}{
		{0o444, 0, 0, 0, true},        // chmod a-w: root too
		{0o644, 1000, 1000, 0, false}, // root may write it
		{0o644, 1000, 1000, 1000, false},
		{0o444, 1000, 1000, 1000, true},
		{0o464, 1000, 7, 1000, true},  // the owner's bit counts for the owner
		{0o464, 1000, 7, 2000, false}, // the group's for a member
		{0o446, 1000, 7, 2000, true},  // not others' for a member
		{0o446, 1000, 8, 2000, false}, // others'
		{0o644, 1000, 8, 2000, true},
		{0o666, 1000, 8, -1, false},
	} {
		if got := protectedFor(c.perm, c.uid, c.gid, c.euid, in7); got != c.want {
			t.Errorf("mode %04o of %d:%d for user %d: read-only %v, want %v", c.perm, c.uid, c.gid, c.euid, got, c.want)
		}
	}
}
