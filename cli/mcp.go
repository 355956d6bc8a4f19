package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/mcptools"
	"github.com/jazz-run/jazz/visible"
)

// NewMCPCmd builds `jazz mcp`: the MCP servers of ~/.agents/mcp.json.
// Everything a server says (its tool names and descriptions, its errors)
// is a stranger's text, printed only through visible.
func NewMCPCmd(d Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Add, list, remove, enable and disable MCP servers, and list a server's tools",
		Long: "MCP servers are defined in ~/.agents/mcp.json (these commands edit it), in a trusted project's\n" +
			".agents/mcp.json, and in the jazz config's mcpServers. An agent uses a server's tools by listing\n" +
			"mcp_<server>_<tool> names, or mcp_<server> for all of them, in its tools; servers start only then.\n" +
			"A stdio server starts in the project directory only when you trust the project (jazz trust);\n" +
			"elsewhere your servers start in your home, so the project's node_modules/.bin, .npmrc, uv.toml or\n" +
			"modules choose nothing that runs; PATH and other location variables keep only absolute entries,\n" +
			"and a server whose command or arguments are paths relative to the project (bin/server, \".\")\n" +
			"is not started there: give absolute paths, or trust the project.",
	}
	cmd.AddCommand(newMCPAdd(d), newMCPList(d), newMCPRemove(d), newMCPToggle(d, true), newMCPToggle(d, false), newMCPTools(d))
	return cmd
}

// userHome is the OS home, where ~/.agents/mcp.json lives.
func userHome(d Deps) (string, error) {
	h := strings.TrimSpace(d.Getenv("HOME"))
	if h == "" {
		h, _ = os.UserHomeDir()
	}
	// Relative, it would name the project's .agents/mcp.json.
	if !filepath.IsAbs(h) {
		return "", errors.New("no home directory: set HOME (an absolute path) to say where ~/.agents/mcp.json is")
	}
	return h, nil
}

// userMCPFile is ~/.agents/mcp.json.
func userMCPFile(d Deps) (string, error) {
	home, err := userHome(d)
	if err != nil {
		return "", err
	}
	return config.ProjectMCP(home), nil
}

// mcpServers loads every definition as a run with the command's --config
// would see it, warnings to stderr: a server the config file defines or
// disables must show as a run would take it.
func mcpServers(cmd *cobra.Command, d Deps) ([]config.MCPServer, error) {
	configFlag, _ := cmd.Flags().GetString("config")
	servers, _, err := mcpWorld(cmd.Context(), d, configFlag)
	return servers, err
}

// mcpWorld is mcpServers with the config they were read with, loaded as
// `jazz run --config configFlag` loads it.
func mcpWorld(ctx context.Context, d Deps, configFlag string) ([]config.MCPServer, *config.Config, error) {
	jhome, err := config.Home(d.Getenv, d.Cwd)
	if err != nil {
		return nil, nil, err
	}
	cfg, warnings, err := config.Load(ctx, config.LoadOptions{Home: jhome, ConfigFlag: configFlag, Getenv: d.Getenv, Cwd: d.Cwd, FlagDir: d.Cwd})
	if err != nil {
		return nil, nil, err
	}
	home, err := userHome(d)
	if err != nil {
		return nil, nil, err
	}
	servers, w, err := config.LoadMCPServers(ctx, config.MCPSources{UserHome: home, Cwd: d.Cwd, JazzHome: jhome, Config: cfg})
	for _, msg := range append(warnings, w...) {
		fmt.Fprintln(d.IO.ErrOut, "⚠ "+visible.Line(msg))
	}
	return servers, cfg, err
}

