package asktools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

func TestToolsOffered(t *testing.T) {
	names := func(ts []tools.Tool) (out []string) {
		for _, tl := range ts {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(Tools(false)); strings.Join(got, ",") != NameQuestion {
		t.Errorf("bridge tools = %v", got)
	}
	if got := names(Tools(true)); strings.Join(got, ",") != NameQuestion+","+NameFilePicker {
		t.Errorf("terminal tools = %v", got)
	}
	reg, err := tools.NewRegistry(Tools(true)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		ok         bool
	}{
		{NameQuestion, `{"question":"q"}`, true},
		{NameQuestion, `{}`, false},
		{NameQuestion, `{"question":"q","suggested_responses":[{"value":"a"}]}`, false}, // ≥2 when given
		{NameQuestion, `{"question":"q","suggested_responses":[{"value":"a"},{"label":"b"}]}`, false},
		{NameFilePicker, `{"message":"m","extensions":[".go"]}`, true},
	} {
		if err := reg.Validate(tc.tool, json.RawMessage(tc.args)); (err == nil) != tc.ok {
			t.Errorf("%s %s: err = %v, want ok=%v", tc.tool, tc.args, err, tc.ok)
		}
	}
}

// TestAsk runs questions over a real in-process bus with a responder that
// answers the way a bridge would.
func TestAsk(t *testing.T) {
	ctx := context.Background()
	b := startBus(t)
	const run = "run-a"
	answers := map[string]string{}
	var asked []messages.UserInputRequired
	sub, err := b.Conn().Subscribe(messages.InputRequiredSubject(run), func(m *nats.Msg) {
		q, _ := messages.Decode[messages.UserInputRequired](m.Data)
		asked = append(asked, q)
		_ = b.Publish(messages.InputAnsweredSubject(run), messages.UserInputAnswered{RequestID: "ui-other", Response: "noise"}, nil)
		_ = b.Publish(messages.InputAnsweredSubject(run), messages.UserInputAnswered{RequestID: q.RequestID, Response: answers[q.Question]}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	dir := t.TempDir()
	for _, f := range []string{"a.go", "b.md", ".hidden.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := &tools.Env{AgentName: "a", WorkDir: dir, Asker: NewAsker(b, run, deadline.New(time.Hour))}
	answers["Which?"] = "tomorrow"
	answers["Pick a file"] = "1"

	for _, tc := range []struct {
		name, q, args, want string
		handler             tools.Handler
	}{
		{"answered", "Which?", `{"question":"Which?","suggested_responses":[{"value":"today"},{"value":"tomorrow"}]}`, "User responded: tomorrow", askQuestion},
		{"empty is no answer", "Silent?", `{"question":"Silent?"}`, NoAnswer, askQuestion},
		{"picker", "Pick a file", `{"message":"Pick a file","extensions":["go"]}`, "User selected: " + filepath.Join(dir, "1"), pickFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.handler(ctx, env, json.RawMessage(tc.args))
			if !r.Success || r.Value != tc.want {
				t.Errorf("result = %+v, want %q", r, tc.want)
			}
		})
	}
	if len(asked) != 3 || asked[0].RequestID != "ui-1" || asked[2].RequestID != "ui-3" || !asked[0].AllowCustom {
		t.Errorf("requests = %+v", asked)
	}
	// The picker offered only visible .go files.
	if s := asked[2].Suggestions; len(s) != 1 || s[0].Value != "a.go" {
		t.Errorf("picker suggestions = %+v", s)
	}
	// No asker (unattended): no wait, no answer.
	if r := askQuestion(ctx, &tools.Env{}, json.RawMessage(`{"question":"q"}`)); r.Value != NoAnswer {
		t.Errorf("without asker: %+v", r)
	}
}
