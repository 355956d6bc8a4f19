package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestHome(t *testing.T) {
	cwd := t.TempDir()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"JAZZ_HOME absolute, trimmed", map[string]string{"JAZZ_HOME": "  /srv/jazz  ", "HOME": "/home/u"}, "/srv/jazz", false},
		{"JAZZ_HOME tilde", map[string]string{"JAZZ_HOME": "~/j", "HOME": "/home/u"}, "/home/u/j", false},
		{"JAZZ_HOME bare tilde", map[string]string{"JAZZ_HOME": "~", "HOME": "/home/u"}, "/home/u", false},
		{"JAZZ_HOME relative", map[string]string{"JAZZ_HOME": "state/../jz", "HOME": "/home/u"}, filepath.Join(cwd, "jz"), false},
		{"JAZZ_HOME tilde without home", map[string]string{"JAZZ_HOME": "~/j"}, "", true},
		{"default", map[string]string{"HOME": "/home/u"}, "/home/u/.jazz", false},
		{"blank JAZZ_HOME means default", map[string]string{"JAZZ_HOME": "   ", "HOME": "/home/u"}, "/home/u/.jazz", false},
		{"no OS home", map[string]string{}, "", true},
		{"relative OS home", map[string]string{"HOME": "."}, "", true},
		{"relative OS home, tilde", map[string]string{"HOME": ".", "JAZZ_HOME": "~/.jazz"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Home(env(tt.env), cwd)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("Home = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckWritable(t *testing.T) {
	t.Run("creates a missing home", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "a", "b")
		if err := CheckWritable(home); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(home)
		if len(entries) != 0 {
			t.Fatalf("probe left files behind: %v", entries)
		}
	})
	t.Run("parent is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		home := filepath.Join(f, "home")
		err := CheckWritable(home)
		wantNotWritable(t, err, home)
	})
	t.Run("read-only directory", func(t *testing.T) {
		home := t.TempDir()
		if os.Geteuid() == 0 {
			// root ignores mode bits; sysfs refuses new files even to root.
			if runtime.GOOS != "linux" {
				t.Skip("needs a read-only directory")
			}
			home = "/sys"
		} else {
			os.Chmod(home, 0o500)
			t.Cleanup(func() { os.Chmod(home, 0o700) })
		}
		err := CheckWritable(home)
		wantNotWritable(t, err, home)
	})
}

func TestCheckHomeAccess(t *testing.T) {
	t.Run("creates a missing home and writes nothing", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "a", "b")
		if err := CheckHomeAccess(home); err != nil {
			t.Fatal(err)
		}
		if entries, err := os.ReadDir(home); err != nil || len(entries) != 0 {
			t.Fatalf("home %v, entries %v", err, entries)
		}
	})
	t.Run("parent is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		home := filepath.Join(f, "home")
		wantNotWritable(t, CheckHomeAccess(home), home)
	})
	t.Run("read-only directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			// root ignores mode bits: e2e's TestHeadlessReadOnlyHome
			// mounts a read-only home instead.
			t.Skip("root may write any directory")
		}
		home := t.TempDir()
		os.Chmod(home, 0o500)
		t.Cleanup(func() { os.Chmod(home, 0o700) })
		wantNotWritable(t, CheckHomeAccess(home), home)
	})
	t.Run("a home others may write is refused", func(t *testing.T) {
		home := t.TempDir()
		os.Chmod(home, 0o777)
		if err := CheckHomeAccess(home); err == nil || errors.Is(err, ErrNotWritable) {
			t.Fatalf("err = %v, want the ownership refusal", err)
		}
		if a, b := CheckHomeAccess(home), CheckHome(home); a == nil || b == nil || a.Error() != b.Error() {
			t.Errorf("CheckHomeAccess says %v, CheckHome %v", a, b)
		}
	})
}

func wantNotWritable(t *testing.T, err error, home string) {
	t.Helper()
	if err == nil {
		t.Fatal("CheckWritable succeeded on an unwritable home")
	}
	if !errors.Is(err, ErrNotWritable) {
		t.Errorf("error does not match ErrNotWritable: %v", err)
	}
	msg := err.Error()
	prefix := "JAZZ_HOME " + home + " is not writable: "
	suffix := ". jazz writes agents, history and work state there; copy seed config into a writable directory (for example a tmpfs) and point JAZZ_HOME at it."
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) || strings.Count(msg, home) != 1 {
		t.Errorf("message = %q", msg)
	}
}

// fixture is a JAZZ_HOME and a project directory in a temp dir.
type fixture struct {
	home, cwd string
	env       map[string]string
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	f := &fixture{home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project"), env: map[string]string{}}
	os.MkdirAll(f.home, 0o700)
	os.MkdirAll(filepath.Join(f.cwd, ".jazz"), 0o700)
	return f
}

func (f *fixture) write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f *fixture) global(t *testing.T, content string) string {
	return f.write(t, filepath.Join(f.home, "config.json"), content)
}