func newMCPAdd(d Deps) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "add [JSON] | -f FILE",
		Short: "Add (or replace) servers in ~/.agents/mcp.json",
		Long: "JSON is {\"name\": {…}} or {\"mcpServers\": {\"name\": {…}}}, e.g.\n" +
			"  jazz mcp add '{\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/srv\"]}}'\n" +
			"  jazz mcp add '{\"docs\": {\"url\": \"https://mcp.example.com/mcp\", \"headers\": {\"Authorization\": \"Bearer …\"}}}'\n" +
			"Fields: command, args, env (stdio); url, headers (http); enabled; risk (read-only|low-risk|high-risk,\n" +
			"default high-risk: every call is gated); timeoutMs (per call); connectTimeoutMs.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var data []byte
			switch {
			case file != "" && len(args) == 1:
				return errors.New("give the definitions as an argument or with -f, not both")
			case file != "":
				b, _, err := safefile.Read(cmd.Context(), file, safefile.Options{MaxBytes: config.MaxFileBytes, What: "MCP definitions"})
				if err != nil {
					return err
				}
				data = b
			case len(args) == 1:
				data = []byte(args[0])
			default:
				return errors.New("no definitions given: jazz mcp add '{\"name\": {\"command\": …}}' or -f FILE")
			}
			defs, err := parseDefinitions(data)
			if err != nil {
				return err
			}
			path, err := userMCPFile(d)
			if err != nil {
				return err
			}
			names := sortedNames(defs)
			for _, n := range names {
				if s := config.ParseMCPServer(n, defs[n], "jazz mcp add"); s.Err != nil {
					return s.Err
				}
			}
			err = config.UpdateMCPFile(cmd.Context(), path, func(servers map[string]json.RawMessage) error {
				for _, n := range names {
					servers[n] = defs[n]
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, n := range names {
				s := config.ParseMCPServer(n, defs[n], path)
				fmt.Fprintf(d.IO.Out, "Added MCP server %s (%s) to %s; agents use it by listing %s or %s_<tool>.\n",
					visible.Line(n), visible.Line(target(s)), visible.Line(path), mcptools.Category(n), mcptools.Category(n))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the definitions from FILE")
	return cmd
}

// parseDefinitions reads add's JSON: its servers by name.
func parseDefinitions(data []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("the definitions are not a JSON object: %v", err)
	}
	if inner, ok := top["mcpServers"]; ok {
		top = nil
		if err := json.Unmarshal(inner, &top); err != nil {
			return nil, fmt.Errorf("mcpServers is not an object: %v", err)
		}
	}
	if len(top) == 0 {
		return nil, errors.New("no server definitions given")
	}
	return top, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// target is what a server runs or reaches, for one line.
func target(s config.MCPServer) string {
	if s.Transport == config.MCPHTTP {
		return "http " + s.URL
	}
	return "stdio " + strings.Join(append([]string{s.Command}, s.Args...), " ")
}

func newMCPList(d Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the MCP servers every source defines, as a run would merge them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			servers, err := mcpServers(cmd, d)
			if err != nil {
				return err
			}
			if len(servers) == 0 {
				fmt.Fprintln(d.IO.ErrOut, "No MCP servers are defined. Add one with: jazz mcp add '{\"name\": {\"command\": …}}'")
				return nil
			}
			for _, s := range servers {
				state := "enabled"
				switch {
				case s.Err != nil:
					state = "invalid"
				case !s.Enabled:
					state = "disabled"
				case s.Refused != nil:
					state = "refused-here"
				}
				line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", visible.Line(s.Name), state, s.Risk, visible.Line(target(s)), visible.Line(s.Source))
				switch {
				case s.Err != nil:
					line = fmt.Sprintf("%s\t%s\t\t\t%s", visible.Line(s.Name), state, visible.Line(s.Err.Error()))
				case s.Refused != nil && s.Enabled:
					// Sound, but not started in this (untrusted) project: say why.
					line += "\t" + visible.Line(s.Refused.Error())
				}
				fmt.Fprintln(d.IO.Out, line)
			}
			return nil
		},
	}
}

func newMCPRemove(d Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a server from ~/.agents/mcp.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editUserServer(cmd, d, args[0], func(servers map[string]json.RawMessage) {
				delete(servers, args[0])
			}, "Removed")
		},
	}
}

func newMCPToggle(d Deps, on bool) *cobra.Command {
	use, short, done := "disable NAME", "Disable a server in ~/.agents/mcp.json", "Disabled"
	if on {
		use, short, done = "enable NAME", "Enable a server in ~/.agents/mcp.json", "Enabled"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var editErr error
			err := editUserServer(cmd, d, name, func(servers map[string]json.RawMessage) {
				var def map[string]json.RawMessage
				if err := json.Unmarshal(servers[name], &def); err != nil {
					editErr = fmt.Errorf("the definition of %s is not an object: %v", visible.Line(name), err)
					return
				}
				def["enabled"] = json.RawMessage(fmt.Sprint(on))
				b, _ := json.Marshal(def)
				servers[name] = b
			}, done)
			if err != nil {
				return err
			}
			if editErr != nil {
				return editErr
			}
			// The jazz config's mcpServers.<n>.enabled wins over the file.
			if servers, err := mcpServers(cmd, d); err == nil {
				for _, s := range servers {
					if s.Name == name && s.Enabled != on {
						fmt.Fprintf(d.IO.ErrOut, "⚠ the jazz config sets mcpServers.%s.enabled to %v, which wins over %s: edit it there too\n",
							visible.Line(name), !on, config.MCPFile)
					}
				}
			}
			return nil
		},
	}
}

