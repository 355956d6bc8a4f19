package writetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools"
)

// harness runs the real tools through a real registry, so every call's
// arguments pass the schema first, as in production.
type harness struct {
	t    *testing.T
	reg  *tools.Registry
	env  *tools.Env
	root string // a temp dir; the agent's cwd
	home string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	reg, err := tools.NewRegistry(Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	must(t, os.Mkdir(home, 0o755))
	return &harness{t: t, reg: reg, root: root, home: home,
		env: &tools.Env{AgentID: "a", ConversationID: "c", Home: home, WorkDir: root}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// call validates args against the tool's schema and runs its handler.
func (h *harness) call(name string, args any) tools.Result {
	h.t.Helper()
	return h.callCtx(context.Background(), name, args)
}

// callCtx is call under ctx.
func (h *harness) callCtx(ctx context.Context, name string, args any) tools.Result {
	h.t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		raw, err = json.Marshal(args)
		must(h.t, err)
	}
	if err := h.reg.Validate(name, raw); err != nil {
		h.t.Fatalf("%s args %s: %v", name, raw, err)
	}
	return h.run(ctx, name, raw)
}

// run runs a handler on arguments already validated.
func (h *harness) run(ctx context.Context, name string, raw json.RawMessage) tools.Result {
	h.t.Helper()
	tool, ok := h.reg.Lookup(name)
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	return tool.Handler(ctx, h.env, raw)
}

// propose calls a propose half and insists on an approval request.
func (h *harness) propose(name string, args any) *tools.Result {
	h.t.Helper()
	r := h.call(name, args)
	if r.Approval == nil {
		h.t.Fatalf("%s: no approval request: %+v", name, r)
	}
	if r.Success || r.Error != "Approval required: "+name+" requires user confirmation." {
		h.t.Fatalf("%s: bad approval result: success=%v error=%q", name, r.Success, r.Error)
	}
	if r.Approval.ExecuteToolName != "execute_"+name {
		h.t.Fatalf("twin name %q", r.Approval.ExecuteToolName)
	}
	return &r
}

// approve runs the twin with exactly the executeArgs, as the gate does.
func (h *harness) approve(r *tools.Result) tools.Result {
	h.t.Helper()
	return h.call(r.Approval.ExecuteToolName, r.Approval.ExecuteArgs)
}

// approveCtx is approve with the twin under ctx.
func (h *harness) approveCtx(ctx context.Context, r *tools.Result) tools.Result {
	h.t.Helper()
	return h.callCtx(ctx, r.Approval.ExecuteToolName, r.Approval.ExecuteArgs)
}

func (h *harness) path(rel string) string { return filepath.Join(h.root, rel) }

func (h *harness) write(rel, content string) string {
	h.t.Helper()
	p := h.path(rel)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(h.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.path(rel))
	must(h.t, err)
	return string(b)
}

// treeHash fingerprints everything under dir: names, modes, sizes, mtimes,
// contents and link targets.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	return hashTree(t, dir, true)
}

// contentHash is treeHash without directories' times, which a temporary
// file created and removed again changes.
func contentHash(t *testing.T, dir string) string {
	t.Helper()
	return hashTree(t, dir, false)
}

func hashTree(t *testing.T, dir string, dirTimes bool) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.IsDir() && !dirTimes {
			line = fmt.Sprintf("%s %s", p, fi.Mode())
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	must(t, err)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func valueJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

type envForBench struct{ env *tools.Env }

func (e *envForBench) get(dir string) *tools.Env {
	if e.env == nil {
		e.env = &tools.Env{WorkDir: dir, Home: dir}
	}
	return e.env
}
