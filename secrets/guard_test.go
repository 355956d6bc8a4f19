package secrets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

// guardWorld is a JAZZ_HOME with a config, an agent and a credential file
// added after the Guard was designed, plus a config file elsewhere.
type guardWorld struct {
	root, home, extra, other string
	cfgFile                  *os.File
}

func newGuardWorld(t *testing.T) guardWorld {
	t.Helper()
	root := t.TempDir()
	w := guardWorld{root: root, home: filepath.Join(root, "jazzhome"), extra: filepath.Join(root, "etc", "jazz.json"), other: filepath.Join(root, "work")}
	write(t, filepath.Join(w.home, "config.json"), `{"llm":{"openai":{"api_key":"sk-guard0123456789abcd"}}}`)
	write(t, filepath.Join(w.home, "agents", "a.json"), `{}`)
	write(t, filepath.Join(w.home, "approvals", "seed.nk"), `SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY`)
	write(t, w.extra, `{}`)
	write(t, filepath.Join(w.other, "ok.txt"), "fine")
	write(t, filepath.Join(root, "jazzhome2", "config.json"), "{}") // a sibling sharing the prefix
	f, err := os.Open(filepath.Join(w.home, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w.cfgFile = f
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(w.other, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("/proc/self/environ", "env")
	link("/proc/self", "self")
	link("../../../../../../../../../proc/self/environ", "relenv")
	link("/dev/fd", "fds")
	link(w.home, "home")
	link(filepath.Join(w.home, "config.json"), "cfg")
	link(w.extra, "extra")
	link("loop2", "loop1")
	link("loop1", "loop2")
	if err := os.Link(filepath.Join(w.home, "config.json"), filepath.Join(w.other, "hard.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(w.extra, filepath.Join(w.other, "hardextra.json")); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestGuardRefuses(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	w := newGuardWorld(t)
	// The Guard is told JAZZ_HOME through a symlink: the rule holds for
	// both spellings.
	homeLink := filepath.Join(w.root, "home-link")
	if err := os.Symlink(w.home, homeLink); err != nil {
		t.Fatal(err)
	}
	g := secrets.NewGuard(homeLink, w.extra)
	pid, ppid := strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())
	fd := strconv.Itoa(int(w.cfgFile.Fd()))
	refused := []string{
		"/proc/self/environ", "/proc/self/./environ", "/proc//self/environ", "/proc/self/environ/",
		"/proc/thread-self/environ", "/proc/" + pid + "/environ", "/proc/" + ppid + "/environ", "/proc/1/environ",
		"/proc/self/mem", "/proc/self/cmdline", "/proc/self/maps", "/proc/self/fd/0", "/proc/self/fd/" + fd,
		"/proc/self/root/proc/self/environ", "/proc/self/cwd", "/proc/" + pid + "/task/" + pid + "/environ",
		"/proc/kcore", "/proc/kmsg", "/proc/net/unix", "/proc/mounts", "/dev/fd/" + fd, "/dev/stdin", "/dev/fd",
		"/tmp/../proc/self/environ", "/proc/self",
		filepath.Join(w.other, "env"), filepath.Join(w.other, "self", "environ"), filepath.Join(w.other, "relenv"),
		filepath.Join(w.other, "fds", fd), filepath.Join(w.other, "home"), filepath.Join(w.other, "home", "config.json"),
		filepath.Join(w.other, "cfg"), filepath.Join(w.other, "extra"), filepath.Join(w.other, "hard.json"),
		filepath.Join(w.other, "hardextra.json"),
		w.home, w.home + "/", filepath.Join(w.home, "config.json"), filepath.Join(w.home, "agents", "a.json"),
		filepath.Join(w.home, "approvals", "seed.nk"), filepath.Join(w.home, "agents", "..", "config.json"),
		filepath.Join(w.home, "not-yet-created.json"), homeLink, filepath.Join(homeLink, "config.json"), w.extra,
	}
	for _, p := range refused {
		err := g.Check(p)
		if !errors.Is(err, secrets.ErrRefused) {
			// A hard link has a name of its own: only the opened file's
			// identity gives it away.
			if f, oerr := g.Open(p); oerr == nil {
				f.Close()
				t.Errorf("%s: Check %v and Open succeeded", p, err)
			} else if !errors.Is(oerr, secrets.ErrRefused) {
				t.Errorf("%s: Check %v, Open %v; want ErrRefused", p, err, oerr)
			}
			continue
		}
		if !strings.HasPrefix(err.Error(), "Refused: "+p+" ") {
			t.Errorf("%s: message %q does not name the path", p, err)
		}
	}
	allowed := []string{
		"/proc", "/proc/cpuinfo", "/proc/meminfo", "/proc/sys/kernel/hostname", "/etc/hostname",
		filepath.Join(w.other, "ok.txt"), filepath.Join(w.root, "jazzhome2", "config.json"), w.root,
		"/PROC/self/environ", // Linux paths are case-sensitive: nothing there
	}
	for _, p := range allowed {
		if err := g.Check(p); err != nil {
			t.Errorf("%s: %v, want allowed", p, err)
		}
	}
	if f, err := g.Open(filepath.Join(w.other, "ok.txt")); err != nil {
		t.Errorf("open ok.txt: %v", err)
	} else {
		f.Close()
	}
	if err := g.Check(filepath.Join(w.other, "loop1")); err == nil || errors.Is(err, secrets.ErrRefused) {
		t.Errorf("a symlink loop: %v, want a loop error", err)
	}
}

// Excluded and Zones are what walks and recursive searches use.
func TestGuardZones(t *testing.T) {
	w := newGuardWorld(t)
	g := secrets.NewGuard(w.home, w.extra)
	for _, p := range []string{"/proc/1", "/proc/self", filepath.Join(w.home, "x"), w.extra} {
		if !g.Excluded(p) {
			t.Errorf("Excluded(%s) = false", p)
		}
	}
	for _, p := range []string{"/proc", "/proc/cpuinfo", filepath.Join(w.root, "jazzhome2"), w.other} {
		if g.Excluded(p) {
			t.Errorf("Excluded(%s) = true", p)
		}
	}
	zones := g.Zones()
	for _, z := range []string{"/proc", w.home, w.extra} {
		if !contains(zones, z) {
			t.Errorf("Zones() = %q, missing %s", zones, z)
		}
	}
	if secrets.NewGuard("").Excluded(w.home) {
		t.Error("a Guard without JAZZ_HOME protects a directory")
	}
}

// A file swapped between the path's judgement and the open is judged
// again by what was opened: whatever the swap puts there (a symlink or a
// hard link to a protected file, a symlink into /proc), Open reads
// nothing of it.
func TestGuardOpenJudgesWhatWasOpened(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	w := newGuardWorld(t)
	cfg := filepath.Join(w.home, "config.json")
	swaps := map[string]func(name string) error{
		"symlink to a JAZZ_HOME file":   func(name string) error { return os.Symlink(cfg, name) },
		"hard link to a JAZZ_HOME file": func(name string) error { return os.Link(cfg, name) },
		"hard link to an extra file":    func(name string) error { return os.Link(w.extra, name) },
		"symlink into /proc":            func(name string) error { return os.Symlink("/proc/self/environ", name) },
		"symlink to JAZZ_HOME's dir":    func(name string) error { return os.Symlink(w.home, name) },
	}
	for what, swap := range swaps {
		name := filepath.Join(w.other, "swap.txt")
		write(t, name, "fine")
		g := secrets.WithBeforeOpen(secrets.NewGuard(w.home, w.extra), func() {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
			if err := swap(name); err != nil {
				t.Fatal(err)
			}
		})
		f, err := g.Open(name)
		if err == nil {
			b := make([]byte, 64)
			n, _ := f.Read(b)
			f.Close()
			t.Errorf("%s: Open succeeded and read %q", what, b[:n])
		}
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing swapped: the file judged is the file read.
	name := filepath.Join(w.other, "ok.txt")
	f, err := secrets.WithBeforeOpen(secrets.NewGuard(w.home, w.extra), func() {}).Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	f.Close()
}
