package bus

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/jazz-run/jazz"

// notYetMoved are packages that still import nats.go themselves; the list
// only shrinks (a listed package that no longer imports it fails too).
var notYetMoved = []string{}

// TestOnlyBusImportsTheNATSClient proves that no package outside bus/
// (and the test support in internal/testutil) imports nats.go or one of
// its subpackages (jetstream, micro), for every GOOS jazz builds on: the
// rest of jazz reaches NATS through bus's typed helpers. Tests may.
func TestOnlyBusImportsTheNATSClient(t *testing.T) {
	seen := map[string]bool{}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v", goos, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			pkg := fields[0]
			for _, imp := range fields[1:] {
				if imp == "github.com/nats-io/nats.go" || strings.HasPrefix(imp, "github.com/nats-io/nats.go/") {
					seen[pkg] = true
				}
			}
		}
	}
	if !seen[module+"/bus"] {
		t.Fatalf("the check saw no import of nats.go even in bus itself: it reads go list wrong (saw %v)", seen)
	}
	for pkg := range seen {
		switch {
		case pkg == module+"/bus", strings.HasPrefix(pkg, module+"/bus/"), pkg == module+"/internal/testutil":
		case slices.Contains(notYetMoved, pkg):
		default:
			t.Errorf("%s imports nats.go: reach NATS through bus instead", pkg)
		}
	}
	for _, pkg := range notYetMoved {
		if !seen[pkg] {
			t.Errorf("%s no longer imports nats.go: take it off notYetMoved", pkg)
		}
	}
}
