// Command bridge is a minimal chat bridge for `jazz run`, as a Telegram
// or Slack bot would drive it: it runs one turn with --interactive-stdin,
// shows each approval or question jazz writes on stderr, sends the
// person's answer back on stdin, and prints the envelope's answer.
//
//	go run ./examples/bridge --agent dev "tidy the README"
//	go run ./examples/bridge --agent dev --answer n "delete build/"   # unattended: always no
//
// Decisions echo the request's requestId (the gate's, unguessable), never
// only the model's toolCallId, and its actionHash, so jazz takes one only
// for the action that was shown. Closing stdin declines whatever is still
// waiting: a bridge that dies denies, it never approves.
//
// Every string in a line is the model's to choose: JSON carries an escape
// sequence or a carriage return as \u001b or \r, and decoding gives the
// byte back. So nothing decoded goes to the terminal as is; package
// visible shows each such character as an escape, and the arguments that
// run are shown beside the model's own description of them.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/jazz-run/jazz/visible"
)

func main() {
	jazz := flag.String("jazz", "jazz", "the jazz binary")
	agent := flag.String("agent", "", "agent id or name")
	answer := flag.String("answer", "", "answer every approval with y or n instead of asking on the terminal")
	conv := flag.String("conversation", "", "conversation key (the chat's id)")
	flag.Parse()
	if *agent == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: bridge --agent NAME [--answer y|n] [--conversation KEY] PROMPT")
		os.Exit(2)
	}
	os.Exit(run(*jazz, *agent, *answer, *conv, strings.Join(flag.Args(), " ")))
}

// event is the part of a stderr line the bridge reads.
type event struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	ToolName  string `json:"toolName"`
	AgentName string `json:"agentName"`
	Message   string `json:"message"`
	Question  string `json:"question"`
	Preview   string `json:"previewDiff"`
	// Arguments are what will run; ActionHash names exactly that action.
	Arguments  json.RawMessage `json:"arguments"`
	ActionHash string          `json:"actionHash"`
	RunID      string          `json:"runId"`
	StopReason string          `json:"stopReason"`
}

func run(jazz, agent, answer, conv, prompt string) int {
	args := []string{"run", "--json", "--interactive-stdin", "--events", "approval", "--agent", agent}
	if conv != "" {
		args = append(args, "--conversation", conv)
	}
	cmd := exec.Command(jazz, append(args, prompt)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		return 1
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		return 1
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		return 1
	}
	tty := bufio.NewReader(os.Stdin)
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a request is never cut: allow big diffs
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // every line is JSON; skip what is not, never act on it
		}
		switch ev.Type {
		case "run_start":
			fmt.Fprintf(os.Stderr, "[run %s]\n", ev.RunID)
		case "approval_required":
			if ev.RequestID == "" {
				continue // settled by policy: nothing to ask
			}
			fmt.Fprint(os.Stderr, showApproval(ev))
			yes := ask(tty, answer, "approve? [y/N] ")
			send(stdin, map[string]any{"type": "approval_decision", "requestId": ev.RequestID, "actionHash": ev.ActionHash, "approved": yes})
		case "user_input_required":
			fmt.Fprintf(os.Stderr, "\n%s asks:\n%s\n", visible.Line(ev.AgentName), visible.Wrap(visible.Quote("  ", ev.Question), visible.DefaultWidth, "  "))
			fmt.Fprint(os.Stderr, "> ")
			line, _ := tty.ReadString('\n')
			send(stdin, map[string]any{"type": "user_input_response", "requestId": ev.RequestID, "response": strings.TrimSpace(line)})
		case "warning", "error":
			fmt.Fprintln(os.Stderr, "!", visible.Line(ev.Message))
		}
	}
	_ = stdin.Close()
	err = cmd.Wait()
	var env struct {
		OK         bool   `json:"ok"`
		Answer     string `json:"answer"`
		Error      string `json:"error"`
		StopReason string `json:"stopReason"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &env); jerr != nil {
		fmt.Fprintf(os.Stderr, "bridge: jazz printed no envelope (%v, %v)\n", jerr, err)
		return 1
	}
	if !env.OK {
		fmt.Fprintf(os.Stderr, "failed (%s): %s\n", visible.Line(env.StopReason), visible.Line(env.Error))
		return 1
	}
	fmt.Println(env.Answer)
	return 0
}

// showApproval is an approval as a person reads it: who asks for which
// tool, the model's message and diff quoted behind a gutter (no line of
// them passes for one of the bridge's), and the arguments that run as
// ASCII JSON (a lookalike character is a \u escape), all made visible.
func showApproval(ev event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s wants %s:\n", visible.Line(ev.AgentName), visible.Code(ev.ToolName))
	if ev.Message != "" {
		b.WriteString(visible.Quote("  ", ev.Message) + "\n")
	}
	if len(ev.Arguments) > 0 {
		fmt.Fprintf(&b, "  arguments: %s\n", visible.JSON(ev.Arguments, "  "))
	}
	if ev.Preview != "" {
		b.WriteString(visible.Quote("", strings.TrimSuffix(ev.Preview, "\n")) + "\n")
	}
	// Broken at the screen's width, as jazz's own prompt is.
	return visible.Wrap(b.String(), visible.DefaultWidth, "  ")
}

// ask reads y/n from the terminal, or takes the fixed answer.
func ask(tty *bufio.Reader, fixed, prompt string) bool {
	if fixed != "" {
		return strings.HasPrefix(strings.ToLower(fixed), "y")
	}
	fmt.Fprint(os.Stderr, prompt)
	line, err := tty.ReadString('\n')
	if err != nil && err != io.EOF {
		return false
	}
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
}

func send(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
}
