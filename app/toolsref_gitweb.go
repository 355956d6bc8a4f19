package app

import (
	"fmt"

	"github.com/jazz-run/jazz/tools/gittools"
	"github.com/jazz-run/jazz/tools/toolsdoc"
	"github.com/jazz-run/jazz/tools/webtools"
)

// gitWebSections are the rules of the git and network tools, from the
// constants that enforce them.
func gitWebSections() []toolsdoc.Section {
	return []toolsdoc.Section{
		{Title: "Git tools", Body: fmt.Sprintf(`
Every git tool runs `+"`git`"+` without a shell, in a session of its own (no terminal to prompt on), with no pager, no editor,
`+"`GIT_TERMINAL_PROMPT=0`"+`, the environment scrubbed of secrets and of every `+"`GIT_*`"+` variable, and `+"`PATH`"+` cut to its
absolute directories.

- Limits per git process: %s (diff and blame %s, merge %s, fetch and push %s), then SIGTERM to git and everything it started; each output stream is cut at %d bytes (a cut read-only result says `+"`truncated: true`"+`).
- A repository whose own configuration (`+"`.git/config`"+`, worktree config, files they include) sets anything not known to be inert — hooks paths, a file-system monitor, pagers, external diff or merge drivers, clean/smudge filters, credential helpers, an ssh command, an editor, gpg, remote helpers, URL rewrites, conditional includes — is refused unless the approval policy is `+"`high-risk`"+`. Pairs are also refused when the repository's hooks directory holds an executable hook; read-only tools run with hooks off and write nothing. Your own system and global git configuration is trusted.
- A repository holding JAZZ_HOME, or inside it, is refused. Push and pull go to configured remotes only; a local remote's repository is inspected the same way. URL credentials never appear in a result.
- Each pair's preview is bound to the state it showed (HEAD, the index, the work tree's changes, the commits involved): when that changed before the approved step runs, it refuses and asks for a new proposal. A push sends the previewed commit, a force push is leased on the previewed remote state, a pull fetches first and merges only if the remote branch is still where the preview saw it.`,
			toolsdoc.Duration(gittools.DefaultTimeout), toolsdoc.Duration(gittools.DiffTimeout), toolsdoc.Duration(gittools.MergeTimeout),
			toolsdoc.Duration(gittools.NetworkTimeout), gittools.StreamCap)},
		{Title: "Network tools", Body: fmt.Sprintf(`
`+"`web_fetch`"+` and `+"`http_request`"+` reach http and https URLs on the public internet only: loopback, private, link-local
(cloud metadata), carrier-grade NAT, multicast, unspecified, reserved, IPv4-mapped and IPv4-compatible IPv6 addresses, and
NAT64/6to4 addresses carrying one of those, are refused. The check runs on the address each connection is made to, after the
name was resolved. `+"`JAZZ_NET_ALLOW`"+` (your environment: a comma-separated list of addresses and CIDR ranges) allows some anyway.

- Redirects: at most %d, each target checked on its own connection; `+"`web_fetch`"+` drops credentials (authorization, cookies, API keys) when the host changes, and `+"`http_request`"+` follows them only within the approved URL's origin (same host and port, or http to https), returning a redirect elsewhere as its result (`+"`redirectNotFollowed`"+`).
- Proxies: `+"`HTTPS_PROXY`"+`, `+"`HTTP_PROXY`"+`, `+"`NO_PROXY`"+` (and lower-case); the target is resolved and checked here and the proxy is asked for the checked address. http(s) proxies only.
- `+"`web_fetch`"+`: %s and %d bytes per fetch, text/html, text/plain, application/json and XML only; HTML becomes its title and visible text (scripts and styles dropped, nothing executed).
- `+"`http_request`"+`: gated before it is sent; the approval shows the method, URL, headers (credentials masked) and the body bytes as they are sent (a JSON body as written, space taken out); headers the transport sets itself (Host, Content-Length, Transfer-Encoding, Connection and the other hop-by-hop ones) are refused. Credential headers are masked in the result too.`,
			webtools.MaxRedirects, toolsdoc.Duration(webtools.FetchTimeout), webtools.FetchMaxBytes)},
	}
}