func (f *fixture) project(t *testing.T, content string) string {
	return f.write(t, filepath.Join(f.cwd, ".jazz", "config.json"), content)
}

// trust records the project directory as trusted with its config as now.
func (f *fixture) trust(t *testing.T) {
	t.Helper()
	if _, _, err := (&TrustStore{Home: f.home}).Trust(context.Background(), f.cwd, f.cwd); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) load(t *testing.T, flag string) (*Config, []string, error) {
	t.Helper()
	return Load(context.Background(), LoadOptions{Home: f.home, ConfigFlag: flag, Getenv: env(f.env), Cwd: f.cwd})
}

func TestLoadDefaults(t *testing.T) {
	f := newFixture(t)
	cfg, warns, err := f.load(t, "")
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
	if cfg.MaxIterations != 100 || cfg.MaxSubagentIterations != 30 || cfg.MaxSubagentDepth != 3 || cfg.MaxRetries != 10 {
		t.Errorf("budgets = %d %d %d %d", cfg.MaxIterations, cfg.MaxSubagentIterations, cfg.MaxSubagentDepth, cfg.MaxRetries)
	}
	if cfg.Storage != (Storage{Type: "file", Path: f.home}) || cfg.Logging != (Logging{Level: "info", Format: "plain"}) {
		t.Errorf("storage %+v logging %+v", cfg.Storage, cfg.Logging)
	}
	if cfg.Output.Streaming.Enabled != StreamingAuto || cfg.Context != (Context{0.7, 0.8}) {
		t.Errorf("output %+v context %+v", cfg.Output, cfg.Context)
	}
	if cfg.AutoApprovedCommands == nil || len(cfg.AutoApprovedCommands) != 0 || len(cfg.Files) != 0 {
		t.Errorf("autoApproved %#v files %v", cfg.AutoApprovedCommands, cfg.Files)
	}
	if cfg.Telemetry.StoragePath != filepath.Join(f.home, "telemetry") || cfg.Telemetry.Enabled != nil || cfg.Telemetry.OTLP.TimeoutMs != 10000 {
		t.Errorf("telemetry %+v", cfg.Telemetry)
	}
}

