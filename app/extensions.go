package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/mcpclient"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/customtools"
	"github.com/jazz-run/jazz/tools/mcptools"
	"github.com/jazz-run/jazz/visible"
)

// mcpCloseBound bounds ending the run's MCP servers.
const mcpCloseBound = 10 * time.Second

// agentTools is the agent's effective tool set: the built-ins of reg, the
// custom tools declared for it, and the tools of the MCP servers its list
// requires, narrowed to the names it lists and by its persona (plus the twins of its pairs,
// and search_tools when some of them are deferred). MCP definitions are
// read, and servers started, only when the list names an mcp_ tool, so a
// run without one pays nothing for configured servers. The returned func
// ends the servers; call it when the run ends.
func agentTools(ctx context.Context, o RunOptions, persona personas.Persona, reg *tools.Registry, sec *secrets.Set, getenv func(string) string, warn func(string)) (*tools.Registry, func(), error) {
	noop := func() {}
	// Custom command tools and MCP servers start where jazz's secrets
	// are not (package isolate), found once for the run.
	iso := &isolate.Isolator{}
	custom, err := customTools(o, reg, iso)
	if err != nil {
		return nil, noop, err
	}
	names := o.Agent.Config.Tools
	var discovered []tools.Tool
	closeMCP := noop
	if wantsMCP(names) {
		var client *mcpclient.Client
		var required []config.MCPServer
		client, required, err = openMCP(ctx, o, names, getenv, warn, mcpOptions(o, sec, iso))
		if err != nil {
			return nil, noop, err
		}
		closeMCP = func() {
			cctx, cancel := context.WithTimeout(context.Background(), mcpCloseBound)
			defer cancel()
			_ = client.Close(cctx)
		}
		discovered = mcptools.Discover(ctx, client, required, tools.NewDeferral(), warn)
		names = mcptools.Expand(names, required, discovered)
	}
	all := toolsOf(reg)
	all = append(all, custom...)
	all = append(all, discovered...)
	full, err := tools.NewRegistry(all...)
	if err != nil {
		closeMCP()
		return nil, noop, fmt.Errorf("build the agent's tools: %w", err)
	}
	if w := unknownTools(o.Agent.Name, o.Agent.Config.Tools, full); w != "" {
		warn(w)
	}
	// The agent's persona narrows its list as it narrows a subagent's
	// (its tools, then its denies): a researcher never writes, whatever
	// the agent file lists; so neither can its children, whose ceiling
	// this is.
	eff := actors.ChildRegistry(full.Subset(names), persona)
	if deferred := mcptools.Deferred(eff); len(deferred) > 0 {
		// search_tools serves exactly the deferred tools this agent holds.
		withSearch := append(toolsOf(eff), mcptools.SearchTool(deferred, deferred[0].Deferral))
		if eff, err = tools.NewRegistry(withSearch...); err != nil {
			closeMCP()
			return nil, noop, fmt.Errorf("add %s: %w", mcptools.SearchName, err)
		}
	}
	return eff, closeMCP, nil
}

// toolsOf lists a registry's tools, hidden twins included.
func toolsOf(reg *tools.Registry) []tools.Tool {
	out := make([]tools.Tool, 0, len(reg.Names()))
	for _, n := range reg.Names() {
		if t, ok := reg.Lookup(n); ok {
			out = append(out, *t)
		}
	}
	return out
}

func wantsMCP(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(strings.TrimSpace(n), mcptools.Prefix) {
			return true
		}
	}
	return false
}

// openMCP reads the MCP definitions and returns a client for the servers
// the agent's list requires. A required server whose definition is broken
// fails the run (a config error, naming the field); a disabled one is a
// warning.
func openMCP(ctx context.Context, o RunOptions, names []string, getenv func(string) string, warn func(string), mo mcpclient.Options) (*mcpclient.Client, []config.MCPServer, error) {
	defs, warnings, err := config.LoadMCPServers(ctx, config.MCPSources{
		UserHome: userHome(getenv), Cwd: o.Cwd, JazzHome: o.Config.Home, Config: o.Config,
	})
	for _, w := range warnings {
		warn(w)
	}
	if err != nil {
		return nil, nil, err
	}
	var required []config.MCPServer
	outside := false
	for _, s := range mcptools.Required(names, defs) {
		switch {
		case s.Err != nil:
			return nil, nil, fmt.Errorf("agent %s needs MCP server %s, whose definition is invalid: %w", o.Agent.Name, s.Name, s.Err)
		case !s.Enabled:
			warn(fmt.Sprintf("MCP server %s is disabled. The agent will continue without %s tools.", s.Name, s.Name))
		default:
			required = append(required, s)
			outside = outside || s.Outside
		}
	}
	if names := config.RelativeLocations(os.Environ()); outside && len(names) > 0 {
		// The servers get jazz's environment without them (mcpclient):
		// say so once.
		warn(fmt.Sprintf("your environment names relative locations in %s, which would load programs or modules of the project %s, which you have not trusted; MCP servers start with only their absolute entries",
			visible.Line(strings.Join(names, ", ")), visible.Line(o.Cwd)))
	}
	return mcpclient.New(required, mo), required, nil
}

