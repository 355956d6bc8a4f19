package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/internal/suggest"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/mcptools"
)

// ToolNames is what an agent's tool list may name: the tools jazz
// defines, the custom tools declared for it, and the tools of the MCP
// servers configured (mcp_<server>, mcp_<server>_<tool>).
type ToolNames struct {
	// Builtin are the visible tools jazz defines, sorted.
	Builtin []string
	// Custom are the custom tools declared in the config or the agent.
	Custom []string
	// MCP are the categories of the configured servers (mcp_<server>).
	MCP []string
	// twins maps a hidden execute twin to the tool that proposes it.
	twins map[string]string
}

// LoadToolNames reads the names: the reference registry, the config's
// and the agent's custom tools (agentCustom, its config.customTools),
// and the MCP servers defined for cwd.
func LoadToolNames(ctx context.Context, cfg *config.Config, agentCustom []config.CustomTool, cwd, userHomeDir string) (ToolNames, []string, error) {
	reg, err := ReferenceRegistry()
	if err != nil {
		return ToolNames{}, nil, err
	}
	n := namesOf(reg)
	for _, d := range cfg.CustomTools {
		n.Custom = append(n.Custom, d.Name)
	}
	for _, d := range agentCustom {
		n.Custom = append(n.Custom, d.Name)
	}
	sort.Strings(n.Custom)
	servers, warnings, err := config.LoadMCPServers(ctx, config.MCPSources{UserHome: userHomeDir, Cwd: cwd, JazzHome: cfg.Home, Config: cfg})
	if err != nil {
		return ToolNames{}, warnings, err
	}
	for _, s := range servers {
		n.MCP = append(n.MCP, mcptools.Category(s.Name))
	}
	sort.Strings(n.MCP)
	return n, warnings, nil
}

// namesOf is the visible and twin names of a registry.
func namesOf(reg *tools.Registry) ToolNames {
	n := ToolNames{twins: map[string]string{}}
	for _, t := range reg.Visible() {
		n.Builtin = append(n.Builtin, t.Name)
		if t.Twin != "" {
			n.twins[t.Twin] = t.Name
		}
	}
	return n
}

// Known says whether an agent may list name.
func (n ToolNames) Known(name string) bool {
	for _, list := range [][]string{n.Builtin, n.Custom} {
		for _, k := range list {
			if k == name {
				return true
			}
		}
	}
	for _, cat := range n.MCP {
		if name == cat || strings.HasPrefix(name, cat+"_") {
			return true
		}
	}
	return false
}

// Unknown lists the names of list that are no tool, in order. MCP names
// are left to Unconfigured: a server may be defined after the agent (a
// project's file once trusted), so they are not refused.
func (n ToolNames) Unknown(list []string) []string {
	var out []string
	for _, t := range list {
		if t = strings.TrimSpace(t); t != "" && !strings.HasPrefix(t, mcptools.Prefix) && !n.Known(t) {
			out = append(out, t)
		}
	}
	return out
}

// Unconfigured lists the MCP names of list no configured server offers.
func (n ToolNames) Unconfigured(list []string) []string {
	var out []string
	for _, t := range list {
		if t = strings.TrimSpace(t); strings.HasPrefix(t, mcptools.Prefix) && !n.Known(t) {
			out = append(out, t)
		}
	}
	return out
}

// Why says why name cannot be listed, with the nearest valid name.
func (n ToolNames) Why(name string) string {
	if p, ok := n.twins[name]; ok {
		return fmt.Sprintf("%q is the hidden half of %s, which the gate runs once a call is approved; list %q", name, p, p)
	}
	if strings.HasPrefix(name, mcptools.Prefix) {
		if len(n.MCP) == 0 {
			return fmt.Sprintf("%q names an MCP server, and none is configured (jazz mcp add)", name)
		}
		return fmt.Sprintf("%q names no configured MCP server (configured: %s)", name, strings.Join(n.MCP, ", "))
	}
	all := append(append([]string{}, n.Builtin...), n.Custom...)
	if near := suggest.Nearest(name, all); near != "" {
		return fmt.Sprintf("%q is not a tool (did you mean %q?)", name, near)
	}
	return fmt.Sprintf("%q is not a tool", name)
}

// All is every listable name, for a message.
func (n ToolNames) All() string {
	all := append(append(append([]string{}, n.Builtin...), n.Custom...), n.MCP...)
	return strings.Join(all, ", ")
}
