// Package config owns jazz's configuration: where JAZZ_HOME is, which
// config files are read and in what order they merge (config.md §2), and
// the typed, validated view of the merged document. It keeps no globals:
// Load takes every input (home, flag, environment, cwd) as a value.
package config

import (
	"encoding/json"

	"github.com/jazz-run/jazz/pricing"
)

// Defaults of the top-level keys (config.md §3, agent-loop.md §1).
const (
	DefaultMaxIterations         = 100
	DefaultMaxSubagentIterations = 30
	DefaultMaxSubagentDepth      = 3
	DefaultMaxRetries            = 10
	DefaultWarnRatio             = 0.7
	DefaultCompactRatio          = 0.8
	// MaxSubagentDepthLimit is the deepest delegation a config may ask for;
	// more is almost certainly a typo and would multiply cost.
	MaxSubagentDepthLimit = 10
)

// Config is the merged, validated configuration.
type Config struct {
	// Home is JAZZ_HOME, where agents, history and work state live.
	Home string
	// Files lists the config files that were read, in merge order.
	Files []string

	MaxIterations         int
	MaxSubagentIterations int
	MaxSubagentDepth      int
	MaxRetries            int
	// AutoApprovedCommands are allowlist entries (tools-and-approval.md §6),
	// applied on every surface, `jazz run` included.
	AutoApprovedCommands []string

	Storage Storage
	Logging Logging
	// LLM holds per-provider settings keyed by provider name (`google` is
	// already rewritten to `gemini`).
	LLM       map[string]LLMSettings
	Output    Output
	Context   Context
	Telemetry Telemetry
	// Pricing overrides the embedded price snapshot, keyed `provider/model`.
	Pricing map[string]pricing.Price
	// CustomTools are the config's own customTools (tools-and-approval.md
	// §8), validated; an agent gets one only by listing its name.
	CustomTools []CustomTool

	// Raw is the merged document, top-level key by key, for sections this
	// package does not type (web_search, notifications, mcpServers, …).
	Raw map[string]json.RawMessage
}

// Storage is the `storage` section. Path is always JAZZ_HOME unless the
// global file sets it; a project file cannot move it.
type Storage struct {
	Type string
	Path string
}

// Logging is the `logging` section; --debug forces Level "debug".
type Logging struct {
	Level  string
	Format string
}

// LLMSettings is `llm.<provider>`.
type LLMSettings struct {
	APIKey    string `json:"api_key,omitempty"`
	BaseURL   string `json:"base_url,omitempty"`
	KeepAlive string `json:"keep_alive,omitempty"`
}

// Output is the `output` section.
type Output struct {
	Streaming Streaming
}

// Streaming values of output.streaming.enabled.
const (
	StreamingAuto  = "auto"
	StreamingTrue  = "true"
	StreamingFalse = "false"
)

// Streaming is `output.streaming`.
type Streaming struct {
	// Enabled is StreamingAuto, StreamingTrue or StreamingFalse.
	Enabled string
}

// Context holds the context-pressure ratios (agent-loop.md §4), already
// validated: a bad value has been replaced by its default with a warning.
type Context struct {
	WarnThresholdRatio    float64
	CompactThresholdRatio float64
}

// Telemetry is the `telemetry` section as configured; environment
// fallbacks (OTEL_*) are the telemetry package's business.
type Telemetry struct {
	// Enabled nil means the default (on).
	Enabled         *bool
	StoragePath     string
	RetentionDays   int
	BufferSize      int
	FlushIntervalMs int
	OTLP            OTLP
}

// OTLP is `telemetry.otlp`.
type OTLP struct {
	Endpoint       string
	TracesEndpoint string
	LogsEndpoint   string
	// Headers are secrets: never log their values.
	Headers     map[string]string
	ServiceName string
	Signals     []string
	// Enabled nil means "on when an endpoint is set".
	Enabled        *bool
	CaptureContent bool
	TimeoutMs      int
}
