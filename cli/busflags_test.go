package cli_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/cli"
	"github.com/jazz-run/jazz/iostreams"
)

// TestBusFlagsEverywhere: every command that takes --nats-url has the
// whole credential and TLS set, each naming its environment variable in
// its help, so no command can fall behind the others.
func TestBusFlagsEverywhere(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := cli.NewRootCmd(cli.Deps{IO: io, Getenv: func(string) string { return "" }, Cwd: t.TempDir()})
	want := map[string]string{
		"nats-url": busclient.EnvURL, "creds": busclient.EnvCreds, "nkey": busclient.EnvNkey,
		"tls-ca": busclient.EnvCA, "tls-pin": busclient.EnvPin, "tls-cert": busclient.EnvCert, "tls-key": busclient.EnvKey,
	}
	var found []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flag("nats-url") != nil && c.HasParent() && (c.Runnable()) {
			found = append(found, c.CommandPath())
			for name, env := range want {
				f := c.Flag(name)
				if f == nil {
					t.Errorf("%s has --nats-url but no --%s", c.CommandPath(), name)
				} else if !strings.Contains(f.Usage, "env "+env) {
					t.Errorf("%s --%s: the help does not name %s: %q", c.CommandPath(), name, env, f.Usage)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	joined := strings.Join(found, "\n")
	for _, cmd := range []string{"jazz run", "jazz worker", "jazz workers", "jazz approvals list", "jazz approvals approve", "jazz approvals deny", "jazz approvals watch", "jazz bus init"} {
		if !strings.Contains(joined+"\n", cmd+"\n") {
			t.Errorf("%s has no bus flags; found:\n%s", cmd, joined)
		}
	}
}
