package app_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/agents"
)

// A chat bot on jazz: each message a user sends is one run of the same
// conversation, so the agent remembers what was said. The model here is
// a local stand-in speaking the OpenAI wire format.
func Example_chatBot() {
	model := chatserver.NewFunc(func(_ int, req chatserver.Request) chatserver.Turn {
		said := *req.Messages[len(req.Messages)-1].Content
		return chatserver.Turn{Text: fmt.Sprintf("you said %q (%d messages so far)", said, len(req.Messages))}
	})
	defer model.Close()
	home, _ := os.MkdirTemp("", "jazz-chat-")
	defer os.RemoveAll(home)
	env := map[string]string{"OPENAI_API_KEY": "sk-local", "OPENAI_BASE_URL": model.URL()}
	bot := agents.Agent{ID: "bot", Name: "bot", Config: agents.Config{LLMProvider: "openai", LLMModel: "gpt-4o-mini"}}

	for _, msg := range []string{"hello", "what did I just say?"} {
		run, err := app.Start(context.Background(), app.RunOptions{
			Agent: bot, Config: &config.Config{Home: home}, Prompt: msg,
			Conversation: "chat-42", Events: []string{"usage"}, Cwd: home,
			Getenv: func(k string) string { return env[k] },
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		calls := 0
		for ev := range run.Events() { // closed after the run's last event
			if ev.Type == messages.EventComplete {
				calls++
			}
		}
		out, err := run.Wait()
		run.Close()
		fmt.Println(out.Answer, "| model calls:", calls, "| error:", err)
	}
	// Output:
	// you said "hello" (2 messages so far) | model calls: 1 | error: <nil>
	// you said "what did I just say?" (4 messages so far) | model calls: 1 | error: <nil>
}
