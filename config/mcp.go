package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/shellguard"
)

// MCP transports (mcp.md §1).
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
)

// MCP defaults and bounds.
const (
	// DefaultMCPConnectTimeout bounds starting a server, its initialize
	// handshake and its tool listing.
	DefaultMCPConnectTimeout = 15 * time.Second
	// DefaultMCPCallTimeout bounds one tool call (the tool default).
	DefaultMCPCallTimeout = 3 * time.Minute
	maxMCPConnectTimeout  = 5 * time.Minute
	maxMCPCallTimeout     = time.Hour
	// MaxMCPServerName is the longest server name: the tool names built
	// from it (mcp_<server>_<tool>) must stay within a provider's 64.
	MaxMCPServerName = 32
)

// MCPFile is the MCP definitions file below a home or project directory.
const MCPFile = ".agents/mcp.json"

// ProjectMCP is the project MCP file of dir.
func ProjectMCP(dir string) string { return filepath.Join(dir, filepath.FromSlash(MCPFile)) }

// MCPServer is one MCP server definition, validated.
type MCPServer struct {
	// Name is the key it is defined under, as written.
	Name string
	// Transport is MCPStdio or MCPHTTP.
	Transport string
	// Command, Args and Env start a stdio server. Env values are trusted
	// overrides laid over the scrubbed environment (shell-safety.md §4).
	Command string
	Args    []string
	Env     map[string]string
	// URL, Headers and SessionID reach a Streamable HTTP server. Header
	// values are secrets.
	URL       string
	Headers   map[string]string
	SessionID string
	// Enabled false servers are skipped.
	Enabled bool
	// Risk is the tier of every tool of the server: LevelHighRisk unless
	// the definition says "read-only" or "low-risk".
	Risk string
	// ConnectTimeout bounds start, initialize and listing; CallTimeout
	// bounds each call.
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	// Source is the file that defined the server.
	Source string
	// Err is why the definition cannot be used; the server is then never
	// started, and a run that needs it fails with this error.
	Err error
	// Dir is where a stdio server starts (LoadMCPServers sets it): the
	// project directory when the project defined the server (its file
	// trusted) or the user trusts the project. "" leaves it to the client.
	Dir string
	// Outside says the server is the user's and the project is not
	// trusted: it starts in a directory the project does not control
	// (mcpclient.Options.Outside), away from the project, because a runtime
	// started in a directory loads code by that directory's rules (npx its
	// node_modules/.bin and .npmrc, uv its uv.toml, python -m its modules,
	// a relative PATH entry its files), and the project must not choose
	// what runs with the user's rights. Its environment's locations (PATH,
	// PYTHONPATH, NODE_PATH, LD_LIBRARY_PATH, …) keep only absolute
	// entries (shellguard.AbsoluteLocations): a relative one resolves
	// wherever the server goes, the project included.
	Outside bool
	// Refused is why the server may not start here although its
	// definition is sound: its command or an argument is a path relative
	// to an untrusted project. A run that needs it goes on without it,
	// with this as the warning.
	Refused error
}

// Risk tiers a server may be given (the values of messages.Level*).
const (
	riskReadOnly = "read-only"
	riskLow      = "low-risk"
	riskHigh     = "high-risk"
)

// MCPSources are where MCP definitions come from.
type MCPSources struct {
	// UserHome is the OS home directory: UserHome/.agents/mcp.json.
	UserHome string
	// Cwd is the project directory: Cwd/.agents/mcp.json, applied only
	// when the user trusts it (jazz trust), like a project config.
	Cwd string
	// JazzHome holds the trust records.
	JazzHome string
	// Config is the merged jazz config: its mcpServers entries are
	// definitions of the lowest precedence, and their `enabled` overrides
	// every file's.
	Config *Config
}

