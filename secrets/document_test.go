package secrets_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/store/agents"
)

// Values that exercise the collection: credentials Find knows, values
// under secret keys that are and are not plausible, paths, URLs,
// variable names, HTML characters, invalid UTF-8 and U+2028.
var docStrings = []string{
	"", "x", "short", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	"AKIAIOSFODNN7EXAMPLE", "Bearer abcdefghijklmnop", "OPENAI_API_KEY", "/etc/passwd", "/no/such/path/at/all",
	"~/creds", "./x", "https://api.example.com/v1", "https://hooks.example.com/services/T000/B000/abcdefghijklmnopqrstuvwx",
	"https://user:pw@example.com", "true", "disabled", "p<a>s&s\u2028word", "bad\xffutf8\xfevalue-long", "\xed\xa0\x80surrogate",
	"xoxb-1234567890-abcdefghijkl", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"postgres://app:hunter2hunter2@db.internal:5432/app", "  padded-secret-value  ", "line\nbreak-secret-value",
}

func str(r *rand.Rand) string { return docStrings[r.IntN(len(docStrings))] }

// key is a map key as a decoded JSON document has them: valid UTF-8.
func key(r *rand.Rand) string { return strings.ToValidUTF8(str(r), "?") }

func randomConfig(r *rand.Rand) *config.Config {
	f := func() *float64 { x := r.Float64() * 10; return &x }
	b := r.IntN(2) == 0
	c := &config.Config{
		Home: str(r), Files: []string{str(r), str(r)}, MaxIterations: r.IntN(100), MaxRetries: r.IntN(5),
		AutoApprovedCommands: []string{str(r), str(r)},
		Storage:              config.Storage{Type: str(r), Path: str(r)},
		Logging:              config.Logging{Level: str(r), Format: str(r)},
		LLM: map[string]config.LLMSettings{
			"openai": {APIKey: str(r), BaseURL: str(r), KeepAlive: str(r)},
			key(r):   {APIKey: str(r)},
		},
		Output:  config.Output{Streaming: config.Streaming{Enabled: str(r)}},
		Context: config.Context{WarnThresholdRatio: r.Float64(), CompactThresholdRatio: r.Float64()},
		Telemetry: config.Telemetry{Enabled: &b, StoragePath: str(r), OTLP: config.OTLP{
			Endpoint: str(r), Headers: map[string]string{"Authorization": str(r), key(r): str(r)}, Signals: []string{str(r)},
		}},
		Pricing: map[string]pricing.Price{key(r): {Input: f(), Output: f()}, "a/b": {}},
		CustomTools: []config.CustomTool{{Name: str(r), Description: str(r), Parameters: json.RawMessage(`{"type":"object"}`),
			Handler: config.CustomHandler{Type: "command", Response: str(r), Command: []string{str(r), str(r)}, Timeout: time.Second}}},
		Raw: map[string]json.RawMessage{
			"mcpServers": json.RawMessage(fmt.Sprintf(`{"s":{"headers":{"Authorization":%q},"env":{"TOKEN":%q},"url":%q}}`,
				strings.ToValidUTF8(str(r), "?"), strings.ToValidUTF8(str(r), "?"), strings.ToValidUTF8(str(r), "?"))),
			"web_search": json.RawMessage(fmt.Sprintf(` { "apiKey" : %q, "n": 3, "list": [%q, null, true] } `,
				strings.ToValidUTF8(str(r), "?"), strings.ToValidUTF8(str(r), "?"))),
			"empty":   nil,
			"str":     json.RawMessage(fmt.Sprintf(`%q`, strings.ToValidUTF8(str(r), "?"))),
			"raw<&>":  json.RawMessage(`"\u003chtml\u003e-secret-value"`),
			"apiKeys": json.RawMessage(fmt.Sprintf(`[%q]`, strings.ToValidUTF8(str(r), "?"))),
		},
	}
	if r.IntN(3) == 0 {
		c.LLM = nil
		c.Telemetry.Enabled = nil
	}
	return c
}

