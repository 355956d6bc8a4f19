package app

import (
	"context"
	"os"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/secrets"
)

// runSecrets is what the run knows of its own secrets: the provider keys
// and whatever else the environment, JAZZ_HOME, the config files read
// and the agent hold, the MCP definitions, the OTLP headers and the bus
// URL's credentials.
// Every tool result is redacted with it; the read tools refuse JAZZ_HOME
// whole and each config file elsewhere that holds a secret.
func runSecrets(ctx context.Context, o RunOptions) *secrets.Set {
	src := secrets.Sources{
		Environ:   os.Environ(),
		Documents: []any{o.Agent},
		Values:    secrets.Find(o.NATSURL),
		KeyFiles:  o.KeyFiles,
	}
	if c := o.Config; c != nil {
		src.Home = c.Home
		src.Files = c.Files
		// MCP definitions hold tokens (headers, env) whether or not this
		// run uses them: known, and guarded from the read tools.
		src.Files = append(append([]string(nil), src.Files...),
			config.ProjectMCP(userHome(getenvOf(o))), config.ProjectMCP(o.Cwd))
		src.Documents = append(src.Documents, c)
		src.Headers = c.Telemetry.OTLP.Headers
	}
	return secrets.Collect(ctx, src)
}
