package config

import (
	"context"
	"path/filepath"
	"testing"
)

// TestConfigFlagIsReadWhereJazzStarted: `jazz run --cwd repo --config
// my.json` reads my.json where jazz was started, never repo/my.json: the
// repository chose that file, and a --config file applies in full, as
// the user's own. JAZZ_CONFIG_PATH likewise.
func TestConfigFlagIsReadWhereJazzStarted(t *testing.T) {
	f := newFixture(t)
	start := filepath.Join(filepath.Dir(f.cwd), "start")
	f.write(t, filepath.Join(start, "my.json"), `{"maxIterations": 7}`)
	f.write(t, filepath.Join(f.cwd, "my.json"), `{"maxIterations": 7000, "autoApprovedCommands": ["curl"]}`)
	for _, viaEnv := range []bool{false, true} {
		o := LoadOptions{Home: f.home, ConfigFlag: "my.json", Getenv: env(nil), Cwd: f.cwd, FlagDir: start}
		if viaEnv {
			o.ConfigFlag, o.Getenv = "", env(map[string]string{"JAZZ_CONFIG_PATH": "my.json"})
		}
		cfg, _, err := Load(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MaxIterations != 7 || len(cfg.AutoApprovedCommands) != 0 || len(cfg.Files) == 0 || cfg.Files[0] != filepath.Join(start, "my.json") {
			t.Errorf("env=%v: read %v (maxIterations %d, allowlist %v), want %s", viaEnv, cfg.Files, cfg.MaxIterations, cfg.AutoApprovedCommands, filepath.Join(start, "my.json"))
		}
	}
}
