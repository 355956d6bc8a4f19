package shellguard

import (
	"strings"
)

// oracleEntries is the allowlist the oracle judges commands under: the
// one from issue 9 ("git status", "ls", "cat", "echo", "grep"), and
// entries for programs of the read-only set that have writing or
// program-running options (sort -o, git diff --output, tree -o, rg --pre,
// sed -i, find -delete, file -C, awk's system, git branch NAME): an entry
// names an inspecting command, so only its inspecting forms may pass.
// date and hostname are left out: their writing forms would change this
// machine's clock and name, which no mount namespace holds.
var oracleEntries = []string{"git status", "ls", "cat", "echo", "grep",
	"git diff", "git log", "git show", "git branch", "git tag", "git blame", "git grep",
	"sort", "sed", "find", "tree", "rg", "awk", "uniq", "file", "diff", "head", "wc", "cd"}

// gen turns fuzz bytes into choices. Past the end of the data every
// choice is the first one and every chance is lost, so every input
// yields a command, and a short one.
type gen struct {
	data []byte
	i    int
}

func (g *gen) n(k int) int {
	if k <= 1 {
		return 0
	}
	if g.i >= len(g.data) {
		return 0
	}
	b := int(g.data[g.i])
	g.i++
	return b % k
}

// chance is false once the data is used up, so every loop ends.
func (g *gen) chance(percent int) bool { return g.i < len(g.data) && g.n(100) < percent }

func (g *gen) pick(xs ...string) string { return xs[g.n(len(xs))] }

// genCommand builds a shell command from data. An odd first byte makes
// the rest of data the command itself, so that known attacks sit in the
// corpus verbatim and get mutated; otherwise a grammar over the
// allowlist entries and the read-only set produces it: options (with
// abbreviations, clusters, glued values and --), braces, globs, tildes,
// quoting, assignments, wrappers, redirections and compound forms.
func genCommand(data []byte) string {
	if len(data) > 0 && data[0]%2 == 1 {
		return string(data[1:])
	}
	g := &gen{data: data}
	if len(data) > 0 {
		g.i = 1
	}
	return g.list(0)
}

func (g *gen) list(depth int) string {
	s := g.pipeline(depth)
	for k := 0; k < 2 && g.chance(35); k++ {
		s += g.pick(" && ", " || ", "; ", " | ", "\n", " |& ") + g.pipeline(depth)
	}
	return s
}

func (g *gen) pipeline(depth int) string {
	if depth < 2 && g.chance(30) {
		inner := g.list(depth + 1)
		switch g.n(9) {
		case 0:
			return "(" + inner + ")"
		case 1:
			return "{ " + inner + "; }"
		case 2:
			return "if " + g.simple() + "; then " + inner + "; else " + g.simple() + "; fi"
		case 3:
			v := g.pick("x", "PATH", "HOME", "IFS", "GIT_DIR", "http_proxy", "f1", "PATH")
			body := g.simple()
			if g.chance(50) {
				body += " $" + v
			}
			return "for " + v + " in " + g.pick("./bin", "evilhome", "evilbare", "evilnest", "evilsuper", g.arg("")) + "; do " + body + "; done"
		case 4:
			return "! " + inner
		case 5:
			return "time " + inner
		case 6:
			return "case " + g.arg("") + " in *) " + inner + ";; esac"
		case 7:
			return "while false; do " + inner + "; done"
		default:
			return "f() { " + inner + "; }; f"
		}
	}
	s := g.simple()
	if g.chance(4) {
		s += " &"
	}
	if g.chance(6) {
		// Interpreter state that changes what the next command means.
		s = g.pick("read PATH <<< ./bin; ", "mapfile -t PATH <<< ./bin; ", "getopts a PATH; ", "cd evilbare; ",
			"cd evilnest; ", "cd evilnest && ", "cd evilsuper && ", "cd evilnest/sub && ", "(cd evilnest) && ", "cd evilnest || ", "cd ./dir/../evilnest; ",
			"cd status && ", "hash -p ./bin/ls ls; ", "echo ${PATH:=./bin}; ", "echo ${HOME:=evilhome}; ",
			"set -- x; ", "unset PATH; ", "umask 0; ", "shift; ", "pushd evilbare; ") + s
	}
	return s
}

