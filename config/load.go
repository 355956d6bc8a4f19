package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/safefile"
)

// LoadOptions are Load's inputs.
type LoadOptions struct {
	// Home is JAZZ_HOME (see Home); required.
	Home string
	// ConfigFlag is --config: when set, the file must exist, be non-empty
	// and hold a JSON object.
	ConfigFlag string
	// Getenv reads the environment (JAZZ_CONFIG_PATH); nil means os.Getenv.
	Getenv func(string) string
	// Cwd is where ./.jazz/config.json is looked for and relative paths are
	// resolved; "" means the process's working directory.
	Cwd string
	// FlagDir is where jazz was started: a relative --config or
	// JAZZ_CONFIG_PATH names a file there, never one in the project
	// directory a run was pointed at (--cwd), whose files a cloned
	// repository chooses. "" means Cwd.
	FlagDir string
	// Debug is --debug: it forces logging.level "debug".
	Debug bool
}

// ErrInvalid marks a configuration that cannot be used; the message names
// the file and the key.
var ErrInvalid = errors.New("invalid configuration")

// deepSection says whether a top-level key is an object section merged key
// by key (config.md §2), and which of its keys merge one level deeper ("*":
// all of them).
func deepSection(key string) (nested []string, ok bool) {
	switch key {
	case "storage", "logging", "llm", "web_search", "notifications", "context":
		return nil, true
	case "output":
		return []string{"streaming"}, true
	case "telemetry":
		return []string{"otlp"}, true
	case "mcpServers":
		// Not in config.md's list, but mcp.md lets both files toggle
		// mcpServers.<n>.enabled, which needs a per-server merge.
		return []string{"*"}, true
	}
	return nil, false
}

// MaxFileBytes bounds a config file; a bigger one is refused, naming it.
const MaxFileBytes = 1 << 20

// Load reads and merges the configuration files (config.md §2) and returns
// the typed result plus warnings meant for stderr. A missing optional file is
// not an error; an unreadable or malformed one is, naming its path. The
// global file must be one only the user (or root) can change (see
// safefile.CheckPrivate); the project file applies in full only when the
// user trusts it (see TrustStore), else only its narrowing keys do. Every
// read gives up when ctx ends.
func Load(ctx context.Context, opts LoadOptions) (*Config, []string, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if opts.Home == "" {
		return nil, nil, errors.New("load config: no JAZZ_HOME given")
	}
	cwd := opts.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, nil, fmt.Errorf("load config: working directory: %w", err)
		}
		cwd = wd
	}
	var warnings []string
	doc := map[string]any{
		"storage":    map[string]any{"type": "file", "path": opts.Home},
		"logging":    map[string]any{"level": "info", "format": "plain"},
		"llm":        map[string]any{},
		"web_search": map[string]any{},
	}
	origin := map[string]string{} // top-level key → the file that last set it
	var files []string

	// The global file: --config, else JAZZ_CONFIG_PATH, else JAZZ_HOME/config.json.
	var global string
	required := false
	flagDir := cwd
	if opts.FlagDir != "" {
		flagDir = opts.FlagDir
	}
	switch {
	case strings.TrimSpace(opts.ConfigFlag) != "":
		global, required = resolve(strings.TrimSpace(opts.ConfigFlag), getenv, flagDir), true
	case strings.TrimSpace(getenv("JAZZ_CONFIG_PATH")) != "":
		global = resolve(strings.TrimSpace(getenv("JAZZ_CONFIG_PATH")), getenv, flagDir)
	default:
		global = filepath.Join(opts.Home, "config.json")
	}
	g, w, err := readFile(ctx, global, required, true)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	if g.ok {
		files = append(files, global)
		mergeInto(doc, g.doc, global, origin)
	}

	project := filepath.Join(cwd, ".jazz", "config.json")
	if !sameFile(project, global) {
		p, w, err := readFile(ctx, project, false, false)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
		if p.ok {
			if _, has := p.doc["storage"]; has {
				// Agents and history always live in JAZZ_HOME.
				warnings = append(warnings, fmt.Sprintf("config %s: \"storage\" is ignored in a project config; agents and history stay in JAZZ_HOME", printable(project)))
				delete(p.doc, "storage")
			}
			trusted, w := (&TrustStore{Home: opts.Home}).trusts(ctx, cwd, p.data)
			warnings = append(warnings, w...)
			if !trusted.ok {
				applied, ignored := narrow(doc, p.doc)
				if len(ignored) > 0 {
					warnings = append(warnings, untrustedWarning(project, trusted, ignored))
				}
				p.doc = applied
			}
			files = append(files, project)
			mergeInto(doc, p.doc, project, origin)
		}
	}

	cfg, w, err := build(doc, origin, opts.Home)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	cfg.Files = files
	if opts.Debug {
		cfg.Logging.Level = "debug"
	}
	return cfg, warnings, nil
}