func TestLoadConfigFlag(t *testing.T) {
	tests := []struct {
		name    string
		content *string // nil: file absent
		wantErr string
	}{
		{"missing", nil, "does not exist"},
		{"empty", new(" \n"), "is empty"},
		{"array", new(`[1,2]`), "must hold a JSON object, not an array"},
		{"bad json", new(`{"maxRetries": }`), "is not valid JSON"},
		{"trailing data", new(`{} {}`), "trailing data"},
		{"object", new(`{"maxRetries": 2}`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.global(t, `{"maxRetries": 7}`) // must be ignored: the flag wins
			path := filepath.Join(t.TempDir(), "custom.json")
			if tt.content != nil {
				f.write(t, path, *tt.content)
			}
			cfg, _, err := f.load(t, path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want one naming %s and saying %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil || cfg.MaxRetries != 2 || len(cfg.Files) != 1 || cfg.Files[0] != path {
				t.Fatalf("err %v cfg %+v", err, cfg)
			}
		})
	}
	t.Run("relative to cwd", func(t *testing.T) {
		f := newFixture(t)
		f.write(t, filepath.Join(f.cwd, "my.json"), `{"maxIterations": 5}`)
		cfg, _, err := f.load(t, "my.json")
		if err != nil || cfg.MaxIterations != 5 {
			t.Fatalf("err %v cfg %+v", err, cfg)
		}
	})
}

func TestLoadGlobalSources(t *testing.T) {
	f := newFixture(t)
	f.global(t, `{"maxRetries": 7}`)
	cfg, _, err := f.load(t, "")
	if err != nil || cfg.MaxRetries != 7 {
		t.Fatalf("JAZZ_HOME/config.json: err %v retries %d", err, cfg.MaxRetries)
	}
	alt := f.write(t, filepath.Join(t.TempDir(), "alt.json"), `{"maxRetries": 3}`)
	f.env["JAZZ_CONFIG_PATH"] = alt
	cfg, _, err = f.load(t, "")
	if err != nil || cfg.MaxRetries != 3 {
		t.Fatalf("JAZZ_CONFIG_PATH: err %v retries %d", err, cfg.MaxRetries)
	}
	f.env["JAZZ_CONFIG_PATH"] = filepath.Join(t.TempDir(), "absent.json")
	cfg, _, err = f.load(t, "")
	if err != nil || cfg.MaxRetries != 10 {
		t.Fatalf("absent JAZZ_CONFIG_PATH is optional (and replaces the home file): err %v retries %d", err, cfg.MaxRetries)
	}
	f.env["JAZZ_CONFIG_PATH"] = ""
	f.global(t, `{"maxRetries": `)
	if _, _, err := f.load(t, ""); err == nil || !strings.Contains(err.Error(), filepath.Join(f.home, "config.json")) {
		t.Fatalf("malformed home config: err %v", err)
	}
}

func TestLoadMerge(t *testing.T) {
	f := newFixture(t)
	f.global(t, `{
		"storage": {"type": "file", "path": "/global/store"},
		"maxIterations": 50,
		"autoApprovedCommands": ["git status", "ls"],
		"llm": {"openai": {"api_key": "sk-global"}, "google": {"api_key": "g-key"}, "ollama": {"base_url": "http://o:11434"}},
		"output": {"streaming": {"enabled": false}, "showMetrics": true},
		"context": {"warnThresholdRatio": 0.5, "compactThresholdRatio": 0.6},
		"telemetry": {"enabled": true, "otlp": {"endpoint": "http://collector:4318", "headers": {"authorization": "Bearer x"}}},
		"pricing": {"openai/gpt-4o": {"input": 1, "output": 2}, "google/gemini-2.5-pro": {"input": 1.25, "output": 10}},
		"mcpServers": {"fs": {"command": "mcp-fs", "enabled": true}},
		"somethingNew": {"a": 1}
	}`)
	f.project(t, `{
		"storage": {"path": "/project/store"},
		"autoApprovedCommands": ["npm test"],
		"llm": {"openai": {"base_url": "http://proxy/v1"}},
		"output": {"streaming": {"enabled": "true"}},
		"telemetry": {"otlp": {"serviceName": "proj"}},
		"mcpServers": {"fs": {"enabled": false}}
	}`)
	// Merging is about a file the user trusts; untrusted files: trust_test.go.
	f.trust(t)
	cfg, warns, err := f.load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], `"storage" is ignored`) || !strings.Contains(warns[1], "somethingNew is not a key jazz knows") {
		t.Errorf("warnings = %q", warns)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"project storage ignored", cfg.Storage.Path == "/global/store"},
		{"scalar survives", cfg.MaxIterations == 50},
		{"array replaced whole", strings.Join(cfg.AutoApprovedCommands, "|") == "npm test"},
		{"llm merged per provider, provider replaced whole", cfg.LLM["openai"] == (LLMSettings{BaseURL: "http://proxy/v1"})},
		{"llm other provider kept", cfg.LLM["ollama"].BaseURL == "http://o:11434"},
		{"google renamed to gemini", cfg.LLM["gemini"].APIKey == "g-key" && cfg.LLM["google"] == (LLMSettings{})},
		{"output.streaming deep", cfg.Output.Streaming.Enabled == StreamingTrue && strings.Contains(string(cfg.Raw["output"]), `"showMetrics":true`)},
		{"context survives a project file without it", cfg.Context == (Context{0.5, 0.6})},
		{"telemetry.otlp deep", cfg.Telemetry.OTLP.Endpoint == "http://collector:4318" && cfg.Telemetry.OTLP.ServiceName == "proj" && cfg.Telemetry.OTLP.Headers["authorization"] == "Bearer x"},
		{"telemetry scalar kept", cfg.Telemetry.Enabled != nil && *cfg.Telemetry.Enabled},
		{"pricing typed", cfg.Pricing["openai/gpt-4o"].Input != nil && *cfg.Pricing["openai/gpt-4o"].Input == 1},
		{"pricing google renamed", cfg.Pricing["gemini/gemini-2.5-pro"].Output != nil},
		{"mcp enabled override merged per server", strings.Contains(string(cfg.Raw["mcpServers"]), `"command":"mcp-fs"`) && strings.Contains(string(cfg.Raw["mcpServers"]), `"enabled":false`)},
		{"unknown keys kept raw", string(cfg.Raw["somethingNew"]) == `{"a":1}`},
		{"files in order", len(cfg.Files) == 2 && strings.HasSuffix(cfg.Files[1], filepath.Join(".jazz", "config.json"))},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("failed; cfg = %+v", cfg)
			}
		})
	}
}

func TestLoadDebug(t *testing.T) {
	f := newFixture(t)
	f.global(t, `{"logging": {"level": "warn"}}`)
	cfg, _, err := Load(context.Background(), LoadOptions{Home: f.home, Getenv: env(nil), Cwd: f.cwd, Debug: true})
	if err != nil || cfg.Logging.Level != "debug" || cfg.Logging.Format != "plain" {
		t.Fatalf("err %v logging %+v", err, cfg.Logging)
	}
}