func randomAgent(r *rand.Rand) agents.Agent {
	n := r.IntN(5)
	t := r.Float64()
	return agents.Agent{
		ID: str(r), Name: str(r), Description: str(r), Model: str(r), CreatedAt: str(r), UpdatedAt: str(r),
		Config: agents.Config{
			Persona: str(r), LLMProvider: str(r), LLMModel: str(r), Tools: []string{str(r), str(r)},
			LLMAPIKeys: map[string]string{"openai": str(r), key(r): str(r)}, NumCtx: &n, Temperature: &t,
			EnvAllowlist: []string{str(r)}, SystemPrompt: str(r),
			CustomTools: json.RawMessage(fmt.Sprintf(`[{"name":"t","handler":{"type":"command","command":[%q],"env":{"API_TOKEN":%q}}}]`,
				strings.ToValidUTF8(str(r), "?"), strings.ToValidUTF8(str(r), "?"))),
		},
	}
}

// TestFromDocumentIsTheRoundTrip: Collect walks the merged config and
// the agent instead of marshalling them and decoding the JSON back; for
// the types it is given, and for random values of them, the secrets
// found are exactly the round trip's, and the walk (not its fallback)
// is what found them.
func TestFromDocumentIsTheRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	docs := []any{config.Config{}, &config.Config{}, agents.Agent{}, nil, (*config.Config)(nil)}
	for range 300 {
		docs = append(docs, randomConfig(r), randomAgent(r))
	}
	for i, d := range docs {
		if !secrets.Walks(d) {
			t.Errorf("doc %d (%T): the walk fell back to the round trip", i, d)
		}
		got, want := secrets.FromDocument(d), secrets.RoundTrip(d)
		if !slices.Equal(got, want) {
			t.Fatalf("doc %d (%T):\n walk       %q\n round trip %q", i, d, got, want)
		}
	}
	// The values are there to be found: the test is not comparing two
	// empty lists.
	if got := secrets.FromDocument(randomAgent(rand.New(rand.NewPCG(3, 4)))); len(got) == 0 {
		t.Error("nothing found in an agent full of secrets")
	}
}

type withMarshaler struct {
	Token string `json:"token"`
	Stamp time.Time
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("api_" + string(k)), nil }

type selfWriting struct{ Secret string }

func (s selfWriting) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"renamed": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "token": s.Secret})
}

type ptrWriting struct{ Secret string }

// ownList is a named slice that writes itself.
type ownList []string

func (ownList) MarshalJSON() ([]byte, error) { return []byte(`{"token":"own-list-token-value"}`), nil }

// ptrMap writes itself through a pointer, which encoding/json takes when
// the map is addressable (a slice element).
type ptrMap map[string]string

func (*ptrMap) MarshalJSON() ([]byte, error) { return []byte(`{"token":"ptr-map-token-value"}`), nil }

func (s *ptrWriting) MarshalJSON() ([]byte, error) {
	return []byte(`{"password":"ptr-written-secret"}`), nil
}

type Embedded struct{ Password string }

type withEmbedded struct {
	Embedded
	Password string `json:"password"`
}

// withShadowed's own Password hides the embedded one from encoding/json.
type withShadowed struct {
	Embedded
	Password string
}

// zeroish says it is zero whatever it holds: omitzero leaves it out.
type zeroish struct{ Token string }

func (zeroish) IsZero() bool { return true }

// One struct per tag rule, so that no field's fallback hides another's.
type (
	tagSkip struct {
		A string `json:"-"`
		P string `json:"password"`
	}
	tagDash struct {
		B string `json:"-,"`
	}
	tagHyphen struct {
		C string `json:"api-key"`
	}
	tagStringOpt struct {
		D string `json:"token,string"`
	}
	tagOmitEmpty struct {
		E string `json:",omitempty"`
		X string `json:"apiKey,omitempty"`
	}
	tagDuplicate struct {
		F      string `json:"Secret"`
		Secret string // encoding/json keeps the tagged one
	}
	tagUnexported struct {
		h string
		P string `json:"password"`
	}
	tagIntString struct {
		I int `json:"key,string"`
	}
	tagOmitZero struct {
		J string  `json:"token2,omitzero"`
		Z zeroish `json:"z,omitzero"`
	}
	tagAny struct {
		K any `json:"auth"`
	}
	tagBytes struct {
		L []byte `json:"keyBytes"`
	}
	tagNumber struct {
		M json.Number `json:"apiNumber"`
	}
	tagArray struct {
		N [2]string `json:"tokens"`
	}
	tagRawPtr struct {
		O *json.RawMessage `json:"credRaw"`
	}
)