// mcpOptions is how jazz starts every MCP server, in a run or for `jazz
// mcp tools` (NewMCPClient): jazz's environment scrubbed of its secrets
// (by name, shape and the values sec knows), in the directory its
// definition names (config.MCPServer.Dir: the project only when the
// project is trusted or defined it; any other starts outside the project,
// in the user's home, or / when the home is hidden), in the view
// package isolate makes where JAZZ_HOME and the key files sec knows are
// not there (refused where the machine allows no such view), under
// childproc's process group, cgroup and reaper.
func mcpOptions(o RunOptions, sec *secrets.Set, iso *isolate.Isolator) mcpclient.Options {
	hide := sec.Hidden(o.Config.Home)
	outside := config.OutsideDir(userHome(getenvOf(o)), hide)
	return mcpclient.Options{Environ: os.Environ(), Dir: outside, Outside: outside, Hide: hide, Isolator: iso, Known: sec.Redactor()}
}

// NewMCPClient is a client for servers that starts (and reaches) them
// exactly as a run with options o would: the secrets it keeps from them
// are the ones such a run knows (runSecrets), so a command that lists a
// server's tools is no second, weaker way to start one. o needs Config,
// Cwd and Getenv; NATSURL and KeyFiles name the bus credentials to hide.
// Close the client to end the servers.
func NewMCPClient(ctx context.Context, o RunOptions, servers []config.MCPServer) *mcpclient.Client {
	return mcpclient.New(servers, mcpOptions(o, runSecrets(ctx, o), &isolate.Isolator{}))
}

// userHome is the OS home, where ~/.agents/mcp.json lives; "" when there
// is none. That file is the user's own (its servers start with no trust
// record), so a relative HOME counts as none: it would name the project's
// .agents/mcp.json under the working directory.
func userHome(getenv func(string) string) string {
	h := strings.TrimSpace(getenv("HOME"))
	if h == "" {
		h, _ = os.UserHomeDir()
	}
	if !filepath.IsAbs(h) {
		return ""
	}
	return h
}

// customTools builds the custom tools of the agent's file and of the
// config (tools-and-approval.md §8). A name declared in both must be the
// same definition; a name a built-in has fails the run; at most
// config.MaxCustomTools may be exposed to the agent.
func customTools(o RunOptions, builtins *tools.Registry, iso *isolate.Isolator) ([]tools.Tool, error) {
	own, err := config.ParseCustomToolsJSON(o.Agent.Config.CustomTools, fmt.Sprintf("agent %q: config.customTools", o.Agent.Name))
	if err != nil {
		return nil, err
	}
	decls := own
	byName := map[string]config.CustomTool{}
	for _, d := range own {
		byName[d.Name] = d
	}
	for _, d := range o.Config.CustomTools {
		prev, dup := byName[d.Name]
		switch {
		case dup && prev.Canonical == d.Canonical:
			continue // the same tool declared twice
		case dup:
			return nil, fmt.Errorf("custom tool %q is declared differently by agent %q and by the config; one definition must go: %w",
				d.Name, o.Agent.Name, config.ErrInvalid)
		}
		byName[d.Name] = d
		decls = append(decls, d)
	}
	listed := map[string]bool{}
	for _, n := range o.Agent.Config.Tools {
		listed[strings.TrimSpace(n)] = true
	}
	exposed := 0
	for _, d := range decls {
		// builtins may hold only the groups the agent lists (see
		// agentBuiltins); a name is taken whether or not its group was
		// built.
		if _, clash := builtins.Lookup(d.Name); clash || isBuiltin(d.Name) {
			return nil, fmt.Errorf("custom tool %q has the name of a built-in tool; rename it: %w", d.Name, config.ErrInvalid)
		}
		if listed[d.Name] {
			exposed++
		}
	}
	if exposed > config.MaxCustomTools {
		return nil, fmt.Errorf("agent %q lists %d custom tools; at most %d are allowed: %w", o.Agent.Name, exposed, config.MaxCustomTools, config.ErrInvalid)
	}
	return customtools.Tools(decls, customtools.Options{EnvAllowlist: o.Agent.Config.EnvAllowlist, BaseDir: o.Cwd, Isolator: iso}), nil
}
