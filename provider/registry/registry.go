// Package registry turns a provider name and model into a ready
// provider.Provider: which endpoint each vendor lives at, which env var
// holds its key, how its base URL is overridden, and how it wants the
// reasoning effort. Every vendor but Anthropic speaks Chat Completions
// through provider/openai; anthropic speaks the Messages API through
// provider/anthropic; `replay` plays a script from provider/replay.
//
// Open does no network I/O, so resolving a model is cheap at start-up.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/anthropic"
	"github.com/jazz-run/jazz/provider/httpx"
	"github.com/jazz-run/jazz/provider/openai"
	"github.com/jazz-run/jazz/provider/replay"
)

// Settings are what the caller resolved for one provider.
type Settings struct {
	// APIKey wins over the env var: the caller resolves agent llmApiKeys →
	// env → config file (providers.md §1) and passes the result, or "" to
	// let Open read the env var.
	APIKey string
	// BaseURL is config `llm.<p>.base_url`; it beats the env var.
	BaseURL string
	// KeepAlive is ollama's keep_alive ("30m", "-1"); "" leaves Ollama's
	// default.
	KeepAlive string
	// NumCtx is ollama's num_ctx (the agent's numCtx); 0 leaves it unset.
	NumCtx int
	// Getenv reads the environment; nil uses os.Getenv.
	Getenv func(string) string
	// HTTPClient is shared by the clients; nil gives each its own httpx
	// client with the default bounds and the proxy Getenv names.
	HTTPClient *http.Client
	// ReplayDir is where `replay/<script>` looks after the working
	// directory.
	ReplayDir string
}

// ErrMissingKey is wrapped by the error of a remote provider opened
// without a key.
var ErrMissingKey = errors.New("missing API key")

// vendor is one OpenAI-compatible endpoint.
type vendor struct {
	name    string
	baseURL string
	keyEnv  string
	// urlEnv overrides baseURL when the config has none.
	urlEnv string
	// local servers need no key and get a start-the-server hint.
	local     bool
	hint      string
	reasoning func(effort string) map[string]any
}

// vendorCount is how many providers vendorTable lists.
const vendorCount = 18