func TestLoadValidation(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		wantErr  string
		wantWarn string
		check    func(*Config) bool
	}{
		{"depth negative", `{"maxSubagentDepth": -1}`, "maxSubagentDepth must be between 0", "", nil},
		{"depth absurd", `{"maxSubagentDepth": 11}`, "maxSubagentDepth must be between 0 (no delegation) and 10, got 11", "", nil},
		{"depth zero ok", `{"maxSubagentDepth": 0}`, "", "", func(c *Config) bool { return c.MaxSubagentDepth == 0 }},
		{"depth ten ok", `{"maxSubagentDepth": 10}`, "", "", func(c *Config) bool { return c.MaxSubagentDepth == 10 }},
		{"iterations not a number", `{"maxIterations": "many"}`, "maxIterations must be an integer, not a string", "", nil},
		{"iterations fractional", `{"maxIterations": 2.5}`, "maxIterations must be an integer, got 2.5", "", nil},
		{"iterations floored at 1", `{"maxIterations": 0}`, "", "", func(c *Config) bool { return c.MaxIterations == 1 }},
		{"retries floored at 0", `{"maxRetries": -3}`, "", "", func(c *Config) bool { return c.MaxRetries == 0 }},
		{"autoApproved not array", `{"autoApprovedCommands": "git"}`, "autoApprovedCommands must be an array of strings", "", nil},
		{"autoApproved non-string", `{"autoApprovedCommands": ["git", 3]}`, "autoApprovedCommands [1] must be a string", "", nil},
		{"autoApproved trimmed", `{"autoApprovedCommands": [" git status ", ""]}`, "", "", func(c *Config) bool {
			return len(c.AutoApprovedCommands) == 1 && c.AutoApprovedCommands[0] == "git status"
		}},
		{"header not string", `{"telemetry": {"otlp": {"headers": {"x-token": 5}}}}`, "telemetry.otlp.headers.x-token must be a string", "", nil},
		{"compact ratio too high", `{"context": {"compactThresholdRatio": 0.97}}`, "", "context.compactThresholdRatio", func(c *Config) bool { return c.Context == (Context{0.7, 0.8}) }},
		{"warn above compact", `{"context": {"warnThresholdRatio": 0.85}}`, "", "context.warnThresholdRatio", func(c *Config) bool { return c.Context == (Context{0.7, 0.8}) }},
		{"warn default follows a low compact", `{"context": {"compactThresholdRatio": 0.5}}`, "", "", func(c *Config) bool { return c.Context == (Context{0.5, 0.5}) }},
		{"ratio not a number", `{"context": {"warnThresholdRatio": "x"}}`, "", "context.warnThresholdRatio must be a number", nil},
		{"ratio zero", `{"context": {"warnThresholdRatio": 0}}`, "", "context.warnThresholdRatio", nil},
		{"bad streaming value", `{"output": {"streaming": {"enabled": "sometimes"}}}`, "", "output.streaming.enabled", func(c *Config) bool { return c.Output.Streaming.Enabled == StreamingAuto }},
		{"negative price", `{"pricing": {"openai/x": {"input": -1, "output": 2}}}`, "", "pricing.openai/x.input", func(c *Config) bool {
			p := c.Pricing["openai/x"]
			return p.Input == nil && p.Output != nil && *p.Output == 2
		}},
		{"keep_alive number", `{"llm": {"ollama": {"keep_alive": -1}}}`, "", "", func(c *Config) bool { return c.LLM["ollama"].KeepAlive == "-1" }},
		{"llm entry not object", `{"llm": {"openai": "sk"}}`, "llm.openai must be an object", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			path := f.global(t, tt.content)
			cfg, warns, err := f.load(t, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want %q naming %s", err, tt.wantErr, path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(warns, "\n")
			if (tt.wantWarn == "") != (joined == "") || !strings.Contains(joined, tt.wantWarn) {
				t.Errorf("warnings = %q, want %q", warns, tt.wantWarn)
			}
			if tt.check != nil && !tt.check(cfg) {
				t.Errorf("check failed: %+v", cfg)
			}
		})
	}
}

func TestLoadRepairsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes")
	}
	f := newFixture(t)
	path := f.global(t, `{"llm": {"openai": {"api_key": "sk"}}}`)
	os.Chmod(path, 0o644)
	if _, warns, err := f.load(t, ""); err != nil || len(warns) != 0 {
		t.Fatalf("err %v warnings %v", err, warns)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %04o, want 0600", st.Mode().Perm())
	}
}

func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"maxIterations": 40, "llm": {"openai": {"api_key": "k"}}, "autoApprovedCommands": ["git status"]}`), 0o600)
	for b.Loop() {
		if _, _, err := Load(context.Background(), LoadOptions{Home: dir, Getenv: env(nil), Cwd: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
