package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider/httpx"
	"github.com/jazz-run/jazz/provider/retry"
)

func TestModelLimits(t *testing.T) {
	cfg := func(raw string) *config.Config {
		return &config.Config{Raw: map[string]json.RawMessage{ModelCallKey: json.RawMessage(raw)}}
	}
	l, err := modelLimits(&config.Config{})
	if err != nil || l.HTTP != httpx.DefaultLimits() || l.Step != retry.StepCeiling || l.Slow != retry.SlowHint {
		t.Fatalf("defaults: %+v %v", l, err)
	}
	l, err = modelLimits(cfg(`{"connectTimeoutMs": 500, "firstByteTimeoutMs": 2000, "idleTimeoutMs": 3000, "stepTimeoutMs": 10000, "slowNoticeMs": 100, "maxResponseBytes": 65536}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ModelLimits{HTTP: httpx.Limits{Connect: 500 * time.Millisecond, FirstByte: 2 * time.Second, Idle: 3 * time.Second, MaxBytes: 65536},
		Step: 10 * time.Second, Slow: 100 * time.Millisecond}
	if l != want {
		t.Errorf("got %+v", l)
	}
	for _, bad := range []string{`[]`, `{"idleTimeoutMs": 0}`, `{"idleTimeoutMs": -5}`, `{"idleTimeoutMs": 1.5}`, `{"idleTimeoutMs": "10"}`,
		`{"maxResponseBytes": 10}`, `{"stepTimeoutMs": 1e12}`, `{"idleTimeout": 5}`} {
		if _, err := modelLimits(cfg(bad)); err == nil || !strings.Contains(err.Error(), ModelCallKey) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestTurnMessages(t *testing.T) {
	u := func(s string) messages.ChatMessage { return messages.ChatMessage{Role: messages.RoleUser, Content: s} }
	a := func(s string) messages.ChatMessage {
		return messages.ChatMessage{Role: messages.RoleAssistant, Content: s}
	}
	sys := messages.ChatMessage{Role: messages.RoleSystem, Content: "sys"}
	pre := messages.ChatMessage{Role: messages.RoleUser, Kind: messages.KindPreamble, Content: "pre"}
	sum := messages.ChatMessage{Role: messages.RoleUser, Kind: messages.KindSummary, Content: "sum"}
	melt := messages.ChatMessage{Role: messages.RoleUser, Kind: messages.KindMeltdown, Content: "melt"}
	texts := func(ms []messages.ChatMessage) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Content)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name        string
		transcript  []messages.ChatMessage
		full, added string
	}{
		{"plain", []messages.ChatMessage{sys, u("old"), a("was"), u("now"), a("is")}, "sys,old,was,now,is", "now,is"},
		{"preamble never stored", []messages.ChatMessage{sys, u("old"), pre, u("now"), a("is")}, "sys,old,now,is", "now,is"},
		{"compacted, prompt kept", []messages.ChatMessage{sys, sum, u("now"), a("x"), melt, a("is")}, "sys,sum,now,x,melt,is", "now,x,melt,is"},
		{"prompt compacted away", []messages.ChatMessage{sys, sum, a("x"), a("is")}, "sys,sum,x,is", "now,x,is"},
	}
	for _, tt := range tests {
		full, added := turnMessages(tt.transcript, "now", "is")
		if texts(full) != tt.full || texts(added) != tt.added {
			t.Errorf("%s: full %s, added %s", tt.name, texts(full), texts(added))
		}
	}
	if _, added := turnMessages(nil, "p", "ans"); texts(added) != "p,ans" {
		t.Errorf("no transcript: %s", texts(added))
	}
}