// programs are the command names the grammar uses: the oracle's
// allowlist, the read-only set, and writers and wrappers around them.
var genPrograms = []string{
	"git", "git", "git", "ls", "cat", "echo", "grep", "sort", "sed", "awk", "find", "head", "tail", "wc",
	"uniq", "cut", "tr", "nl", "du", "df", "stat", "date", "tree", "rg", "file", "diff", "cmp", "comm",
	"printf", "pwd", "basename", "dirname", "realpath", "readlink", "seq", "which", "hostname", "id",
	"uname", "whoami", "true", "md5sum", "printenv", "egrep", "fgrep", "mawk", "less", "more", "tee",
	"touch", "cp", "mv", "mkdir", "ln", "tar", "xargs", "env", "sh", "rm", "chmod", "truncate",
}

var genWrappers = []string{
	"npx ", "bunx ", "pnpx ", "sudo ", "env ", "env -i ", "nohup ", "nice ", "nice -n 5 ", "\\time ", "xargs ",
	"command ", "exec ", "builtin ", "timeout 5 ", "stdbuf -o0 ", "./bin/", "/usr/bin/", "\\", "node_modules/.bin/",
	"setsid ", "ionice ", "busybox ", "flock f ", "chroot / ", "script -qc ",
}

var genAssigns = []string{
	"LANG=C ", "LC_ALL=C ", "TZ=UTC ", "NO_COLOR=1 ", "LC_MESSAGES=C ", "COLUMNS=80 ",
	"HOME=./evilhome ", "HOME=evilhome ", "XDG_CONFIG_HOME=./evilhome/.config ", "GIT_DIR=evilbare ",
	"GIT_CONFIG_GLOBAL=evilhome/.gitconfig ", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwn-cfg' ",
	"PATH=./bin:$PATH ", "GIT_EXEC_PATH=./bin ", "LANG=../evilhome ", "TZ=../../etc/x ", "PAGER=./bin/pager ",
	"x=1 ", "POSIXLY_CORRECT=1 ", "LESSOPEN='|touch pwn-less' ", "BASH_ENV=evilhome/rc ", "GIT_PAGER='touch pwn-pager' ",
	"LANG=$x ", "TZ=~ ", "LC_ALL=C.UTF-8 ", "GIT_EXTERNAL_DIFF=./bin/extdiff ", "LD_PRELOAD=./x.so ",
}

func (g *gen) simple() string {
	var b strings.Builder
	for k := 0; k < 2 && g.chance(12); k++ {
		b.WriteString(g.pick(genAssigns...))
	}
	if g.chance(8) {
		b.WriteString(g.pick(genWrappers...))
	}
	prog := g.pick(genPrograms...)
	switch {
	case g.chance(4):
		b.WriteString(g.shape(prog))
	default:
		b.WriteString(prog)
	}
	args := g.args(prog)
	for _, a := range args {
		b.WriteString(" " + a)
	}
	if g.chance(15) {
		b.WriteString(" " + g.pick(">/dev/null", "2>&1", ">f", ">>f", "<f", "&>f", ">|f", "2>out", ">&2", "<>f",
			`>"$x"`, ">~/x", "3>f", "<<<x", "<<EOF\nx\nEOF\n", ">/tmp/pwn", "</dev/null", "2>/dev/null", ">& f", "<&-"))
	}
	return b.String()
}

