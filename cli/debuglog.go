package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jazz-run/jazz/events"
)

// The diagnostic log (-v/--verbose, --debug) goes to stderr, never
// stdout: jazz's own records (the config and agent a run uses, its
// model, policy and tools) and the actor engine's (hollywood logs every
// actor start, stop and restart through slog at debug level, which
// without --debug goes nowhere). On a stderr that is a JSON channel
// (--events, a bridge) each record is a warning event.

// logFlags reads -v/--verbose and --debug from the raw arguments: the
// log must be set up before the command runs, and must hold when flags
// fail to parse.
func logFlags(args []string) (verbose, debug bool) {
	for _, a := range args {
		switch {
		case a == "--":
			return
		case a == "-v" || a == "--verbose" || a == "--verbose=true" || strings.HasPrefix(a, "-v") && !strings.HasPrefix(a, "--") && strings.Trim(a[1:], "v") == "":
			verbose = true
		case a == "--debug" || a == "--debug=true":
			debug = true
		}
	}
	return
}

// setupLog makes slog's default logger the one the flags ask for: debug
// level with --debug, info with -v, else the standard library's default
// (warnings and errors through the log package).
func setupLog(args []string, stderr io.Writer, jsonStderr bool) {
	verbose, debug := logFlags(args)
	if !verbose && !debug {
		return
	}
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	w := stderr
	if jsonStderr {
		w = events.LogWriter(stderr)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}

// debugRun logs what a run is made of (-v and --debug): names and paths
// only, never a key.
func debugRun(ctx context.Context, o RunOptions, home, cwd, agentID, agentName, model, policy string, tools []string) {
	if !o.Debug && !o.Verbose {
		return
	}
	slog.InfoContext(ctx, "jazz run", "home", home, "cwd", cwd, "config", os.Getenv("JAZZ_CONFIG_PATH")+o.ConfigPath,
		"agent", agentName, "agentId", agentID, "model", model, "policy", policy, "tools", strings.Join(tools, ","),
		"timezone", o.Timezone, "conversation", o.Conversation)
}

// noTUI says whether --no-tui is on the command line.
func noTUI(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--no-tui" || a == "--no-tui=true" {
			return true
		}
	}
	return false
}