// TestFromDocumentFallsBack: the shapes the walk
// does not read itself (own marshalers, embedded structs, tags with
// options it does not copy, bytes, numbers, values encoding/json
// refuses) still give exactly the round trip's result.
func TestFromDocumentFallsBack(t *testing.T) {
	sec := "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
	raw := json.RawMessage(`{"token":"raw-pointer-secret"}`)
	ch := make(chan int)
	type cyclic struct {
		Token string
		Next  *cyclic
	}
	loop := &cyclic{Token: "cyclic-token-value"}
	loop.Next = loop
	deep := map[string]any{"token": "deep-token-value"}
	for range 80 {
		deep = map[string]any{"x": deep}
	}
	docs := []any{
		withMarshaler{Token: sec, Stamp: time.Unix(0, 0).UTC()},
		map[textKey]string{"k": sec},
		map[string]selfWriting{"a": {Secret: "self-written-secret"}},
		map[string]*ptrWriting{"a": {Secret: "x"}},
		[]ptrWriting{{Secret: "y"}},
		map[string]ownList{"apiKey": {"listed-secret-value"}},
		[]ptrMap{{"apiKey": "map-secret-value"}},
		map[string]ptrMap{"apiKey": {"apiKey": "map-secret-value"}},
		withEmbedded{Embedded: Embedded{Password: "embedded-password"}, Password: "outer-password"},
		withShadowed{Embedded: Embedded{Password: "shadowed-password"}, Password: "outer-password"},
		tagSkip{A: sec, P: "skip-neighbour-secret"},
		tagDash{B: "dash-secret-value"},
		tagHyphen{C: "hyphen-secret-value"},
		tagStringOpt{D: "string-option-secret"},
		tagOmitEmpty{E: "omitempty-secret-value", X: "omitempty-key-secret"},
		tagOmitEmpty{},
		tagDuplicate{F: "dup-one-secret", Secret: "dup-two-secret"},
		tagUnexported{h: sec, P: "unexported-neighbour"},
		tagIntString{I: 123456789},
		tagOmitZero{J: "omitzero-secret-value", Z: zeroish{Token: "zeroish-token-value"}},
		tagAny{K: map[string]any{"nested": "interface-secret-value"}},
		tagAny{K: selfWriting{Secret: "inside-any-secret"}},
		tagBytes{L: []byte(sec)},
		tagNumber{M: "12345678"},
		tagNumber{M: "not-a-number-secret"},
		tagArray{N: [2]string{"array-secret-value", sec}},
		tagRawPtr{O: &raw},
		tagRawPtr{},
		map[string]any{"apiKey": math.NaN(), "token": sec},
		map[string]any{"token": sec, "c": ch},
		map[string]any{"token": sec, "raw": json.RawMessage(`{bad`)},
		map[string]any{"token": sec, "raw": json.RawMessage{}},
		map[int]string{1: sec},
		map[string]string{"api\xffkey": "coerced-key-secret", "api\xfekey": "other-coerced-key"},
		loop,
		deep,
		map[string]any{"f": float32(1.5), "u": uint8(3), "c": complex(1, 2)},
	}
	for i, d := range docs {
		got, want := secrets.FromDocument(d), secrets.RoundTrip(d)
		if !slices.Equal(got, want) {
			t.Errorf("doc %d (%T):\n walk       %q\n round trip %q", i, d, got, want)
		}
	}
}