// shape rewrites a word the ways the shell reads it: quotes, escapes,
// braces, globs, tildes, ANSI-C quoting and parameters.
func (g *gen) shape(w string) string {
	if w == "" {
		return w
	}
	switch g.n(16) {
	case 0:
		return "'" + w + "'"
	case 1:
		return `"` + w + `"`
	case 2:
		return `\` + w
	case 3:
		return "{" + w + ",out}"
	case 4:
		return w[:1] + "{" + w[1:] + ",}"
	case 5:
		return w + "*"
	case 6:
		return w[:len(w)-1] + "?"
	case 7:
		return "~/" + w
	case 8:
		return "$'" + w + "'"
	case 9:
		return `$'\x` + hexByte(w[0]) + w[1:] + "'"
	case 10:
		return "$x" + w
	case 11:
		return `"$x"` + w
	case 12:
		return w[:1] + "''" + w[1:]
	case 13:
		// A word with a space in it, naming a program in a directory
		// called like w (the fixture has one for every program).
		return `"` + w + ` /.bin/x"`
	case 14:
		return w + `\ `
	default:
		return "[" + w[:1] + "]" + w[1:]
	}
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// genFiles are fixture paths, including names a glob would turn into
// options.
var genFiles = []string{"f", "a.txt", "b.txt", "dir", "dir/x.go", "-", "evilhome", "evilbare", "evilnest", "evilnest/a.txt", "*", "*.txt", "d*",
	"~", "~/x", "{a,b}.txt", "out", "missing", ".", "..", "/dev/null", "script.sed", "prog.awk", "HEAD", "HEAD~1", "--", "-o",
	"$(touch pwn-cs)", "`touch pwn-bq`", "<(touch pwn-ps)", "$((1))", "${x:-f}", "\"$@\"", "$HOME/x", "{1..3}", "@{u}", "-{o,}pwn-br"}

func (g *gen) arg(prog string) string {
	pool := genOptions[prog]
	var w string
	if len(pool) > 0 && g.chance(55) {
		w = g.pick(pool...)
	} else {
		w = g.pick(genFiles...)
	}
	if g.chance(10) {
		w = g.shape(w)
	}
	return w
}

func (g *gen) args(prog string) []string {
	var out []string
	if prog == "git" {
		for k := 0; k < 3 && g.chance(20); k++ {
			out = append(out, g.pick(genGitGlobals...))
		}
		out = append(out, g.pick(genGitSubs...))
	}
	for k := g.n(4); k > 0; k-- {
		out = append(out, g.arg(prog))
	}
	return out
}

var genGitGlobals = []string{
	"-C evilbare", "-C .", "-C status", "-c core.fsmonitor='touch pwn-c'", "-c core.pager='touch pwn-p'",
	"-c alias.status='!touch pwn-a'", "--git-dir=evilbare", "--git-dir evilbare", "--exec-path=./bin",
	"--config-env=core.fsmonitor=EVIL", "-p", "--paginate", "--no-pager", "-P", "--work-tree=evilhome",
	"--no-optional-locks", "--literal-pathspecs", "--namespace=x", "-c", "--bare", "--list-cmds=main",
}

var genGitSubs = []string{
	"status", "status", "log", "diff", "show", "branch", "tag", "describe", "shortlog", "reflog", "grep x", "st", "log -p",
	"blame f", "ls-files", "ls-tree HEAD", "rev-parse HEAD", "cat-file -p HEAD", "remote", "commit -qm x",
	"stash", "add f", "tag pwn", "branch pwn", "st", "config core.pager x", "checkout -b pwn", "gc", "notes add -m x",
	"fsck", "update-index --refresh", "remote add pwn x", "reflog expire --all", "worktree add pwn",
}

// genOptions are per-program option words, harmless and writing alike:
// the oracle only fails when a writing one gets approved.
var genOptions = map[string][]string{
	"git": {"--output=out", "--o=out", "--outp=out", "--output out", "--ext-diff", "--textconv", "-p", "--stat",
		"--format=%h", "--format=%G?", "--pretty=%GS", "--format='%(refname:short)'", "--format='%(signature)'", "--show-signature", "-O", "-Otouch", "--open-files-in-pager=touch",
		"--dirty", "--broken", "-n 1", "-1", "--short", "-s", "--porcelain", "-u", "--ignored", "--oneline", "--all",
		"-v", "-l", "--list", "-a", "-d", "-D", "-m", "--contains", "--merged", "--cached", "--no-index", "--remerge-diff",
		"-S x", "-Gx", "--", "--no-ext-diff", "-z", "--name-only", "--abbrev=4", "--exclude-standard", "-uno", "--end-of-options",
		"--decorate", "--graph", "--follow", "--show-current", "--tags", "--always", "expire", "show", "pwn", "x"},
	"sort": {"-o out", "-oout", "--output=out", "--output out", "--o=out", "--outp=out", "-uo out", "-ou", "-T .",
		"--temporary-directory=.", "--compress-program=touch", "-n", "-r", "-u", "-k2", "-S 1M", "--sort=numeric", "-c",
		"--debug", "--", "-m", "-t:", "-sort", "--o", "--ou=out"},
	"find": {"-delete", "-fprint out", "-fprintf out x", "-fls out", "-exec touch pwn \\;", "-execdir touch pwn \\;",
		"-ok touch pwn \\;", "-name x", "-maxdepth 1", "-newer f", "-print", "-print0", "-type f", "-L", "-D exec",
		"-O3", "!", "( -name x )", "-o", "-printf %p", "-quit", "-newermt 2020-01-01", "-depth", "-size +1k", "-regex x"},
	"sed": {"-i", "-i.bak", "--in-place", "--in-place=.b", "-e 'w out'", "'s/a/b/w out'", "'1w out'", "'e touch pwn'",
		"'1e touch pwn'", "-n", "1p", "-s", "--sandbox", "-f script.sed", "-n '1p;w out'", "'s|a|b|w out'", "'y/a/b/'",
		"'1!G;h;$!d'", "-e 1p", "'$p'", "'/a/,/b/p'", "'s/a/b/e'", "'s/a/b/gw out'", "-E", "-z", "'1r f'", "'1R f'",
		"'1W out'", "'a x'", "'s/[/]/x/'", "'s/a/b\\\nw out/'", "-ni", "--debug", "-l 5", "'=;l;q'"},
	"awk": {"'BEGIN{system(\"touch pwn\")}'", "'{print > \"out\"}'", "'{print \"}\" > \"out\"}'", "'{printf \";\" >> \"out\"}'", "'{print | \"touch pwn\"}'", "-f prog.awk",
		"'{print $1}'", "'BEGIN{\"touch pwn\" | getline}'", "-v x=1", "'$1 > 0'", "-F:", "'{printf \"%s\", $1 > \"out\"}'",
		"'BEGIN{while ((\"touch pwn\" | getline l) > 0) print l}'", "'@load \"x\"'", "-W exec", "'{print}' ", "--",
		"'BEGIN { printf \"x\" >> \"out\" }'", "'NR>1'", "'BEGIN{ENVIRON[\"X\"]=1}'"},
	"tree":     {"-o out", "-R", "-H x", "-L 1", "-a", "-Lo out", "-oL out 1", "--noreport", "-J", "--du", "-P x", "-RH . -o out"},
	"rg":       {"--pre=touch", "--pre touch", "-z", "--search-zip", "-n", "foo", "--files", "--hidden", "-e x", "--no-config", "--pre-glob=*"},
	"file":     {"-C -m magic", "-C", "-z", "-Z", "-p", "-b", "-i", "--compile", "--uncompress", "-S", "-L"},
	"date":     {"-s now", "--set=now", "01010000", "+%F", "-d x", "-u", "-R", "--date=@0", "-f f", "+%s", "0101"},
	"uniq":     {"a.txt out", "-c", "-u", "-f 1", "b.txt"},
	"hostname": {"newname", "-f", "-F f", "-b x", "-s"},
	"tail":     {"-f", "-F", "-n 1", "--follow", "-c 2", "-1", "--pid=1", "+1"},
	"head":     {"-n 1", "-1", "-c 5", "-q", "--lines=1", "--l=1"},
	"ls":       {"-la", "-R", "--color=never", "-1", "--hyperlink", "-d", "--col", "-w 80", "-lo", "--ignore=x"},
	"grep":     {"-r x", "-n", "-e x", "-f f", "-c", "-l", "--include=*.go", "-2", "--pre=touch", "x", "-o"},
	"cat":      {"-n", "-A", "-v", "-e", "-u", "--number"},
	"echo":     {"-n", "-e", "x", "'a b'", "$x", "-o"},
	"tee":      {"out", "-a out", "/dev/null"},
	"touch":    {"pwn", "f"},
	"cp":       {"f pwn", "-r dir pwn"},
	"mv":       {"f pwn"},
	"mkdir":    {"pwn", "-p pwn/x"},
	"ln":       {"-s f pwn"},
	"tar":      {"cf pwn.tar f", "tf x", "-cf out f"},
	"xargs":    {"touch", "-I{} touch {}", "echo"},
	"env":      {"touch pwn", "-i touch pwn", "ls"},
	"sh":       {"-c 'touch pwn'", "script.sed"},
	"less":     {"-o out f", "f", "-O out"},
	"more":     {"f"},
	"diff":     {"-l f a.txt", "--paginate f a.txt", "f a.txt", "-u f a.txt", "-r dir dir", "--to-file=f a.txt"},
	"du":       {"-sh", "--time", "-a", "-d 1"},
	"df":       {"-h", "--sync", "--output"},
	"stat":     {"-c %n", "--printf=%s", "-L"},
	"printf":   {"'%s\\n' x", "-v y x", "%b"},
	"seq":      {"3", "-5 5", "-w 1 3", "-f %g 2"},
	"md5sum":   {"f", "-c f", "--tag f"},
	"rm":       {"f", "-rf dir", "pwn"},
	"chmod":    {"777 f", "-R 777 dir", "+x f"},
	"truncate": {"-s 0 f"},
	"cut":      {"-d: -f1", "-c1", "--output-delimiter=x -f1"},
	"tr":       {"a-z A-Z", "-d x"},
	"mawk":     {"'BEGIN{system(\"touch pwn\")}'", "'{print}'", "-W exec"},
	"printenv": {"HOME", "-0"},
	"which":    {"ls", "-a git"},
	"realpath": {"f", "--relative-to=. f"},
	"readlink": {"-f f"},
}
