package app

import (
	"fmt"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/asktools"
	"github.com/jazz-run/jazz/tools/customtools"
	"github.com/jazz-run/jazz/tools/mcptools"
	"github.com/jazz-run/jazz/tools/toolsdoc"
)

// ReferenceRegistry is every tool jazz itself defines, as docs/tools.md
// describes them: the built-ins, the ask tools, spawn_subagent and
// search_tools. A tool added to BuiltinRegistry is in it at once.
func ReferenceRegistry() (*tools.Registry, error) {
	reg, err := BuiltinRegistry(RunOptions{})
	if err != nil {
		return nil, err
	}
	all := toolsOf(reg)
	all = append(all, asktools.Tools(true)...)
	all = append(all, actors.SubagentTool(), mcptools.SearchTool(nil, tools.NewDeferral()))
	return tools.NewRegistry(all...)
}

// ToolsReference is docs/tools.md.
func ToolsReference() ([]byte, error) {
	reg, err := ReferenceRegistry()
	if err != nil {
		return nil, err
	}
	return append(toolsdoc.Render(reg, referenceSections()...), '\n'), nil
}

// referenceSections are the rules of the tools jazz does not define
// itself, from the constants that enforce them.
func referenceSections() []toolsdoc.Section {
	return append([]toolsdoc.Section{
		{Title: "MCP tools", Body: fmt.Sprintf(`
Servers are defined in `+"`~/.agents/mcp.json`"+` (`+"`jazz mcp add`"+`), in a trusted project's `+"`.agents/mcp.json`"+`
(`+"`jazz trust`"+`; untrusted, it may only disable servers) and in the jazz config's `+"`mcpServers`"+`. An agent lists
`+"`mcp_<server>_<tool>`"+` names, or `+"`mcp_<server>`"+` for all of a server's tools; only the servers its list names are
started, at run setup, and every one is stopped when the run ends.

- Names: `+"`mcp_<lower-cased server>_<tool>`"+`, characters other than letters, digits, `+"`_`"+` and `+"`-`"+` replaced by `+"`_`"+`, at most %d characters (a longer name ends in a hash). Server names: at most %d letters, digits, `+"`_`"+` or `+"`-`"+`.
- Tier: the server's `+"`risk`"+`, default `+"`high-risk`"+` (every call gated before it is sent); `+"`read-only`"+` only when the definition says so.
- Deferred: the model sees the name and the description's first line (at most %d characters) until `+"`search_tools`"+` (at most %d tools per search) returns the full schema.
- Arguments are forwarded as sent; the server's schema is shown, never enforced. Descriptions over %d bytes are cut; schemas over %d bytes are shown as an open object; results over %d bytes are cut with a note.
- Limits: `+"`connectTimeoutMs`"+` (default %s) bounds start, initialize and the tool listing; `+"`timeoutMs`"+` (default %s) bounds each call. A server that hangs, dies or sends something that is not JSON-RPC fails the call with a message saying so, and is stopped; the next call starts it again.
- A stdio server gets the scrubbed environment (secrets hidden, as for commands) plus its declared `+"`env`"+`; it runs without a shell, under a reaper that ends every process it starts.`,
			mcptools.MaxName, config.MaxMCPServerName, tools.MaxSummary, mcptools.MaxMatches, mcptools.MaxDescription, mcptools.MaxSchema,
			mcptools.MaxResult, toolsdoc.Duration(config.DefaultMCPConnectTimeout), toolsdoc.Duration(config.DefaultMCPCallTimeout))},
		{Title: "Custom tools", Body: fmt.Sprintf(`
Declared in an agent's `+"`config.customTools`"+` or the jazz config's `+"`customTools`"+` (a project config only when trusted), and
offered only to an agent that lists the name. Each declaration is validated when the file is loaded; an error names the field.

- `+"`name`"+`: `+"`^[a-z][a-z0-9_]{1,63}$`"+`, not starting with `+"`mcp_`"+`, unique, not a built-in's; at most %d per agent. The same name declared twice must be the same definition.
- `+"`description`"+`: 1-%d characters. `+"`parameters`"+`: a JSON Schema of `+"`\"type\":\"object\"`"+` (string, number, integer, boolean, null, enum, nested objects and arrays; unknown keywords dropped; an untyped property accepts objects only), enforced. In a command tool an object that lists `+"`properties`"+` takes only those keys unless it says `+"`additionalProperties`"+` itself (an untyped property stays open), and one without `+"`parameters`"+` takes none: its program gets the arguments whole, so a key the schema never named (a `+"`target`"+` beside an enum-bound `+"`env`"+`) is refused, not passed on.
- `+"`handler.type`"+` `+"`record`"+`: tier `+"`read-only`"+`, answers `+"`response`"+` (at most %d characters, default %q), changes nothing.
- `+"`handler.type`"+` `+"`command`"+`: tier `+"`high-risk`"+` (gated). `+"`command`"+` is an argv run without a shell in the directory jazz started in, which the model's `+"`cd`"+` does not move (a relative program path is found there too, a bare name on the scrubbed PATH), the arguments as JSON on stdin, with the scrubbed environment of the declaring agent's `+"`envAllowlist`"+`. `+"`timeoutMs`"+` default %d, at most %d (then every process is killed: `+"`Command timed out after <ms>ms`"+`); stdout and stderr are each cut at %d bytes. Exit 0 returns stdout as is; any other exit fails with `+"`Command exited with code <n>: <stderr>`"+`.`,
			config.MaxCustomTools, config.MaxCustomDescription, config.MaxCustomDescription, config.DefaultRecordResponse,
			config.DefaultCustomTimeout.Milliseconds(), config.MaxCustomTimeout.Milliseconds(), customtools.OutputCap)},
	}, gitWebSections()...)
}
