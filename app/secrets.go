package app

import (
	"context"
	"os"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider/registry"
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
		Values:    append(secrets.Find(o.NATSURL), providerKeys(getenvOf(o))...),
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

// redactedError is an error whose text had the run's secrets replaced;
// errors.Is and errors.As still see the original chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError replaces set's secrets in err's text.
func redactError(set *secrets.Set, err error) error {
	if err == nil || set == nil {
		return err
	}
	msg := err.Error()
	if clean := set.Redact(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// redactFinished replaces set's secrets in every string of f: its error,
// answer and transcript, before they are printed or saved.
func redactFinished(set *secrets.Set, f messages.RunFinished) messages.RunFinished {
	out, ok := secrets.RedactValue(set, f)
	if !ok {
		return messages.RunFinished{Place: f.Place, Error: secrets.Placeholder}
	}
	return out
}

// redactingPublisher passes the run's RunFinished on with set's secrets
// replaced: whoever watches the bus (another runner, an approver) reads
// how the run ended, never the key a provider's error echoed. Events
// reach it already redacted by the run's emitter.
type redactingPublisher struct {
	next events.Publisher
	set  *secrets.Set
}

func (p redactingPublisher) Publish(subject string, msg any, trace messages.Trace) error {
	if f, ok := msg.(messages.RunFinished); ok {
		msg = redactFinished(p.set, f)
	}
	return p.next.Publish(subject, msg, trace)
}

// providerKeys are the provider keys the run's environment holds, read
// the way the providers read them (o.Getenv): a caller that hands the
// run an environment of its own (a bridge, a worker) has its keys known
// too, not only those of the process environment.
func providerKeys(getenv func(string) string) []string {
	var out []string
	for _, name := range registry.Names() {
		if k := registry.KeyEnv(name); k != "" {
			if v := getenv(k); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
