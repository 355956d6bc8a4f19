package e2e_test

import (
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestKnownSecretsLeaveNoVariable: a secret the run knows (the provider
// key from the environment, a key in the config) kept in a variable whose
// name and value look innocent (FOO=<the provider key>) does not reach a
// program execute_command starts, in any encoding. A variable of the same
// shape holding nothing jazz knows does, so the check can fail.
func TestKnownSecretsLeaveNoVariable(t *testing.T) {
	provider := randomSecret(t, "k9-")
	configKey := randomSecret(t, "q7.")
	unknown := randomSecret(t, "u5-")
	srv := chatserver.New(calls(shellCall("env", "env | rev; printenv FOO CONF_COPY BAR | od -c")), answer("done"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 0, "llm": {"anthropic": {"api_key": "` + configKey + `"}}}`)
	w.env = append(w.env, "OPENAI_API_KEY="+provider, "FOO="+provider, "CONF_COPY="+configKey, "BAR="+unknown)
	w.agent("sh", "execute_command")
	wantSuccess(t, w.exec("", "run", "--agent", "sh", "--json", "--approval-policy", "high-risk", "--timeout", "60000", "go"))
	res := toolResults(srv)["env"]
	if got := leaks(res, map[string]string{"unknown": unknown}); len(got) == 0 {
		t.Fatalf("the control variable BAR did not reach the program; the check proves nothing:\n%s", res)
	}
	if got := leaks(res, map[string]string{"provider key": provider, "config key": configKey}); len(got) > 0 {
		t.Fatalf("%q reached the program through a variable:\n%s", got, res)
	}
	if !strings.Contains(res, "PATH") && !strings.Contains(res, "HTAP") {
		t.Fatalf("env did not run:\n%s", res)
	}
}