// LoadMCPServers reads the MCP definitions (mcp.md §1): the jazz config's
// full definitions, then ~/.agents/mcp.json, then a trusted
// ./.agents/mcp.json, each replacing a server of the same name; then the
// jazz config's mcpServers.<n>.enabled. It starts nothing. A file that
// cannot be read or parsed is an error naming it; a bad definition is
// kept with its Err set, so only a run that needs that server fails. The
// result is sorted by name.
func LoadMCPServers(ctx context.Context, src MCPSources) ([]MCPServer, []string, error) {
	var warnings []string
	defs := map[string]MCPServer{}
	var enabled map[string]bool
	if src.Config != nil {
		raw := src.Config.Raw["mcpServers"]
		if len(raw) > 0 && string(raw) != "null" {
			m, err := mcpObject(raw, "config mcpServers")
			if err != nil {
				return nil, nil, err
			}
			enabled = map[string]bool{}
			for name, v := range m {
				obj, ok := v.(map[string]any)
				if !ok {
					continue
				}
				if e, has := obj["enabled"].(bool); has {
					enabled[name] = e
				}
				if definesServer(obj) {
					defs[name] = parseMCPServer(name, obj, "config")
				}
			}
		}
	}
	user := ""
	// A relative home is none: the user's own file, applied without a
	// trust record, would then be one under the working directory, which
	// is the project's.
	if src.UserHome != "" && filepath.IsAbs(src.UserHome) {
		user = ProjectMCP(src.UserHome)
		m, w, err := readMCPFile(ctx, user, true)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
		for name, obj := range m {
			defs[name] = parseMCPServer(name, obj, user)
		}
	}
	if src.Cwd != "" {
		project := ProjectMCP(src.Cwd)
		if user == "" || !sameFile(project, user) {
			data, m, w, err := readMCPData(ctx, project, false)
			warnings = append(warnings, w...)
			if err != nil {
				return nil, warnings, err
			}
			if m != nil {
				st, w := (&TrustStore{Home: src.JazzHome}).trustsMCP(ctx, src.Cwd, data)
				warnings = append(warnings, w...)
				var ignored []string
				for _, name := range sortedKeys(m) {
					obj := m[name]
					if st.ok {
						d := parseMCPServer(name, obj, project)
						// Its file is trusted, so is where it starts.
						d.Dir = src.Cwd
						defs[name] = d
						continue
					}
					// Untrusted, it may only turn off a server defined elsewhere.
					if e, has := obj["enabled"].(bool); has && !e && len(obj) == 1 {
						if d, known := defs[name]; known {
							d.Enabled = false
							defs[name] = d
						}
						continue
					}
					ignored = append(ignored, shown("mcpServers."+name))
				}
				if len(ignored) > 0 {
					warnings = append(warnings, untrustedWarning(project, st, ignored))
				}
			}
		}
	}
	out := make([]MCPServer, 0, len(defs))
	for _, name := range sortedKeys(defs) {
		d := defs[name]
		if e, has := enabled[name]; has {
			d.Enabled = e
		}
		out = append(out, d)
	}
	markCollisions(out)
	warnings = append(warnings, placeServers(ctx, out, src)...)
	return out, warnings, nil
}

// placeServers sets where each stdio server starts (MCPServer.Dir): a
// server the trusted project file defined already starts in the project;
// the user's own start there too when the user trusts the project
// (ProjectTrusted) or it is the user's home, as they always did. Otherwise they start Outside,
// and one whose command or arguments name a path relative to the project
// is Refused: jazz cannot tell a path the server reads (a filesystem
// server's ".") from a program a runtime runs (node ./server.js, uvx
// --from .), and the project must not choose the program. A relative
// location of its declared env (a PATH entry, PYTHONPATH=.) is dropped,
// with a warning.
func placeServers(ctx context.Context, servers []MCPServer, src MCPSources) []string {
	var warnings []string
	// No Cwd is jazz's own directory, the project as much: not trusted.
	trusted, checked := false, false
	for i := range servers {
		d := &servers[i]
		if d.Err != nil || d.Transport != MCPStdio || d.Dir != "" {
			continue
		}
		if !checked {
			// jazz run in the home itself: that directory is the user's,
			// as ~/.agents/mcp.json there is.
			home := filepath.IsAbs(src.UserHome) && src.Cwd != "" && ResolveDir(src.Cwd, src.Cwd) == ResolveDir(src.UserHome, src.UserHome)
			trusted, checked = home || ProjectTrusted(ctx, src.JazzHome, src.Cwd), true
		}
		if trusted {
			d.Dir = src.Cwd
			continue
		}
		d.Outside = true
		project := printable(src.Cwd)
		field := func(k string) string { return "mcpServers." + shown(d.Name) + "." + k }
		fix := fmt.Sprintf("give an absolute path, or trust the project (jazz trust %s) to start your servers in it", shellWord(src.Cwd))
		if strings.Contains(d.Command, "/") && !filepath.IsAbs(d.Command) {
			d.Refused = fmt.Errorf("%s: %s %q is a path relative to the project %s, which you have not trusted, so it would run whatever file the project has there; %s",
				printable(d.Source), field("command"), d.Command, project, fix)
			continue
		}
		for j, a := range d.Args {
			if relativePathArg(a) {
				d.Refused = fmt.Errorf("%s: %s[%d] %q is a path relative to the project %s, which you have not trusted; jazz cannot tell whether the server reads it or runs it, and the project must not choose what runs, so the server was not started; %s",
					printable(d.Source), field("args"), j, a, project, fix)
				break
			}
		}
		if names := RelativeLocations(envList(d.Env)); len(names) > 0 {
			d.Env = envMap(shellguard.AbsoluteLocations(envList(d.Env)))
			warnings = append(warnings, fmt.Sprintf("%s: %s names relative locations in %s, which would load programs or modules of the project %s, which you have not trusted; MCP server %s starts with only their absolute entries",
				printable(d.Source), field("env"), strings.Join(names, ", "), project, shown(d.Name)))
		}
	}
	return warnings
}