// editUserServer changes one server of ~/.agents/mcp.json; a server
// defined only elsewhere is an error that says where.
func editUserServer(cmd *cobra.Command, d Deps, name string, change func(map[string]json.RawMessage), done string) error {
	ctx := cmd.Context()
	path, err := userMCPFile(d)
	if err != nil {
		return err
	}
	err = config.UpdateMCPFile(ctx, path, func(servers map[string]json.RawMessage) error {
		if _, ok := servers[name]; !ok {
			return errNotInUserFile
		}
		change(servers)
		return nil
	})
	if errors.Is(err, errNotInUserFile) {
		msg := fmt.Sprintf("no MCP server %s in %s", visible.Line(name), visible.Line(path))
		if servers, lerr := mcpServers(cmd, d); lerr == nil {
			for _, s := range servers {
				if s.Name == name {
					msg += fmt.Sprintf("; it is defined in %s: edit it there", visible.Line(s.Source))
				}
			}
		}
		return errors.New(msg)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.IO.Out, "%s MCP server %s in %s.\n", done, visible.Line(name), visible.Line(path))
	return nil
}

var errNotInUserFile = errors.New("not in the user's MCP file")

// mcpToolsBound bounds `jazz mcp tools` beyond the server's own connect
// timeout (a stop included).
const mcpToolsBound = time.Minute

func newMCPTools(d Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "tools NAME",
		Short: "Start or reach a server and list the tools it offers, as agents would see them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			configFlag, _ := cmd.Flags().GetString("config")
			servers, cfg, err := mcpWorld(cmd.Context(), d, configFlag)
			if err != nil {
				return err
			}
			var def *config.MCPServer
			for i := range servers {
				if servers[i].Name == args[0] {
					def = &servers[i]
				}
			}
			if def == nil {
				return fmt.Errorf("no MCP server named %s is defined (jazz mcp list shows them)", visible.Line(args[0]))
			}
			if def.Err != nil {
				return def.Err
			}
			s := *def
			if !s.Enabled {
				fmt.Fprintf(d.IO.ErrOut, "⚠ %s is disabled: runs do not start it; listing its tools anyway\n", visible.Line(s.Name))
				s.Enabled = true
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), s.ConnectTimeout+mcpToolsBound)
			defer cancel()
			c := app.NewMCPClient(ctx, serverRunOptions(d, cfg), []config.MCPServer{s})
			defer func() {
				cctx, done := context.WithTimeout(context.Background(), mcpCloseBound)
				defer done()
				_ = c.Close(cctx)
			}()
			found, err := c.Tools(ctx, s.Name)
			if err != nil {
				return errors.New(visible.Line(err.Error()))
			}
			printTools(d.IO.Out, s, found)
			return nil
		},
	}
}

// mcpCloseBound bounds ending the server `jazz mcp tools` started.
const mcpCloseBound = 10 * time.Second

// serverRunOptions is what a `jazz run` started here (same environment,
// directory, config and bus variables) would know, so that a server
// started outside a run keeps from it what that run would: the bus
// settings are read by runBus, as the run reads them, and the files they
// name are hidden like its --creds and --nkey.
func serverRunOptions(d Deps, cfg *config.Config) app.RunOptions {
	bo := runBus(RunOptions{}, d.Getenv, d.Cwd)
	return app.RunOptions{Config: cfg, Getenv: d.Getenv, Cwd: d.Cwd, NATSURL: bo.URL, KeyFiles: bo.SecretFiles()}
}

// printTools writes one line per tool: the name an agent lists, its tier
// and its summary (and the server's own name when it differs), escaped.
func printTools(w io.Writer, s config.MCPServer, found []*mcp.Tool) {
	for _, t := range found {
		name := mcptools.ToolName(s.Name, t.Name)
		summary := visible.Line(tools.Summary(t.Description))
		if name != mcptools.Prefix+mcptools.ServerKey(s.Name)+"_"+t.Name {
			summary += fmt.Sprintf(" (the server calls it %s)", visible.Line(t.Name))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", name, s.Risk, summary)
	}
}
