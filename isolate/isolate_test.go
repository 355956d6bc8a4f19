package isolate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture plants a secret in a fake JAZZ_HOME and in a key file outside
// it, and a link to the home in a work directory.
type fixture struct {
	home, keyFile, work, secret, other string
}

func plant(t *testing.T) fixture {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fixture{home: filepath.Join(root, "jazzhome"), keyFile: filepath.Join(root, "keys.json"), work: filepath.Join(root, "work")}
	f.secret, f.other = token(t), token(t)
	for _, d := range []string{f.home, filepath.Join(f.home, "agents"), f.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.home, "config.json"), `{"api_key":"`+f.secret+`"}`)
	write(filepath.Join(f.home, "agents", "a.json"), `{"llmApiKeys":{"openai":"`+f.secret+`"}}`)
	write(f.keyFile, `{"password":"`+f.other+`"}`)
	if err := os.Symlink(f.home, filepath.Join(f.work, "link")); err != nil {
		t.Fatal(err)
	}
	return f
}

func token(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sk-" + hex.EncodeToString(b)
}

// attempts read the secrets every way a program could.
const attempts = `
cat "$H/config.json" "$H/agents/a.json" "$K"
cat link/config.json
cd "$H" && cat config.json; cd "$W"
grep -r sk- "$H" "$K" 2>/dev/null
for p in /proc/[0-9]*; do cat "$p/root$H/config.json" "$p/cwd/../jazzhome/config.json" 2>/dev/null; done
ln "$H/config.json" hard 2>/dev/null && cat hard
umount "$H" 2>/dev/null; umount -l "$H" 2>/dev/null; cat "$H/config.json"
for d in /dev/vd? /dev/sd? /dev/nvme?n? /dev/xvd?; do [ -b "$d" ] && head -c 100000000 "$d" | grep -a -o 'sk-[0-9a-f]*'; done
cat /proc/self/mountinfo >/dev/null
unshare -Urm sh -c 'umount -l "$H"; umount "$K"; umount -l /proc; umount -l /dev; cat "$H/config.json" "$K"; for p in /proc/[0-9]*; do cat "$p/root$H/config.json"; done' 2>/dev/null
echo done
`

func runIn(t *testing.T, f fixture, m Mode) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", attempts)
	cmd.Dir = f.work
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "H=" + f.home, "K=" + f.keyFile, "W=" + f.work}
	if err := Wrap(cmd, m, []string{f.home, f.keyFile}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mode %s: %v: %s", m, err, out)
	}
	return string(out)
}

func TestWrapHidesTheSecrets(t *testing.T) {
	var iso Isolator
	m := iso.Mode(context.Background())
	if m == None {
		t.Skipf("no isolation here: %s", iso.Why(context.Background()))
	}
	f := plant(t)
	// Control: the same attempts without isolation find both secrets.
	out := runIn(t, f, None)
	if !strings.Contains(out, f.secret) || !strings.Contains(out, f.other) {
		t.Fatalf("the control run did not see the secrets, so the test proves nothing:\n%s", out)
	}
	out = runIn(t, f, m)
	if !strings.HasSuffix(strings.TrimSpace(out), "done") {
		t.Fatalf("the attempts did not run to the end:\n%s", out)
	}
	if strings.Contains(out, f.secret) || strings.Contains(out, f.other) {
		t.Fatalf("a secret reached the program in mode %s:\n%s", m, out)
	}
}

// TestUnprivileged runs the same check as a user who is not root, where
// only an unprivileged user namespace can build the view.
func TestUnprivileged(t *testing.T) {
	if os.Getenv("JAZZ_ISOLATE_TEST_CHILD") != "" {
		t.Skip("already the unprivileged child")
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the test binary as another user, which needs root")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The binary must be reachable by the other user: copy it out.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyBin := filepath.Join(dir, "isolate.test")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyBin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, copyBin, "-test.run=^TestWrapHidesTheSecrets$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"JAZZ_ISOLATE_TEST_CHILD=1", "PATH=/usr/bin:/bin", "HOME=/", "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SKIP") {
		t.Skipf("no unprivileged user namespaces here:\n%s", out)
	}
	if !strings.Contains(string(out), "--- PASS: TestWrapHidesTheSecrets") {
		t.Fatalf("as uid 65534:\n%s", out)
	}
}

// TestRelativeHidePaths: a relative path to hide is the file jazz itself
// opens, relative to jazz's working directory, however far the program's
// own directory is from it. The trampoline starts in the program's
// directory, so resolved there it would name another file and hide
// nothing.
func TestRelativeHidePaths(t *testing.T) {
	var iso Isolator
	m := iso.Mode(context.Background())
	if m == None {
		t.Skipf("no isolation here: %s", iso.Why(context.Background()))
	}
	f := plant(t)
	// jazz runs in the key file's directory and names it relatively; the
	// program starts in the work directory below.
	t.Chdir(filepath.Dir(f.keyFile))
	rel := filepath.Base(f.keyFile)
	// A file of the same name where the program starts: resolved against
	// the program's directory, the relative path would cover this decoy.
	decoy := filepath.Join(f.work, rel)
	if err := os.WriteFile(decoy, []byte("decoy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `cat "$K"; cat "$D"; echo done`)
	cmd.Dir = f.work
	cmd.Env = []string{"PATH=/usr/bin:/bin", "K=" + f.keyFile, "D=" + decoy}
	if err := Wrap(cmd, m, []string{rel}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(string(out), f.other) {
		t.Fatalf("the key file named by a relative path reached the program:\n%s", out)
	}
	if !strings.Contains(string(out), "decoy") || !strings.HasSuffix(strings.TrimSpace(string(out)), "done") {
		t.Fatalf("the program did not run as expected:\n%s", out)
	}
}

// TestWrapRefusesAHiddenWorkingDirectory: a program told to start inside
// a hidden directory would find it empty; Wrap says why instead, and
// cmd.Start fails with that reason even for a caller that ignores Wrap's
// answer. Covering sees through symlinks.
func TestWrapRefusesAHiddenWorkingDirectory(t *testing.T) {
	f := plant(t)
	inside := filepath.Join(f.home, "agents")
	via := filepath.Join(f.work, "link", "agents") // link -> home
	for _, dir := range []string{f.home, inside, via} {
		if got := Covering(dir, []string{f.keyFile, f.home}); got != f.home {
			t.Errorf("Covering(%s) = %q, want %s", dir, got, f.home)
		}
		cmd := exec.Command("/bin/true")
		cmd.Dir = dir
		if err := Wrap(cmd, Namespaces, []string{f.home}); err == nil || !strings.Contains(err.Error(), "is inside "+f.home) {
			t.Fatalf("Wrap in %s: %v", dir, err)
		}
		if err := cmd.Start(); err == nil {
			_ = cmd.Wait()
			t.Fatalf("started in %s", dir)
		}
	}
	for _, dir := range []string{f.work, filepath.Dir(f.home), f.home + "x"} {
		if got := Covering(dir, []string{f.keyFile, f.home}); got != "" {
			t.Errorf("Covering(%s) = %q, want none", dir, got)
		}
	}
}