// relativePathArg says whether an argument names a path relative to the
// working directory in the forms that can mean nothing else: ".", "..",
// "./x", "../x", also as an option's value (--root=.). A bare name ("src")
// may as well be a subcommand or a package, and is left as it is (it
// resolves in the directory the server starts in).
func relativePathArg(a string) bool {
	if strings.HasPrefix(a, "-") {
		_, v, has := strings.Cut(a, "=")
		if !has {
			return false
		}
		a = v
	}
	a = filepath.ToSlash(a)
	return a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../")
}

// RelativeLocations names, sorted, the variables of env that
// shellguard.AbsoluteLocations changes: a PATH, PYTHONPATH, NODE_PATH,
// LD_LIBRARY_PATH, … with an empty or relative entry, a *_DIR or *_CONFIG
// that is relative. Each names the working directory or a place below
// it, wherever the program goes.
func RelativeLocations(env []string) []string {
	kept := map[string]string{}
	for _, kv := range shellguard.AbsoluteLocations(env) {
		k, v, _ := strings.Cut(kv, "=")
		kept[k] = v
	}
	var names []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if now, has := kept[k]; !has || now != v {
			names = append(names, printable(k))
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

func envMap(env []string) map[string]string {
	out := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// OutsideDir is where the user's MCP servers start while the project is
// not trusted: the user's home (absolute, a directory), whose files and
// parents are the user's or root's, unless it is one of hidden or inside
// one (JAZZ_HOME as home: the servers see it empty), else the root
// directory.
func OutsideDir(home string, hidden []string) string {
	root := string(filepath.Separator)
	if !filepath.IsAbs(home) {
		return root
	}
	home = filepath.Clean(home)
	if fi, err := os.Stat(home); err != nil || !fi.IsDir() {
		return root
	}
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	for _, h := range hidden {
		if rel, err := filepath.Rel(real(h), real(home)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return root
		}
	}
	return home
}

// ProjectTrusted says whether the user trusts the project directory dir
// now: a trust record of it in jazzHome whose files still match
// (TrustStore.Status says TrustMatches). An unreadable record trusts
// nothing.
func ProjectTrusted(ctx context.Context, jazzHome, dir string) bool {
	if jazzHome == "" || dir == "" {
		return false
	}
	s := &TrustStore{Home: jazzHome}
	recs, err := s.List(ctx)
	if err != nil {
		return false
	}
	key := ResolveDir(dir, dir)
	for _, r := range recs {
		if r.Dir == key {
			return s.Status(ctx, r) == TrustMatches
		}
	}
	return false
}

// definesServer says whether a jazz-config entry is a definition rather
// than only an `enabled` override.
func definesServer(obj map[string]any) bool {
	for k := range obj {
		if k != "enabled" {
			return true
		}
	}
	return false
}

// markCollisions fails every server whose lowercased name another one
// already has: both would name their tools mcp_<name>_….
func markCollisions(servers []MCPServer) {
	seen := map[string]string{}
	for i := range servers {
		key := strings.ToLower(servers[i].Name)
		if first, dup := seen[key]; dup {
			if servers[i].Err == nil {
				servers[i].Err = fmt.Errorf("%s: MCP server %q has the same lower-cased name as %q, so their tools would collide; rename one: %w",
					printable(servers[i].Source), servers[i].Name, first, ErrInvalid)
			}
			continue
		}
		seen[key] = servers[i].Name
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// readMCPFile reads one MCP definitions file; a missing or blank file is
// no definitions.
func readMCPFile(ctx context.Context, path string, private bool) (map[string]map[string]any, []string, error) {
	_, m, w, err := readMCPData(ctx, path, private)
	return m, w, err
}

// readMCPData reads path (bounded; a private one must pass safefile's
// ownership checks and is tightened to 0600, since it may hold tokens)
// and returns its bytes and its server objects: those of "mcpServers"
// when the document has that key, else every top-level object value.
func readMCPData(ctx context.Context, path string, private bool) ([]byte, map[string]map[string]any, []string, error) {
	data, warnings, err := safefile.Read(ctx, path, safefile.Options{
		MaxBytes: MaxFileBytes, What: "MCP definitions file", Private: private, Restrict: private,
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, warnings, nil
	}
	if err != nil {
		return nil, nil, warnings, fmt.Errorf("read %s: %w", printable(path), err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return data, nil, warnings, nil
	}
	top, err := mcpObject(data, printable(path))
	if err != nil {
		return nil, nil, warnings, err
	}
	servers := top
	if inner, has := top["mcpServers"]; has {
		o, ok := inner.(map[string]any)
		if !ok {
			return nil, nil, warnings, fmt.Errorf("%s: mcpServers must be an object of servers, not %s: %w", printable(path), kind(inner), ErrInvalid)
		}
		servers = o
	}
	out := make(map[string]map[string]any, len(servers))
	for name, v := range servers {
		if o, ok := v.(map[string]any); ok {
			out[name] = o
		}
	}
	return data, out, warnings, nil
}

// mcpObject decodes a JSON object, numbers kept exact.
func mcpObject(data []byte, where string) (map[string]any, error) {
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v): %w", where, err, ErrInvalid)
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must hold a JSON object, not %s: %w", where, kind(v), ErrInvalid)
	}
	return o, nil
}

// ParseMCPServer validates one definition object (the value under its
// name); the result's Err says what is wrong, naming the field.
func ParseMCPServer(name string, raw json.RawMessage, source string) MCPServer {
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return MCPServer{Name: name, Source: source, Err: fmt.Errorf("%s: mcpServers.%s is not valid JSON (%v): %w", printable(source), shown(name), err, ErrInvalid)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return MCPServer{Name: name, Source: source, Err: fmt.Errorf("%s: mcpServers.%s must be an object, not %s: %w", printable(source), shown(name), kind(v), ErrInvalid)}
	}
	return parseMCPServer(name, obj, source)
}

func parseMCPServer(name string, obj map[string]any, source string) MCPServer {
	s := MCPServer{Name: name, Source: source, Enabled: true, Risk: riskHigh,
		ConnectTimeout: DefaultMCPConnectTimeout, CallTimeout: DefaultMCPCallTimeout}
	field := func(k string) string { return "mcpServers." + shown(name) + "." + k }
	fail := func(format string, args ...any) MCPServer {
		s.Err = fmt.Errorf("%s: %s: %w", printable(source), fmt.Sprintf(format, args...), ErrInvalid)
		return s
	}
	if !validServerName(name) {
		return fail("MCP server name %s must be 1-%d letters, digits, _ or -, starting with a letter or digit", shown(name), MaxMCPServerName)
	}
	str := func(k string) (string, error) {
		v, has := obj[k]
		if !has || v == nil {
			return "", nil
		}
		x, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s must be a string, not %s", field(k), kind(v))
		}
		return strings.TrimSpace(x), nil
	}
	strMap := func(k string) (map[string]string, error) {
		v, has := obj[k]
		if !has || v == nil {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s must be an object of strings, not %s", field(k), kind(v))
		}
		out := make(map[string]string, len(m))
		for kk, vv := range m {
			x, isStr := vv.(string)
			if !isStr {
				// A value may be a token: never echo it.
				return nil, fmt.Errorf("%s.%s must be a string, not %s", field(k), shown(kk), kind(vv))
			}
			if kk == "" || strings.ContainsAny(kk, "=:\x00\r\n") {
				return nil, fmt.Errorf("%s has an unusable name %s", field(k), shown(kk))
			}
			if strings.ContainsAny(x, "\x00\r\n") {
				return nil, fmt.Errorf("%s.%s must not hold NUL, CR or LF", field(k), shown(kk))
			}
			out[kk] = x
		}
		return out, nil
	}
	var err error
	if s.Transport, err = str("transport"); err != nil {
		return fail("%v", err)
	}
	if s.Command, err = str("command"); err != nil {
		return fail("%v", err)
	}
	if s.URL, err = str("url"); err != nil {
		return fail("%v", err)
	}
	switch strings.ToLower(s.Transport) {
	case "":
		s.Transport = MCPStdio
		if s.URL != "" && s.Command == "" {
			s.Transport = MCPHTTP
		}
	case MCPStdio:
		s.Transport = MCPStdio
	case MCPHTTP, "streamable-http", "streamablehttp":
		s.Transport = MCPHTTP
	default:
		return fail("%s must be \"stdio\" or \"http\", got %s", field("transport"), shown(s.Transport))
	}
	if e, has := obj["enabled"]; has && e != nil {
		b, ok := e.(bool)
		if !ok {
			return fail("%s must be true or false, not %s", field("enabled"), kind(e))
		}
		s.Enabled = b
	}
	risk, err := str("risk")
	if err != nil {
		return fail("%v", err)
	}
	switch risk {
	case "":
	case riskReadOnly, riskLow, riskHigh:
		s.Risk = risk
	default:
		return fail("%s must be \"read-only\", \"low-risk\" or \"high-risk\", got %s", field("risk"), shown(risk))
	}
	for _, t := range []struct {
		key      string
		dst      *time.Duration
		max      time.Duration
		fallback time.Duration
	}{
		{"connectTimeoutMs", &s.ConnectTimeout, maxMCPConnectTimeout, DefaultMCPConnectTimeout},
		{"timeoutMs", &s.CallTimeout, maxMCPCallTimeout, DefaultMCPCallTimeout},
	} {
		v, has := obj[t.key]
		if !has || v == nil {
			continue
		}
		n, ok := v.(json.Number)
		ms, perr := n.Int64()
		if !ok || perr != nil || ms < 1 || time.Duration(ms)*time.Millisecond > t.max {
			return fail("%s must be a whole number of milliseconds between 1 and %d", field(t.key), t.max.Milliseconds())
		}
		*t.dst = time.Duration(ms) * time.Millisecond
	}
	switch s.Transport {
	case MCPStdio:
		if s.Command == "" {
			return fail("%s is required for a stdio server (or give \"url\" for an HTTP one)", field("command"))
		}
		if strings.ContainsRune(s.Command, 0) {
			return fail("%s holds a NUL byte", field("command"))
		}
		if v, has := obj["args"]; has && v != nil {
			arr, ok := v.([]any)
			if !ok {
				return fail("%s must be an array of strings, not %s", field("args"), kind(v))
			}
			for i, e := range arr {
				x, isStr := e.(string)
				if !isStr || strings.ContainsRune(x, 0) {
					return fail("%s[%d] must be a string without NUL bytes, not %s", field("args"), i, kind(e))
				}
				s.Args = append(s.Args, x)
			}
		}
		if s.Env, err = strMap("env"); err != nil {
			return fail("%v", err)
		}
	case MCPHTTP:
		if s.URL == "" {
			return fail("%s is required for an HTTP server", field("url"))
		}
		u, perr := url.Parse(s.URL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("%s must be an http:// or https:// URL with a host", field("url"))
		}
		if s.Headers, err = strMap("headers"); err != nil {
			return fail("%v", err)
		}
		if s.SessionID, err = str("sessionId"); err != nil {
			return fail("%v", err)
		}
	}
	return s
}

// validServerName: letters, digits, _ and -, starting with a letter or
// digit, at most MaxMCPServerName long.
func validServerName(name string) bool {
	if name == "" || len(name) > MaxMCPServerName {
		return false
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '_' || c == '-'))
		if !ok {
			return false
		}
	}
	return true
}

// decodeJSON decodes one JSON value with numbers kept exact; trailing
// data, a key given twice and a byte-order mark are errors (checkJSON).
func decodeJSON(data []byte, v any) error {
	if err := checkJSON(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
