package actors

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/tools"
)

// ceilingTools is a ceiling with pairs, single tools and MCP tools.
func ceilingTools(t *testing.T) *tools.Registry {
	t.Helper()
	h := func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("x") }
	single := func(name, level string) tools.Tool {
		return tools.Tool{Name: name, Level: level, Handler: h}
	}
	pair := func(name string) []tools.Tool {
		tw := tools.TwinName(name)
		return []tools.Tool{{Name: name, Level: messages.LevelHighRisk, Twin: tw, Handler: h}, {Name: tw, Level: messages.LevelHighRisk, Hidden: true, Handler: h}}
	}
	all := []tools.Tool{single("read_file", messages.LevelReadOnly), single("grep", messages.LevelReadOnly),
		single("mcp_gh_read_issue", messages.LevelReadOnly), single("mcp_gh_delete_repo", messages.LevelHighRisk), SubagentTool()}
	for _, n := range []string{"write_file", "execute_command", "git_push", "rm"} {
		all = append(all, pair(n)...)
	}
	reg, err := tools.NewRegistry(all...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// spellings are ways a person may write a deny entry meaning tool name
// (twin is its hidden half, "" for a single tool).
func spellings(rng *rand.Rand, name, twin string) []string {
	flip := func(s string) string {
		b := []byte(s)
		for i := range b {
			if rng.IntN(2) == 0 {
				b[i] = strings.ToUpper(string(b[i]))[0]
			}
		}
		return string(b)
	}
	pads := []string{" ", "\t", "\n", "  "}
	pad := func(s string) string { return pads[rng.IntN(len(pads))] + s + pads[rng.IntN(len(pads))] }
	cut := 1 + rng.IntN(len(name))
	q := []byte(name)
	q[rng.IntN(len(q))] = '?'
	out := []string{name, strings.ToUpper(name), flip(name), pad(name), pad(flip(name)),
		name[:cut] + "*", "*", "*" + name[len(name)-cut:], string(q)}
	if twin != "" {
		out = append(out, twin, flip(twin), pad(twin), twin[:1+rng.IntN(len(twin))]+"*")
	}
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		server, _, _ := strings.Cut(rest, "_")
		out = append(out, "mcp_"+server, "mcp_"+server+"_*", flip("mcp_"+server))
	}
	return out
}

// checkCeiling holds the invariants of any child registry: inside the
// ceiling, pairs whole, nothing a deny names.
func checkCeiling(t *testing.T, ceiling, got *tools.Registry, p personas.Persona) {
	t.Helper()
	for _, n := range got.Names() {
		ct, ok := ceiling.Lookup(n)
		if !ok {
			t.Fatalf("persona %+v: the child holds %q, which its ceiling lacks", p, n)
		}
		if ct.Hidden {
			continue
		}
		if ct.Twin != "" {
			if _, ok := got.Lookup(ct.Twin); !ok {
				t.Fatalf("persona %+v: %s without its twin", p, n)
			}
		}
		if p.Denies(n) || (ct.Twin != "" && p.Denies(ct.Twin)) {
			t.Fatalf("persona %+v: the child holds %s, which a deny entry names", p, n)
		}
	}
	for _, n := range got.Names() {
		if t2, _ := got.Lookup(n); t2.Hidden {
			found := false
			for _, v := range got.Visible() {
				found = found || v.Twin == n
			}
			if !found {
				t.Fatalf("persona %+v: the child holds the twin %s without its propose half", p, n)
			}
		}
	}
}

// TestChildRegistryHonoursEveryDenySpelling: however a deny entry spells
// a tool (its case, surrounding space, its hidden twin, a pattern, its
// MCP server), the child holds neither half of it. Without the matcher
// only the exact visible name denied anything.
func TestChildRegistryHonoursEveryDenySpelling(t *testing.T) {
	ceiling := ceilingTools(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		for _, v := range ceiling.Visible() {
			for _, sp := range spellings(rng, v.Name, v.Twin) {
				p := personas.Persona{Name: "p", Deny: []string{sp}}
				got := ChildRegistry(ceiling, p)
				for _, n := range []string{v.Name, v.Twin} {
					if _, held := got.Lookup(n); n != "" && held {
						t.Fatalf("deny %q: the child still holds %s (tools %v)", sp, n, got.Names())
					}
				}
				checkCeiling(t, ceiling, got, p)
			}
		}
	}
}

// TestChildRegistryInvariants: random tools and deny lists, drawn from
// real names, twins, names the ceiling lacks and their spellings, never
// give a child a tool outside the ceiling, half a pair, or a denied tool.
func TestChildRegistryInvariants(t *testing.T) {
	ceiling := ceilingTools(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var pool []string
	for _, n := range append(ceiling.Names(), "note", "execute_note", "mcp_fs_write", "http_request") {
		pool = append(pool, spellings(rng, n, "")...)
	}
	pick := func() []string {
		out := []string{}
		for range rng.IntN(4) {
			out = append(out, pool[rng.IntN(len(pool))])
		}
		return out
	}
	for range 5000 {
		p := personas.Persona{Name: "p", Deny: pick()}
		if rng.IntN(2) == 0 {
			p.Tools = pick()
		}
		if p.Validate() != nil {
			continue
		}
		checkCeiling(t, ceiling, ChildRegistry(ceiling, p), p)
	}
}

// TestChildRegistryUnreadablePersonaGetsNothing: a persona whose entries
// cannot name a tool (a look-alike letter, an inner space) is refused by
// Spawn; ChildRegistry alone gives it no tools rather than ignore them.
func TestChildRegistryUnreadablePersonaGetsNothing(t *testing.T) {
	ceiling := ceilingTools(t)
	for _, deny := range []string{"writе_file", "write file", "write_file\x00", "[w]rite_file"} {
		p := personas.Persona{Name: "p", Deny: []string{deny}}
		if got := ChildRegistry(ceiling, p).Names(); len(got) != 0 {
			t.Fatalf("deny %q: child holds %v, want nothing", deny, got)
		}
	}
	r := saNewRig(t, saOptions{script: `{"turns":[{"text":"x"}]}`, maxDepth: 3,
		personas: func(string) (personas.Persona, error) {
			return personas.Persona{Name: "odd", Deny: []string{"exеcute_command"}}, nil
		}})
	res := spawnSubagent(context.Background(), r.cfg.Env, json.RawMessage(`{"task":"t","persona":"odd"}`))
	if res.Success || !strings.Contains(res.Error, "deny[0]") {
		t.Fatalf("spawn with an unreadable persona = %+v, want it refused", res)
	}
}