// resolve expands ~ and makes a config path absolute against cwd.
func resolve(p string, getenv func(string) string, cwd string) string {
	if abs, err := expandPath(p, osHome(getenv), cwd); err == nil {
		return abs
	}
	return p
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// loaded is one config file as read: its bytes (what a trust record
// hashes) and the object they hold. ok is false when an optional file is
// missing or blank.
type loaded struct {
	data []byte
	doc  map[string]any
	ok   bool
}

// readFile reads one config file: a regular file of at most MaxFileBytes;
// a private one (the global file) also passes safefile's ownership and
// mode checks, and a mode letting others read it is tightened to 0600.
func readFile(ctx context.Context, path string, required, private bool) (loaded, []string, error) {
	data, warnings, err := safefile.Read(ctx, path, safefile.Options{
		MaxBytes: MaxFileBytes, What: "config file", Private: private, Restrict: private,
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !required {
			return loaded{}, nil, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return loaded{}, nil, fmt.Errorf("config file %s does not exist: %w", path, ErrInvalid)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return loaded{}, nil, fmt.Errorf("read config file %s: %w", path, err)
		}
		return loaded{}, nil, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return loaded{}, warnings, fmt.Errorf("config file %s is empty: %w", path, ErrInvalid)
		}
		return loaded{}, append(warnings, fmt.Sprintf("config %s is empty; ignored", printable(path))), nil
	}
	if err := checkJSON(data); err != nil {
		return loaded{}, warnings, fmt.Errorf("config file %s: %v: %w", path, err, ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return loaded{}, warnings, fmt.Errorf("config file %s is not valid JSON (%v): %w", path, err, ErrInvalid)
	}
	if dec.More() {
		return loaded{}, warnings, fmt.Errorf("config file %s has trailing data after the JSON object: %w", path, ErrInvalid)
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return loaded{}, warnings, fmt.Errorf("config file %s must hold a JSON object, not %s: %w", path, kind(v), ErrInvalid)
	}
	renameGoogle(obj)
	return loaded{data: data, doc: obj, ok: true}, warnings, nil
}

// renameGoogle rewrites the old provider name `google` to `gemini` in llm
// and pricing keys (config.md §2).
func renameGoogle(doc map[string]any) {
	if llm, ok := doc["llm"].(map[string]any); ok {
		if g, has := llm["google"]; has {
			if _, both := llm["gemini"]; !both {
				llm["gemini"] = g
			}
			delete(llm, "google")
		}
	}
	if pr, ok := doc["pricing"].(map[string]any); ok {
		for k, v := range pr {
			if rest, found := strings.CutPrefix(k, "google/"); found {
				if _, both := pr["gemini/"+rest]; !both {
					pr["gemini/"+rest] = v
				}
				delete(pr, k)
			}
		}
	}
}

// mergeInto lays src over dst per config.md §2: the known object sections
// merge key by key (some one level deeper), everything else is replaced.
func mergeInto(dst, src map[string]any, file string, origin map[string]string) {
	for k, v := range src {
		origin[k] = file
		nested, deep := deepSection(k)
		so, srcObj := v.(map[string]any)
		do, dstObj := dst[k].(map[string]any)
		if !deep || !srcObj || !dstObj {
			dst[k] = v
			continue
		}
		merged := make(map[string]any, len(do)+len(so))
		for kk, vv := range do {
			merged[kk] = vv
		}
		for kk, vv := range so {
			inner, innerSrc := vv.(map[string]any)
			prev, innerDst := merged[kk].(map[string]any)
			if innerSrc && innerDst && (contains(nested, kk) || contains(nested, "*")) {
				m := make(map[string]any, len(prev)+len(inner))
				for a, b := range prev {
					m[a] = b
				}
				for a, b := range inner {
					m[a] = b
				}
				merged[kk] = m
				continue
			}
			merged[kk] = vv
		}
		dst[k] = merged
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// builder turns the merged document into a Config, collecting the first
// hard error and every warning.
type builder struct {
	doc      map[string]any
	origin   map[string]string
	warnings []string
	err      error
}

func (b *builder) fail(key, format string, args ...any) {
	if b.err != nil {
		return
	}
	where := "config"
	if f := b.origin[strings.SplitN(key, ".", 2)[0]]; f != "" {
		where = "config " + f
	}
	b.err = fmt.Errorf("%s: %s %s: %w", where, key, fmt.Sprintf(format, args...), ErrInvalid)
}

func (b *builder) warn(key, format string, args ...any) {
	where := "config"
	if f := b.origin[strings.SplitN(key, ".", 2)[0]]; f != "" {
		where = "config " + f
	}
	b.warnings = append(b.warnings, fmt.Sprintf("%s: %s %s", where, key, fmt.Sprintf(format, args...)))
}

// obj returns the object at key in m; absent or null is an empty object.
func (b *builder) obj(m map[string]any, key, path string) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		return map[string]any{}
	}
	o, ok := v.(map[string]any)
	if !ok {
		b.fail(path, "must be an object, not %s", kind(v))
		return map[string]any{}
	}
	return o
}

func (b *builder) integer(m map[string]any, key, path string, def int) int {
	v, ok := m[key]
	if !ok || v == nil {
		return def
	}
	n, isNum := v.(json.Number)
	if !isNum {
		b.fail(path, "must be an integer, not %s", kind(v))
		return def
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		b.fail(path, "must be an integer, got %s", n)
		return def
	}
	return int(i)
}

func (b *builder) number(m map[string]any, key, path string) (float64, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		b.warn(path, "must be a number, not %s; using the default", kind(v))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil {
		b.warn(path, "is not a usable number (%s); using the default", n)
		return 0, false
	}
	return f, true
}

func (b *builder) str(m map[string]any, key, path string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		b.fail(path, "must be a string, not %s", kind(v))
		return ""
	}
	return strings.TrimSpace(s)
}

func (b *builder) boolPtr(m map[string]any, key, path string) *bool {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	x, isBool := v.(bool)
	if !isBool {
		b.fail(path, "must be true or false, not %s", kind(v))
		return nil
	}
	return &x
}

func (b *builder) strings(m map[string]any, key, path string) []string {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		b.fail(path, "must be an array of strings, not %s", kind(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			b.fail(path, "[%d] must be a string, not %s", i, kind(e))
			return nil
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func build(doc map[string]any, origin map[string]string, home string) (*Config, []string, error) {
	b := &builder{doc: doc, origin: origin}
	cfg := &Config{Home: home, Raw: make(map[string]json.RawMessage, len(doc))}
	for k, v := range doc {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("config: re-encode %q: %w", k, err)
		}
		cfg.Raw[k] = raw
	}

	unknownKeys(b, doc)
	cfg.MaxIterations = max(b.integer(doc, "maxIterations", "maxIterations", DefaultMaxIterations), 1)
	cfg.MaxSubagentIterations = max(b.integer(doc, "maxSubagentIterations", "maxSubagentIterations", DefaultMaxSubagentIterations), 1)
	cfg.MaxRetries = max(b.integer(doc, "maxRetries", "maxRetries", DefaultMaxRetries), 0)
	cfg.MaxSubagentDepth = b.integer(doc, "maxSubagentDepth", "maxSubagentDepth", DefaultMaxSubagentDepth)
	if cfg.MaxSubagentDepth < 0 || cfg.MaxSubagentDepth > MaxSubagentDepthLimit {
		b.fail("maxSubagentDepth", "must be between 0 (no delegation) and %d, got %d", MaxSubagentDepthLimit, cfg.MaxSubagentDepth)
	}
	cfg.AutoApprovedCommands = b.strings(doc, "autoApprovedCommands", "autoApprovedCommands")
	if cfg.AutoApprovedCommands == nil {
		cfg.AutoApprovedCommands = []string{}
	}

	st := b.obj(doc, "storage", "storage")
	cfg.Storage = Storage{Type: b.str(st, "type", "storage.type"), Path: b.str(st, "path", "storage.path")}
	lg := b.obj(doc, "logging", "logging")
	cfg.Logging = Logging{Level: b.str(lg, "level", "logging.level"), Format: b.str(lg, "format", "logging.format")}

	cfg.LLM = map[string]LLMSettings{}
	for name, v := range b.obj(doc, "llm", "llm") {
		o, ok := v.(map[string]any)
		if !ok {
			b.fail("llm."+name, "must be an object, not %s", kind(v))
			continue
		}
		cfg.LLM[name] = LLMSettings{
			APIKey:    b.str(o, "api_key", "llm."+name+".api_key"),
			BaseURL:   b.str(o, "base_url", "llm."+name+".base_url"),
			KeepAlive: keepAlive(b, o, "llm."+name+".keep_alive"),
		}
	}

	out := b.obj(doc, "output", "output")
	cfg.Output.Streaming.Enabled = streaming(b, b.obj(out, "streaming", "output.streaming"))

	cfg.Context = ratios(b, b.obj(doc, "context", "context"))
	cfg.Telemetry = telemetry(b, b.obj(doc, "telemetry", "telemetry"), home)
	cfg.Pricing = prices(b, b.obj(doc, "pricing", "pricing"))
	if ct, has := doc["customTools"]; has {
		where := "config customTools"
		if f := origin["customTools"]; f != "" {
			where = "config " + f + ": customTools"
		}
		tools, err := ParseCustomTools(ct, where)
		if err != nil && b.err == nil {
			b.err = err
		}
		cfg.CustomTools = tools
	}

	return cfg, b.warnings, b.err
}

// keepAlive accepts Ollama's string ("30m", "-1") or a number of seconds.
func keepAlive(b *builder, o map[string]any, path string) string {
	switch v := o["keep_alive"].(type) {
	case nil:
		return ""
	case json.Number:
		return v.String()
	case string:
		return strings.TrimSpace(v)
	default:
		b.fail(path, "must be a string such as \"30m\", not %s", kind(v))
		return ""
	}
}

func streaming(b *builder, o map[string]any) string {
	switch v := o["enabled"].(type) {
	case nil:
		return StreamingAuto
	case bool:
		return strconv.FormatBool(v)
	case string:
		switch s := strings.ToLower(strings.TrimSpace(v)); s {
		case StreamingAuto, StreamingTrue, StreamingFalse:
			return s
		}
	}
	b.warn("output.streaming.enabled", "must be \"auto\", true or false; using \"auto\"")
	return StreamingAuto
}

// ratios validates the context thresholds (agent-loop.md §4): each must be
// finite with 0<x<1, compact<0.95 and warn<compact. A bad one is a warning
// and the default, never an error.
func ratios(b *builder, o map[string]any) Context {
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x > 0 && x < 1 }
	compact := DefaultCompactRatio
	if x, set := b.number(o, "compactThresholdRatio", "context.compactThresholdRatio"); set {
		if ok(x) && x < 0.95 {
			compact = x
		} else {
			b.warn("context.compactThresholdRatio", "must be between 0 and 0.95, got %v; using %v", x, DefaultCompactRatio)
		}
	}
	warnDefault := min(DefaultWarnRatio, compact)
	warn := warnDefault
	if x, set := b.number(o, "warnThresholdRatio", "context.warnThresholdRatio"); set {
		if ok(x) && x < compact {
			warn = x
		} else {
			b.warn("context.warnThresholdRatio", "must be between 0 and the compact ratio %v, got %v; using %v", compact, x, warnDefault)
		}
	}
	return Context{WarnThresholdRatio: warn, CompactThresholdRatio: compact}
}

func telemetry(b *builder, o map[string]any, home string) Telemetry {
	t := Telemetry{
		Enabled:         b.boolPtr(o, "enabled", "telemetry.enabled"),
		StoragePath:     b.str(o, "storagePath", "telemetry.storagePath"),
		RetentionDays:   b.integer(o, "retentionDays", "telemetry.retentionDays", 90),
		BufferSize:      b.integer(o, "bufferSize", "telemetry.bufferSize", 100),
		FlushIntervalMs: b.integer(o, "flushIntervalMs", "telemetry.flushIntervalMs", 30000),
	}
	if t.StoragePath == "" {
		t.StoragePath = filepath.Join(home, "telemetry")
	}
	ot := b.obj(o, "otlp", "telemetry.otlp")
	t.OTLP = OTLP{
		Endpoint:       b.str(ot, "endpoint", "telemetry.otlp.endpoint"),
		TracesEndpoint: b.str(ot, "tracesEndpoint", "telemetry.otlp.tracesEndpoint"),
		LogsEndpoint:   b.str(ot, "logsEndpoint", "telemetry.otlp.logsEndpoint"),
		ServiceName:    b.str(ot, "serviceName", "telemetry.otlp.serviceName"),
		Signals:        b.strings(ot, "signals", "telemetry.otlp.signals"),
		Enabled:        b.boolPtr(ot, "enabled", "telemetry.otlp.enabled"),
		TimeoutMs:      b.integer(ot, "timeoutMs", "telemetry.otlp.timeoutMs", 10000),
	}
	if c := b.boolPtr(ot, "captureContent", "telemetry.otlp.captureContent"); c != nil {
		t.OTLP.CaptureContent = *c
	}
	if hv, ok := ot["headers"]; ok && hv != nil {
		hm, isObj := hv.(map[string]any)
		if !isObj {
			b.fail("telemetry.otlp.headers", "must be an object of strings, not %s", kind(hv))
		}
		t.OTLP.Headers = make(map[string]string, len(hm))
		for k, v := range hm {
			s, isStr := v.(string)
			if !isStr {
				// Never echo a header value: it may be a token.
				b.fail("telemetry.otlp.headers."+k, "must be a string, not %s", kind(v))
				continue
			}
			t.OTLP.Headers[k] = s
		}
	}
	return t
}

// prices reads config `pricing`: {"provider/model": {input, output,
// cache_read, cache_write}} in USD per 1M tokens. A bad entry is a warning and ignored,
// so the snapshot (or "unknown") applies.
func prices(b *builder, o map[string]any) map[string]pricing.Price {
	out := make(map[string]pricing.Price, len(o))
	for key, v := range o {
		path := "pricing." + key
		e, ok := v.(map[string]any)
		if !ok {
			b.warn(path, "must be an object {input, output, cache_read, cache_write}; ignored")
			continue
		}
		var p pricing.Price
		for field, dst := range map[string]**float64{"input": &p.Input, "output": &p.Output, "cache_read": &p.CacheRead, "cache_write": &p.CacheWrite} {
			if x, set := b.number(e, field, path+"."+field); set {
				if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
					b.warn(path+"."+field, "must be a non-negative number; ignored")
					continue
				}
				*dst = &x
			}
		}
		out[strings.ToLower(strings.TrimSpace(key))] = p
	}
	return out
}