// vendorTable lists the providers Open knows, by value: no package state,
// and no map built at every look-up (a run looks a few up).
func vendorTable() [vendorCount]vendor {
	return [...]vendor{
		{name: "openai", baseURL: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY", urlEnv: "OPENAI_BASE_URL"},
		{name: "openrouter", baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", reasoning: openRouterReasoning},
		{name: "anthropic", baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY", urlEnv: "ANTHROPIC_BASE_URL"},
		{name: "gemini", baseURL: "https://generativelanguage.googleapis.com/v1beta/openai", keyEnv: "GOOGLE_GENERATIVE_AI_API_KEY", reasoning: noneToDisable},
		{name: "xai", baseURL: "https://api.x.ai/v1", keyEnv: "XAI_API_KEY"},
		{name: "ai_gateway", baseURL: "https://ai-gateway.vercel.sh/v1", keyEnv: "AI_GATEWAY_API_KEY"},
		{name: "alibaba", baseURL: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", keyEnv: "ALIBABA_API_KEY"},
		{name: "cerebras", baseURL: "https://api.cerebras.ai/v1", keyEnv: "CEREBRAS_API_KEY"},
		{name: "deepseek", baseURL: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY"},
		{name: "fireworks", baseURL: "https://api.fireworks.ai/inference/v1", keyEnv: "FIREWORKS_API_KEY"},
		{name: "groq", baseURL: "https://api.groq.com/openai/v1", keyEnv: "GROQ_API_KEY"},
		{name: "minimax", baseURL: "https://api.minimax.io/v1", keyEnv: "MINIMAX_API_KEY"},
		{name: "mistral", baseURL: "https://api.mistral.ai/v1", keyEnv: "MISTRAL_API_KEY"},
		{name: "moonshotai", baseURL: "https://api.moonshot.ai/v1", keyEnv: "MOONSHOT_API_KEY"},
		{name: "togetherai", baseURL: "https://api.together.xyz/v1", keyEnv: "TOGETHER_AI_API_KEY"},
		{name: "zhipuai", baseURL: "https://open.bigmodel.cn/api/paas/v4", keyEnv: "ZHIPU_API_KEY"},
		{name: "ollama",
			baseURL: "http://localhost:11434/api", urlEnv: "OLLAMA_BASE_URL", local: true,
			hint:      "Is Ollama running? Start it with `ollama serve` (and `ollama pull <model>` if the model is missing).",
			reasoning: noneToDisable,
		},
		{name: "llamacpp",
			baseURL: "http://localhost:8080/v1", keyEnv: "LLAMACPP_API_KEY", urlEnv: "LLAMACPP_BASE_URL", local: true,
			hint:      "Is the llama.cpp server running? Start it with `llama-server -m <model.gguf> --jinja` (tools need --jinja).",
			reasoning: llamacppReasoning,
		},
	}
}

// Names lists the providers Open accepts, sorted.
func Names() []string {
	var out []string
	for _, v := range vendorTable() {
		out = append(out, v.name)
	}
	out = append(out, "replay")
	sort.Strings(out)
	return out
}

// KeyEnv is the env var holding name's API key, "" when it has none.
func KeyEnv(name string) string {
	v, _ := lookupVendor(name)
	return v.keyEnv
}

// lookupVendor finds name in vendorTable.
func lookupVendor(name string) (vendor, bool) {
	t := vendorTable()
	for i := range t {
		if t[i].name == name {
			return t[i], true
		}
	}
	return vendor{}, false
}

// Open builds the provider for name (as split by provider.ParseModelID)
// and model. It checks settings but does not contact the server; ctx
// bounds what it reads (a replay script).
func Open(ctx context.Context, name, model string, s Settings) (provider.Provider, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if name == "replay" {
		path, err := replay.Resolve(model, s.ReplayDir)
		if err != nil {
			return nil, err
		}
		return replay.Load(ctx, path)
	}
	v, ok := lookupVendor(name)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf("%s: no model given", name)
	}

	key := strings.TrimSpace(s.APIKey)
	if key == "" && v.keyEnv != "" {
		key = strings.TrimSpace(getenv(v.keyEnv))
	}
	if key == "" && !v.local {
		return nil, fmt.Errorf("%w: set %s or llm.%s.api_key in the config file", ErrMissingKey, v.keyEnv, name)
	}

	// A base URL that cannot work is the user's to fix, now: no retry
	// would ever reach it.
	base, from := baseURL(name, v, s, getenv)
	if err := provider.CheckBaseURL(base, from); err != nil {
		return nil, err
	}
	client := s.HTTPClient
	if client == nil {
		client = httpx.New(httpx.Options{Limits: httpx.DefaultLimits(), Getenv: getenv})
	}
	if name == "anthropic" {
		// The Messages API natively: prompt caching, extended thinking
		// and exact usage, which the OpenAI-compatible endpoint loses.
		return anthropic.New(anthropic.Options{BaseURL: base, APIKey: key, HTTPClient: client}), nil
	}
	opts := openai.Options{
		BaseURL:         base,
		APIKey:          key,
		Name:            name,
		HTTPClient:      client,
		Reasoning:       v.reasoning,
		UnreachableHint: v.hint,
	}
	switch name {
	case "ollama":
		opts.BaseURL = OllamaOpenAIBase(base)
		opts.ExtraBody = ollamaExtra(s.KeepAlive, s.NumCtx)
	case "openrouter":
		opts.Headers = map[string]string{"X-Title": "jazz"}
	}
	return openai.New(opts), nil
}

// BaseURL is the endpoint name is reached at under s: config
// `llm.<p>.base_url`, else the provider's env var, else its default ("" for
// an unknown provider). Ollama's is in OLLAMA_BASE_URL's form (…/api).
func BaseURL(name string, s Settings) string {
	v, ok := lookupVendor(name)
	if !ok {
		return ""
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	base, _ := baseURL(name, v, s, getenv)
	return base
}

// baseURL is the endpoint and where it came from (for the error that
// says it cannot work).
func baseURL(name string, v vendor, s Settings, getenv func(string) string) (base, from string) {
	base, from = strings.TrimSpace(s.BaseURL), "llm."+name+".base_url in the config"
	if base == "" && v.urlEnv != "" {
		base, from = strings.TrimSpace(getenv(v.urlEnv)), v.urlEnv
	}
	if base == "" {
		base = v.baseURL
	}
	return base, from
}

// Local says whether name is a local model server (ollama, llamacpp).
func Local(name string) bool {
	v, _ := lookupVendor(name)
	return v.local
}

// OllamaOpenAIBase derives Ollama's OpenAI-compatible root from its
// OLLAMA_BASE_URL form (`http://host:11434/api`, `/api` optional):
// `http://host:11434/v1`. A base already ending in /v1 is kept.
func OllamaOpenAIBase(base string) string {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if strings.HasSuffix(base, "/v1") {
		return base
	}
	return strings.TrimSuffix(base, "/api") + "/v1"
}

// ollamaExtra carries keep_alive and num_ctx. A numeric keep_alive ("-1",
// "300") goes as a number, since Ollama reads a string as a Go duration
// and "-1" has no unit.
func ollamaExtra(keepAlive string, numCtx int) map[string]any {
	extra := map[string]any{}
	if ka := strings.TrimSpace(keepAlive); ka != "" {
		if n, err := strconv.Atoi(ka); err == nil {
			extra["keep_alive"] = n
		} else {
			extra["keep_alive"] = ka
		}
	}
	if numCtx > 0 {
		extra["options"] = map[string]any{"num_ctx": numCtx}
	}
	if len(extra) == 0 {
		return nil
	}
	return extra
}

// openRouterReasoning uses OpenRouter's unified `reasoning` object.
func openRouterReasoning(effort string) map[string]any {
	switch effort {
	case "low", "medium", "high":
		return map[string]any{"reasoning": map[string]any{"effort": effort}}
	case "disable":
		return map[string]any{"reasoning": map[string]any{"enabled": false}}
	}
	return nil
}

// noneToDisable sends reasoning_effort, with "none" for disable (Gemini's
// and Ollama's OpenAI-compatible endpoints turn thinking off with it).
func noneToDisable(effort string) map[string]any {
	if effort == "disable" {
		return map[string]any{"reasoning_effort": "none"}
	}
	return openai.DefaultReasoning(effort)
}

// llamacppReasoning: disable → reasoning_budget 0 (providers.md §3).
func llamacppReasoning(effort string) map[string]any {
	if effort == "disable" {
		return map[string]any{"reasoning_budget": 0}
	}
	return openai.DefaultReasoning(effort)
}
