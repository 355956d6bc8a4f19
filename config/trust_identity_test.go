//go:build unix

package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A trust record is of one directory, not of a path and some bytes: what
// a trusted config names (a server's script, a tool's program) lives
// beside it, so the same bytes in a directory made again at that path,
// owned by someone else, or writable by others, trust nothing.
func TestTrustBindsTheDirectoryItself(t *testing.T) {
	const cfg = `{"llm": {"openai": {"base_url": "http://x"}}}`
	const mcp = `{"mcpServers": {"srv": {"command": "./server.sh"}}}`
	cases := []struct {
		name   string
		change func(t *testing.T, f *fixture)
		want   string
	}{
		{"removed and made again with the same bytes", func(t *testing.T, f *fixture) {
			// Moved aside, not removed, while the new one is made: its
			// inode cannot be handed out again.
			if err := os.Rename(f.cwd, f.cwd+".old"); err != nil {
				t.Fatal(err)
			}
			f.project(t, cfg)
			f.write(t, ProjectMCP(f.cwd), mcp)
		}, "not the one you trusted"},
		{"writable by others", func(t *testing.T, f *fixture) {
			if err := os.Chmod(f.cwd, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable by group and others"},
		{"its .jazz writable by the group", func(t *testing.T, f *fixture) {
			if err := os.Chmod(filepath.Join(f.cwd, ".jazz"), 0o770); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(f.cwd, ".agents"), 0o770); err != nil {
				t.Fatal(err)
			}
		}, "writable by group"},
		{"given to another user", func(t *testing.T, f *fixture) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			for _, p := range []string{f.cwd, filepath.Join(f.cwd, ".jazz"), ProjectConfig(f.cwd), filepath.Join(f.cwd, ".agents"), ProjectMCP(f.cwd)} {
				if err := os.Chown(p, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			}
		}, "not the one you trusted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.project(t, cfg)
			f.write(t, ProjectMCP(f.cwd), mcp)
			f.trust(t)
			if got, _, _ := f.load(t, ""); got.LLM["openai"].BaseURL != "http://x" {
				t.Fatal("trusted config not applied before the change")
			}
			c.change(t, f)
			got, warns, err := f.load(t, "")
			if err != nil {
				t.Fatal(err)
			}
			if got.LLM["openai"].BaseURL != "" {
				t.Fatalf("the record still trusts the directory: base_url %q", got.LLM["openai"].BaseURL)
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "no longer trusted") || !strings.Contains(warns[0], c.want) {
				t.Fatalf("warnings %q, want one saying %q", warns, c.want)
			}
			servers, warns, err := LoadMCPServers(context.Background(), MCPSources{JazzHome: f.home, Cwd: f.cwd})
			if err != nil {
				t.Fatal(err)
			}
			if len(servers) != 0 || len(warns) != 1 || !strings.Contains(warns[0], c.want) {
				t.Fatalf("MCP servers %+v warnings %q: the project's servers still start", servers, warns)
			}
			if st := (&TrustStore{Home: f.home}).Status(context.Background(), mustRecord(t, f)); !strings.HasPrefix(st, TrustUnsafe+": ") {
				t.Fatalf("status %q, want %s", st, TrustUnsafe)
			}
		})
	}
}

func TestTrustRefusesADirectoryOthersCanWrite(t *testing.T) {
	f := newFixture(t)
	f.project(t, `{"maxIterations": 3}`)
	if err := os.Chmod(f.cwd, 0o777); err != nil {
		t.Fatal(err)
	}
	_, _, err := (&TrustStore{Home: f.home}).Trust(context.Background(), f.cwd, "/")
	if !errors.Is(err, ErrUnsafeProject) || !strings.Contains(err.Error(), "writable by group and others") {
		t.Fatalf("err = %v, want a refusal naming the mode", err)
	}
	if recs, _ := (&TrustStore{Home: f.home}).List(context.Background()); len(recs) != 0 {
		t.Fatalf("records %+v written anyway", recs)
	}
}

// A record from before identities were kept trusts nothing until the
// directory is trusted again.
func TestTrustRecordWithoutIdentityTrustsNothing(t *testing.T) {
	f := newFixture(t)
	f.project(t, `{"llm": {"openai": {"base_url": "http://x"}}}`)
	f.trust(t)
	store := &TrustStore{Home: f.home}
	if err := store.update(context.Background(), func(recs []TrustRecord) []TrustRecord {
		for i := range recs {
			recs[i].Identity = nil
		}
		return recs
	}); err != nil {
		t.Fatal(err)
	}
	got, warns, err := f.load(t, "")
	if err != nil || got.LLM["openai"].BaseURL != "" || len(warns) != 1 || !strings.Contains(warns[0], "older jazz") {
		t.Fatalf("err %v base %q warnings %q", err, got.LLM["openai"].BaseURL, warns)
	}
}

func mustRecord(t *testing.T, f *fixture) TrustRecord {
	t.Helper()
	recs, err := (&TrustStore{Home: f.home}).List(context.Background())
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v: %v", recs, err)
	}
	return recs[0]
}
