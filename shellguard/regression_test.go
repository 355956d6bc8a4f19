package shellguard

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// errStop halts the dry-run interpreter when the run-time check blocks.
var errStop = errors.New("blocked")

// runtimeCatches dry-runs command in mvdan's interpreter with the same
// run-time check execute_command installs (every call after expansion,
// builtins included), but with an exec handler that runs nothing and an
// open handler that touches no file but applies CheckRedirect. It reports
// whether a call or a redirection was blocked.
func runtimeCatches(t *testing.T, command string) bool {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	blocked := false
	check := func(args []string) error {
		if b, _ := CheckArgv(args, "/tmp/jz-regress"); b {
			blocked = true
			return errStop
		}
		return nil
	}
	r, err := interp.New(
		interp.Env(expand.ListEnviron("PATH=/usr/bin:/bin", "TMPDIR=/tmp/jz-regress", "HOME=/home/u")),
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.CallHandler(func(_ context.Context, args []string) ([]string, error) {
			return args, check(args)
		}),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(_ context.Context, args []string) error { return check(args) }
		}),
		interp.OpenHandler(func(_ context.Context, name string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
			if b, _ := CheckRedirect(name, flag&(os.O_WRONLY|os.O_RDWR) != 0); b {
				blocked = true
				return nil, errStop
			}
			return nopFile{}, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(context.Background(), f)
	return blocked
}

type nopFile struct{}

func (nopFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopFile) Write(p []byte) (int, error) { return len(p), nil }
func (nopFile) Close() error                { return nil }

// How a bypass attempt is handled.
const (
	static  = "static"  // CheckDenylist on the text, before anything runs
	runtime = "runtime" // CheckArgv on the expanded argv, as it runs
	limit   = "limit"   // documented limitation (LIMITATIONS.md)
)

// bypasses is the regression table of known ways around the denylist.
// Every entry is either caught (static or runtime) or a documented
// limitation, with the reason it gets through.
var bypasses = []struct {
	name, cmd, caught, why string
}{
	{"plain", "rm -rf /", static, ""},
	{"double quotes", `"rm" -rf /`, static, ""},
	{"split quotes", `r''m -r''f /`, static, ""},
	{"ansi-c quoting", `$'\x72\x6d' -rf /`, static, ""},
	{"variable", "x=rm; $x -rf /", runtime, ""},
	{"default expansion", "${x:-rm} -rf /", runtime, ""},
	{"eval", `eval "rm -rf /"`, static, ""},
	{"eval via variable", `e=eval; $e "echo hi"`, runtime, ""},
	{"base64 to shell", "echo cm0gLXJmIC8K | base64 -d | sh", runtime, ""},
	{"base64 in substitution", "$(printf cm0= | base64 -d) -rf /", limit, "base64 is an external program the dry run does not execute; the real run catches it (shelltool TestExecuteRuntimeDenylist)"},
	{"command substitution", "$(printf rm) -rf /", runtime, ""},
	{"backticks", "`printf rm` -rf /", runtime, ""},
	{"command builtin", "command rm -rf /", static, ""},
	{"backslash", `\rm -rf /`, static, ""},
	{"absolute path", "/bin/rm -rf /", static, ""},
	{"newline", "ls\nrm -rf /", static, ""},
	{"newline obfuscated", "ls\nr''m -rf /", static, ""},
	{"unicode lookalike", "ｒｍ -rf /", limit, "fullwidth letters are not `rm`: no such program exists, so nothing is deleted"},
	{"env wrapper", "env rm -rf /", static, ""},
	{"env wrapper obfuscated", "env r''m -rf /", static, ""},
	{"alias", "shopt -s expand_aliases\nalias x='rm -rf'\nx /", runtime, ""},
	{"function", "f() { \"$@\"; }; f r''m -rf /", static, ""},
	{"sh -c", "sh -c 'rm -rf /'", static, ""},
	{"bash -lc", "bash -lc 'r''m -rf x'", static, ""},
	{"shell via variable", "s=sh; $s -c ls", runtime, ""},
	{"here-doc", "sh <<EOF\nrm -rf /\nEOF", static, ""},
	{"here-doc obfuscated", "sh <<'EOF'\nr''m -rf x\nEOF", runtime, ""},
	{"find -exec", "find / -exec rm -rf {} +", static, ""},
	{"find -exec obfuscated", "find . -exec r''m -r''f {} +", runtime, ""},
	{"find -delete", "find . -delete", limit, "`find -delete` is not on the spec's list"},
	{"xargs", "echo / | xargs rm -rf", static, ""},
	{"xargs -I", "ls | xargs -I{} rm -rf {}", static, ""},
	{"script file", "printf 'r%sm -rf x' '' > x.sh; sh x.sh", limit, "a script run by an external shell is opaque to the interpreter"},
	{"python file", "echo 'import shutil; shutil.rmtree(\"x\")' > x.py; python3 x.py", limit, "interpreters running files are not inspected"},
	{"python -Sc", "python3 -Sc 'import os'", static, ""},
	{"long options", "rm --recursive --force build", static, ""},
	{"abbreviated long options", "rm --rec --for build", static, ""},
	{"reordered flags", "rm -v -r build", static, ""},
	{"chmod -R", "chmod -R 777 dir", static, ""},
	{"kill by path and -s", "/bin/kill -s KILL 1", static, ""},
	{"kill --signal", "kill --signal=SIGKILL 1", static, ""},
	{"chown -R root", "chown -R root dir", static, ""},
	{"node --eval", "node --eval 'x'", static, ""},
	{"perl -E", "perl -E 'say 1'", static, ""},
	{"append to authorized_keys", "cat k >> ~/.ssh/authorized_keys", static, ""},
	{"authorized_keys via $HOME", `cat k > "$HOME/.ssh/authorized_keys"`, static, ""},
	{"read a key by redirection", "base64 < ~/.ssh/id_rsa", static, ""},
	{"reordered flags obfuscated", "r''m -v -r build", static, ""},
	{"kill via variable", "s=KILL; kill -s $s 1", runtime, ""},
	{"authorized_keys via variable", "f=~/.ssh/authorized_keys; cat k >> $f", runtime, ""},
	{"redirect truncation", ": > important.txt", limit, "truncating by redirection is not on the list"},
	{"sudo obfuscated", "su''do ls", static, ""},
	{"kill obfuscated", "k''ill -9 1", static, ""},
	{"dd obfuscated", "d''d if=/dev/zero of=/dev/sda", static, ""},
}

func TestBypassRegressions(t *testing.T) {
	for _, tc := range bypasses {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := CheckDenylist(tc.cmd)
			switch tc.caught {
			case static:
				if !st {
					t.Fatal("the static denylist no longer catches this")
				}
			case runtime:
				if st {
					t.Fatal("now caught statically: move it to the static group")
				}
				if !runtimeCatches(t, tc.cmd) {
					t.Fatal("the run-time check does not catch this")
				}
			case limit:
				if tc.why == "" {
					t.Fatal("a limitation needs a reason")
				}
				if st || runtimeCatches(t, tc.cmd) {
					t.Fatal("now caught: move it out of the limitations")
				}
			default:
				t.Fatalf("unknown kind %q", tc.caught)
			}
			// Whatever the denylist says, the allowlist never approves any
			// of these under a generous list.
			if AllowlistApproves(tc.cmd, []string{"ls", "echo", "printf", "find", "sh", "shopt", "alias", "base64"}) {
				t.Fatal("allowlist approves a bypass attempt")
			}
		})
	}
}

// TestLimitationsDocumented keeps LIMITATIONS.md in step with the table.
func TestLimitationsDocumented(t *testing.T) {
	doc, err := os.ReadFile("LIMITATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range bypasses {
		if tc.caught == limit && !strings.Contains(string(doc), tc.name) {
			t.Errorf("LIMITATIONS.md does not list %q", tc.name)
		}
	}
}
