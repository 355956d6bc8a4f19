package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/telemetry/otlptest"
)

// TestNATSURLPasswordNeverShown: a password in --nats-url (or
// JAZZ_NATS_URL) appears in nothing jazz writes — the envelope, stderr,
// the events, the debug log, the spans — whether the server is down,
// refuses the password or takes it; what is shown is readable
// (user:***@host, no URL escapes). Every command that reaches a bus is
// checked.
func TestNATSURLPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const password = "Pw-9f3kQz7Lm2Xv"
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		Username: "alice", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	up := srv.Addr().(*net.TCPAddr).Port
	down := closingPort(t)
	withPassword := func(pw string, port int) string { return fmt.Sprintf("nats://alice:%s@127.0.0.1:%d", pw, port) }

	e := hlNewEnv(t)
	e.replayAgent("r", map[string]any{"turns": []any{map[string]any{"text": "connected"}}})
	rcv := otlptest.Start(t)
	e.extra = append(e.extra, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.HTTPURL)
	runArgs := []string{"run", "--agent", "r", "--json", "--events", "all", "--debug"}

	leaks := func(name, text string) {
		t.Helper()
		for _, form := range []string{password, "wrong" + password, "9f3kQz7Lm2Xv"} {
			if strings.Contains(text, form) {
				t.Errorf("%s: the password is shown:\n%s", name, text)
				return
			}
		}
		if strings.Contains(text, "%5B") || strings.Contains(text, "%2A") {
			t.Errorf("%s: the redaction is URL-escaped:\n%s", name, text)
		}
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		ok     bool
		wanted string
	}{
		{"server down, flag", append(runArgs, "--nats-url", withPassword(password, down), "hi"), nil, false, fmt.Sprintf("nats://alice:***@127.0.0.1:%d", down)},
		{"server down, env", append(runArgs, "hi"), []string{"JAZZ_NATS_URL=" + withPassword(password, down)}, false, "alice:***@127.0.0.1"},
		{"wrong password", append(runArgs, "--nats-url", withPassword("wrong"+password, up), "hi"), nil, false, "refused these credentials"},
		{"right password", append(runArgs, "--nats-url", withPassword(password, up), "hi"), nil, true, "connected"},
		{"workers", []string{"workers", "--nats-url", withPassword(password, down)}, nil, false, "alice:***@"},
		{"approvals", []string{"approvals", "list", "--nats-url", withPassword(password, down)}, nil, false, "alice:***@"},
		{"bus init", []string{"bus", "init", "--nats-url", withPassword(password, down)}, nil, false, "alice:***@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(hlRunOpts{args: tc.args, env: tc.env, timeout: 60 * time.Second})
			all := r.stdout + "\n" + r.stderr
			if (r.code == 0) != tc.ok || !strings.Contains(all, tc.wanted) {
				t.Fatalf("exit %d, want ok=%v and %q:\n%s", r.code, tc.ok, tc.wanted, all)
			}
			leaks(tc.name, all)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	spans, err := rcv.WaitSpans(ctx, 1)
	if err != nil {
		t.Fatalf("no spans: %v", err)
	}
	leaks("spans", fmt.Sprintf("%+v", spans))
}

// closingPort is a port that takes every connection and closes it at
// once: a server that is down, and a port no other test can take meanwhile.
func closingPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
