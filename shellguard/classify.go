package shellguard

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/messages"
)

// StaticClassify rates a command without a model. It is decided in two
// cases: "read-only" when ReadOnlyProblem finds nothing, and "high-risk"
// when the command clearly mutates (MutatingReason): that verdict stands
// before any model is asked, whatever the model or the context would
// say. Anything else is undecided: the harness model may rate it, and the
// caller fails closed.
func StaticClassify(command string) (level string, decided bool) {
	if ReadOnlyProblem(command) == "" {
		return messages.LevelReadOnly, true
	}
	if MutatingReason(command) != "" {
		return messages.LevelHighRisk, true
	}
	return "", false
}

// ReadOnlyProblem is the static read-only pass: it says why command is
// not proven inspect-only, or "" when it is. Proven means: it parses, the
// denylist lets it through, every word of every simple command is known
// exactly from the text (no expansion, glob, brace or tilde would change
// it: the argv judged is the argv the interpreter runs), every inline
// assignment is harmless, there is no file redirection, substitution,
// background job or function, and every simple command is a program of
// the read-only set whose arguments pass its option grammar.
func ReadOnlyProblem(command string) string {
	a, why := analyzeCommand(command)
	if why != "" {
		return why
	}
	for _, sc := range a.calls {
		if why := sc.readOnlyProblem(); why != "" {
			return why
		}
	}
	return ""
}

func (sc simpleCommand) readOnlyProblem() string {
	if sc.call != nil {
		for _, as := range sc.call.Assigns {
			if why := assignProblem(as); why != "" {
				return why
			}
		}
	}
	for i, ok := range sc.inert {
		if !ok {
			return fmt.Sprintf("`%s` has a word the shell expands (word %d); only words known from the text are judged read-only", strings.Join(sc.shown(), " "), i+1)
		}
	}
	return argvReadOnlyProblem(sc.words)
}

// argvReadOnlyProblem applies the read-only set to one argv whose words
// are all known.
func argvReadOnlyProblem(argv []string) string {
	if _, why := keyOf(argv, allInert(len(argv))); why != "" {
		return why
	}
	name := argv[0]
	check, ok := readOnlyPrograms()[name]
	switch {
	case path.Base(name) != name:
		return fmt.Sprintf("`%s` is named by a path; only programs found on PATH are in the read-only set", name)
	case !ok:
		return fmt.Sprintf("`%s` is not in the read-only set", name)
	}
	if why := check(argv[1:]); why != "" {
		return fmt.Sprintf("`%s`: %s", name, why)
	}
	return ""
}

func allInert(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

// mutatingPrograms change files or system state whatever their
// arguments (or in their common forms); mutatingSubcommands do so for the
// listed subcommands.
var mutatingPrograms = map[string]bool{
	"rm": true, "rmdir": true, "mv": true, "cp": true, "ln": true, "mkdir": true, "touch": true,
	"chmod": true, "chown": true, "chgrp": true, "dd": true, "truncate": true, "shred": true,
	"tee": true, "install": true, "patch": true, "unlink": true, "rsync": true, "scp": true,
	"kill": true, "pkill": true, "killall": true, "reboot": true, "shutdown": true, "halt": true,
	"poweroff": true, "mkfs": true, "mount": true, "umount": true, "dpkg": true, "apt": true,
	"apt-get": true, "yum": true, "dnf": true, "pacman": true, "apk": true, "snap": true,
	"useradd": true, "userdel": true, "usermod": true, "passwd": true, "crontab": true,
	"systemctl": true, "service": true, "chattr": true, "setfacl": true, "mkfifo": true, "mknod": true,
	"sudo": true, "su": true, "doas": true, "wipefs": true, "fdisk": true, "parted": true,
}

var mutatingSubcommands = map[string]map[string]bool{
	"git": setOf("commit push reset checkout switch merge rebase pull fetch clone add rm mv restore clean" +
		" cherry-pick revert am apply init gc prune update-ref filter-branch filter-repo worktree submodule" +
		" stash notes replace update-index read-tree write-tree commit-tree symbolic-ref pack-refs repack"),
	"npm":     setOf("install i ci add uninstall remove rm update publish unpublish link exec run-script run test start"),
	"yarn":    setOf("install add remove upgrade publish run exec dlx"),
	"pnpm":    setOf("install i add remove update publish run exec dlx"),
	"pip":     setOf("install uninstall download wheel"),
	"pip3":    setOf("install uninstall download wheel"),
	"go":      setOf("install get generate mod build run test"),
	"cargo":   setOf("install uninstall publish build run test add remove update"),
	"docker":  setOf("run rm rmi kill stop start exec build push pull create restart compose system volume network"),
	"kubectl": setOf("apply delete create edit patch replace scale rollout exec run drain cordon label annotate"),
	"brew":    setOf("install uninstall upgrade update link unlink tap"),
	"gh":      setOf("pr issue release repo api workflow secret"),
}

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// MutatingReason says why command clearly changes something (a write
// redirection, a program or subcommand that writes, a writing option of a
// read-only program such as sort -o or sed -i, the denylist), or "" when
// it is not clearly mutating. It judges the text as written: a clearly
// mutating command stays high-risk before any model is asked, and the
// rest is left to the harness model.
func MutatingReason(command string) string {
	if blocked, reason := CheckDenylist(command); blocked {
		return reason
	}
	f, err := parse(command)
	if err != nil {
		return ""
	}
	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
				if v, ok := wordValue(n.Word); !ok || v != "/dev/null" {
					why = "a redirection that writes a file (" + n.Op.String() + ")"
				}
			}
		case *syntax.CallExpr:
			var words []string
			for _, w := range n.Args {
				v, _ := wordValue(w)
				words = append(words, v)
			}
			why = mutatingArgv(words)
		}
		return true
	})
	return why
}

// mutatingArgv says why one call (words known exactly or "") clearly
// mutates: the program, found past wrappers, or its subcommand or a
// writing option.
func mutatingArgv(words []string) string {
	i := 0
	for i < len(words) && (isAssignWord(words[i]) || runsOther[path.Base(words[i])] || strings.HasPrefix(words[i], "-") && i > 0) {
		if prog := path.Base(words[i]); mutatingPrograms[prog] {
			return "`" + prog + "` changes files or system state"
		}
		i++
	}
	if i >= len(words) || words[i] == "" {
		return ""
	}
	prog := path.Base(words[i])
	if mutatingPrograms[prog] {
		return "`" + prog + "` changes files or system state"
	}
	rest := words[i+1:]
	if subs, ok := mutatingSubcommands[prog]; ok {
		for j := 0; j < len(rest); j++ {
			w := rest[j]
			if strings.HasPrefix(w, "-") {
				if prog == "git" && (w == "-c" || w == "-C" || w == "--git-dir" || w == "--work-tree" || w == "--namespace") {
					j++ // the option's value
				}
				continue
			}
			if subs[w] {
				return fmt.Sprintf("`%s %s` changes files or state", prog, w)
			}
			break
		}
	}
	switch prog {
	case "sed":
		for _, w := range rest {
			if w == "--in-place" || strings.HasPrefix(w, "--in-place=") || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.ContainsRune(w, 'i') {
				return "`sed -i` edits files in place"
			}
		}
	case "sort":
		for _, w := range rest {
			if w == "--output" || strings.HasPrefix(w, "--output=") || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.ContainsRune(w, 'o') {
				return "`sort -o` writes a file"
			}
		}
	case "find":
		for _, w := range rest {
			if findActions[w] {
				return "`find " + w + "` runs a program or writes files"
			}
		}
	}
	return ""
}
