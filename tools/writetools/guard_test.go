package writetools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/secrets"
)

// ownFiles is a run whose JAZZ_HOME and --config file hold a secret, and
// a workspace beside them with every way of naming them: a symlinked
// directory, a symlinked file, a hard link, a tree that holds JAZZ_HOME.
type ownFiles struct {
	*harness
	jazzHome, config string
}

func newOwnFiles(t *testing.T, secret string) *ownFiles {
	t.Helper()
	h := newHarness(t)
	jh := filepath.Join(h.home, ".jazz")
	must(t, os.MkdirAll(filepath.Join(jh, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(jh, "config.json"), []byte(`{"llm":{"openai":{"api_key":"`+secret+`"}}}`+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(jh, "agents", "dev.json"), []byte(`{"tools":["read_file"]}`+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(jh, "seed.nk"), []byte(secret+"\n"), 0o600))
	cfgDir := filepath.Join(h.root, "etc")
	must(t, os.Mkdir(cfgDir, 0o700))
	cfg := filepath.Join(cfgDir, "jazz.json")
	must(t, os.WriteFile(cfg, []byte(secret+"\n"), 0o600))
	h.env.JazzHome = jh
	h.env.Secrets = secrets.NewSet(nil, cfg)
	ws := filepath.Join(h.root, "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Symlink(jh, filepath.Join(ws, "docs")))
	must(t, os.Symlink(filepath.Join(jh, "config.json"), filepath.Join(ws, "notes.txt")))
	must(t, os.Symlink(cfg, filepath.Join(ws, "cfg.txt")))
	must(t, os.Link(filepath.Join(jh, "seed.nk"), filepath.Join(ws, "innocent.txt")))
	must(t, os.Link(cfg, filepath.Join(ws, "innocent2.txt")))
	h.env.WorkDir = ws
	return &ownFiles{harness: h, jazzHome: jh, config: cfg}
}

// ownCalls are file tool calls that name, in every spelling, a place
// holding jazz's own secrets or the policy it obeys.
func ownCalls(secretPrefix string) []struct {
	name string
	args map[string]any
} {
	edit := func(p string) map[string]any {
		return map[string]any{"path": p, "edits": []map[string]any{{"type": "replace_pattern", "pattern": "re:" + secretPrefix, "replacement": "x"}}}
	}
	type c = struct {
		name string
		args map[string]any
	}
	var out []c
	for _, p := range []string{
		"~/.jazz/config.json", "docs/config.json", "notes.txt", "innocent.txt", "innocent2.txt", "cfg.txt",
		"docs/../docs/seed.nk", "./docs/agents/dev.json", "../etc/jazz.json", "/proc/self/environ",
		"/proc/thread-self/environ", "/proc/self/cmdline", "/proc/1/environ",
	} {
		out = append(out,
			c{"edit_file", edit(p)},
			c{"write_file", map[string]any{"path": p, "content": "{}"}},
			c{"rm", map[string]any{"path": p}},
			c{"mv", map[string]any{"source": p, "destination": "stolen"}},
			c{"cp", map[string]any{"source": p, "destination": "stolen"}},
			c{"mv", map[string]any{"source": "mine.json", "destination": p, "force": true}},
			c{"cp", map[string]any{"source": "mine.json", "destination": p, "force": true}},
		)
	}
	for _, p := range []string{"docs/agents/evil.json", "~/.jazz/new/x.json", "docs/new.json"} {
		out = append(out,
			c{"write_file", map[string]any{"path": p, "content": `{"tools":["execute_command"]}`, "createDirs": true}},
			c{"mv", map[string]any{"source": "mine.json", "destination": p}},
			c{"cp", map[string]any{"source": "mine.json", "destination": p}},
		)
	}
	for _, p := range []string{"docs", "~/.jazz", "docs/agents", "~/.jazz/agents", "~/.jazz/", "docs/."} {
		out = append(out,
			c{"rm", map[string]any{"path": p, "recursive": true}},
			c{"mv", map[string]any{"source": p, "destination": "stolen"}},
			c{"cp", map[string]any{"source": p, "destination": "stolen"}},
			c{"mv", map[string]any{"source": "mine", "destination": p, "force": true}},
			c{"mkdir", map[string]any{"path": p + "/sub"}},
		)
	}
	// A tree that holds JAZZ_HOME, and one that holds the config file.
	out = append(out,
		c{"cp", map[string]any{"source": "~", "destination": "backup"}},
		c{"mv", map[string]any{"source": "~", "destination": "backup"}},
		c{"cp", map[string]any{"source": "../etc", "destination": "backup"}},
		c{"rm", map[string]any{"path": "../etc", "recursive": true}},
		c{"mkdir", map[string]any{"path": "~/.jazz"}},
	)
	return out
}

// TestOwnFilesAreNeitherReadNorChanged: no file tool call, however it
// names jazz's own files (JAZZ_HOME, the config file, /proc), gets an
// approval request, tells the model anything that depends on their
// content (a differential check: the same calls against two different
// secrets answer the same, so "pattern not found" is no oracle), or
// changes them, even when its twin is called with a fingerprint that
// matches (as an attacker who predicts it would).
func TestOwnFilesAreNeitherReadNorChanged(t *testing.T) {
	// Workspace entries that are links (or hard links) to jazz's files:
	// removing or replacing such a name, or moving it, leaves what it
	// points to alone, and may be approved.
	nameOnly := map[string]bool{"notes.txt": true, "innocent.txt": true, "innocent2.txt": true, "cfg.txt": true, "docs": true, "docs/.": true}
	acted := func(c struct {
		name string
		args map[string]any
	}) string {
		switch c.name {
		case "rm":
			return c.args["path"].(string)
		case "mv":
			if c.args["source"] != "mine.json" && c.args["source"] != "mine" {
				return c.args["source"].(string)
			}
			return c.args["destination"].(string)
		case "cp":
			if c.args["source"] == "mine.json" || c.args["source"] == "mine" {
				return c.args["destination"].(string)
			}
		}
		return ""
	}
	answers := map[string][]string{}
	for _, secret := range []string{"sk-AAAAAAAAAAAAAAAAAAAA", "sk-BBBBBBBBBBBBBBBBBBBB"} {
		for _, c := range ownCalls("sk-A") {
			// A fresh fixture each: an approved name-only call must not
			// change what the next call's names lead to.
			o := newOwnFiles(t, secret)
			o.write("ws/mine.json", `{"tools":["execute_command"]}`)
			o.write("ws/mine/x", "x")
			before := treeHash(t, o.jazzHome) + treeHash(t, filepath.Dir(o.config))
			r := o.call(c.name, c.args)
			if r.Approval != nil && !nameOnly[acted(c)] {
				t.Errorf("%s %v: asked for approval of a call on jazz's own files:\n%s", c.name, c.args, r.Approval.Message)
			}
			answer := strings.ReplaceAll(r.Error+" "+valueJSON(t, r.Value), o.root, "ROOT")
			if r.Approval != nil {
				answer += strings.ReplaceAll(r.Approval.Message+r.Approval.PreviewDiff, o.root, "ROOT")
			}
			key := c.name + valueJSON(t, c.args)
			answers[key] = append(answers[key], answer)
			// The twin, given the fingerprint its preview would have had.
			if args, ok := forgedTwinArgs(t, o.harness, c.name, c.args); ok {
				if r := o.run(context.Background(), "execute_"+c.name, args); r.Success && !nameOnly[acted(c)] {
					t.Errorf("execute_%s %s: succeeded on jazz's own files", c.name, args)
				}
			}
			if after := treeHash(t, o.jazzHome) + treeHash(t, filepath.Dir(o.config)); after != before {
				t.Errorf("%s %v: jazz's own files changed:\n%s\n---\n%s", c.name, c.args, before, after)
			}
			if c.name == "cp" {
				for _, n := range []string{"stolen", "backup"} {
					if _, err := os.Lstat(filepath.Join(o.env.WorkDir, n)); err == nil {
						t.Errorf("%s %v: %s was copied from jazz's own files", c.name, c.args, n)
					}
				}
			}
		}
	}
	for k, a := range answers {
		if a[0] != a[1] {
			t.Errorf("%s answers differently with another secret (an oracle):\n%s\n%s", k, a[0], a[1])
		}
	}
}

// forgedTwinArgs builds the twin's arguments for a call as its propose
// half would have, fingerprint included, by inspecting with no guard:
// what an attacker who knows the files could compute.
func forgedTwinArgs(t *testing.T, h *harness, name string, args map[string]any) (json.RawMessage, bool) {
	t.Helper()
	ctx, none := context.Background(), secrets.Guard{}
	state := ""
	switch name {
	case "write_file", "edit_file", "mkdir", "rm":
		mode, follow := readContent, true
		switch name {
		case "mkdir":
			mode, follow = identityOnly, false
		case "rm":
			mode, follow = objectState, false
		}
		tg, err := inspect(ctx, none, resolve(h.env, args["path"].(string)), follow, mode)
		if err != nil {
			return nil, false
		}
		state = tg.sealed(humanOnly(h.env, targetPaths(tg)...))
		tg.close()
	case "mv", "cp":
		s, d, err := move{name: name}.targets(ctx, none, resolve(h.env, args["source"].(string)), resolve(h.env, args["destination"].(string)))
		if err != nil {
			return nil, false
		}
		state = s.fingerprint() + " " + d.sealed(move{name: name}.humanOnly(h.env, s, d))
		s.close()
		d.close()
	}
	forged := map[string]any{"expectedState": state}
	for k, v := range args {
		forged[k] = v
	}
	raw, err := json.Marshal(forged)
	must(t, err)
	return raw, true
}
