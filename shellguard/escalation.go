package shellguard

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/escalation"
)

// A command that could change what configures later calls or runs (a
// git hook or config, an AGENTS.md, jazz's or the agents' project
// configuration, a home dotfile: package escalation) is approved by a
// person only, like the file tools' changes there: an automatic approval
// of the write would approve whatever the planted hook or config then
// runs outside the gate. HumanOnly is the propose-side judgement, on the
// text; ProtectedArgv and ProtectedWrite are the run-time side, on what
// expansion produced, for every approval no person gave.
//
// What neither sees: a program that writes a file without naming it in
// its argv (a script, make, an npm script, python running a file, tar or
// unzip extracting an archive, git checking out a tree that carries an
// AGENTS.md). Only a sandbox stops those; the approval of such a program
// is the control.

// maxTreeEntries bounds the walk of a tree a copy or move may plant.
const maxTreeEntries = 4096

// HumanOnly says why only a person may approve command, run from dir
// (the pinned working directory) with home as the home directory: a
// word or redirection of it could name a path package escalation
// protects, resolved from every directory a literal cd can reach; or
// the check cannot tell, because a redirection that writes, or a word of
// a command not proven inspect-only, is built by expansion, or the
// working directory is not known. "" when any approval may.
func HumanOnly(command, dir, home string) string {
	return humanOnly(command, dir, home, nesting{left: new(int(maxNested))})
}

// maxNesting bounds how deep command lines inside words (`flock f -c
// '…'`, nested quotes) are judged, and maxNested how many judgements of
// them one command takes (each is judged from every directory its
// program may run in, so they multiply at each level); a command past
// either bound is a person's.
const (
	maxNesting = 4
	maxNested  = 64
)

// nesting is where a judgement of a nested command line stands: how
// deep it is, and how many more of them the whole command may take.
type nesting struct {
	depth int
	left  *int
}

// maxCluster bounds the letters of a short option cluster after which a
// command line may start (`script -qc'…'`).
const maxCluster = 8

// humanOnly is HumanOnly for a command nested inside a word of another
// as deep as n says.
func humanOnly(command, dir, home string, n nesting) string {
	f, err := parse(command)
	if err != nil {
		return "it does not parse, so what it writes cannot be told"
	}
	homes := escalation.Homes(home)
	if reassignsHome(command) {
		// ~ and $HOME then mean what the command made them: unknown.
		home = ""
	}
	a := analyze(f)
	dirs, dirsWhy := reachableDirs(f, a.calls, dir, home)
	resolve := func(p string) ([]string, string) {
		if filepath.IsAbs(p) {
			return []string{p}, ""
		}
		if dirsWhy != "" {
			return nil, "the directory it runs in is not known (" + dirsWhy + ")"
		}
		out := make([]string, len(dirs))
		for i, d := range dirs {
			out[i] = d + "/" + p // as written: Physical walks the `..` itself
		}
		return out, ""
	}

	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		r, ok := n.(*syntax.Redirect)
		if !ok || !redirectWrites(r) {
			return true
		}
		target, known := pathValue(r.Word, home)
		if !known {
			why = fmt.Sprintf("it writes through a redirection (%s) to a path the shell computes, which could be %s", r.Op, protectedKinds)
			return false
		}
		if isDevice(target) {
			return true
		}
		ps, unknown := resolve(target)
		if unknown != "" {
			why = fmt.Sprintf("it writes through a redirection (%s) to %s, and %s", r.Op, escalation.Show(target), unknown)
			return false
		}
		for _, p := range ps {
			if w := protected(p, homes); w != "" {
				why = "it writes through a redirection: " + w
				return false
			}
		}
		return true
	})
	if why != "" {
		return why
	}
	// A value naming the home directory or one holding it counts when
	// some call of the command may write.
	takes := slices.ContainsFunc(a.calls, func(sc simpleCommand) bool {
		words, known := callValues(sc, home)
		return len(words) > 0 && !changesDir(words, known) && (slices.Contains(known, false) || argvReadOnlyProblem(words) != "")
	})
	if why := assignsProtected(f, home, homes, dirs, dirsWhy, takes); why != "" {
		return why
	}

	for _, sc := range a.calls {
		words, known := callValues(sc, home)
		if !slices.Contains(known, false) && argvReadOnlyProblem(words) == "" {
			continue // inspect-only: it reads, whatever it names
		}
		if changesDir(words, known) {
			continue // where later calls run: reachableDirs follows it
		}
		if slices.Contains(known, false) && !inspectsWhatever(words, known) {
			i := slices.Index(known, false)
			return fmt.Sprintf("`%s` has a word the shell computes (word %d), which could name %s", strings.Join(shownValues(words, known), " "), i+1, protectedKinds)
		}
		if dirsWhy != "" {
			return fmt.Sprintf("`%s` may run in a directory the check cannot know (%s), which could be inside %s", strings.Join(shownValues(words, known), " "), dirsWhy, protectedKinds)
		}
		if name := mentionsGitInitEnv(command); name != "" {
			// A git alias the environment defines may be init or config
			// under another name.
			aliased := strings.Contains(command, "GIT_CONFIG") && strings.Contains(strings.ToLower(command), "alias.")
			gw := words
			for _, d := range dirs {
				gw = programsByIdentity(gw, known, d, "")
			}
			for _, g := range gitCommandLines(gw, known) {
				if aliased {
					return fmt.Sprintf("`%s` may run under a git alias the command's environment defines, under whose name git may run init, clone or config, or any program", strings.Join(shownValues(words, known), " "))
				}
				if startsRepo(g.args) {
					return fmt.Sprintf("`%s` %s", strings.Join(shownValues(words, known), " "), gitInitEnvWhy(name))
				}
			}
		}
		// A call the read-only grammar keeps inspect-only with its
		// computed words as operands (`cat *.json`) writes nothing where
		// it runs.
		inspects := slices.Contains(known, false)
		for _, d := range dirs {
			if w := inProtectedDir(words, known, d, homes); w != "" && !inspects {
				return w
			}
			if w := argvProtected(words, known, d, homes, n); w != "" {
				return w
			}
		}
	}
	return ""
}

// inspectsWhatever: a call of a program the read-only set knows, whose
// computed words, read as plain operands, leave it inspect-only (`wc -l
// "$f"`, not `sed -i s/a/b/ "$f"`). A value that turns into a writing
// option is the run-time check's (ProtectedArgv sees it expanded).
func inspectsWhatever(words []string, known []bool) bool {
	if !known[0] {
		return false
	}
	if _, ok := inspectCheck(words); !ok {
		return false
	}
	argv := slices.Clone(words)
	for i := range argv {
		if !known[i] {
			argv[i] = "operand"
		}
	}
	return argvReadOnlyProblem(argv) == ""
}

// protectedKinds names the class for a reason that cannot say which.
const protectedKinds = "a git hook or config, an AGENTS.md, jazz's or the agents' configuration, or a home dotfile"

// ProtectedArgv is the run-time check of one program's argv, after
// expansion, about to run from dir (the interpreter's directory then)
// with homes (escalation.Homes of the child's $HOME): why running it
// could change a path package escalation protects, or "" when it cannot
// (it names none, or it is inspect-only).
func ProtectedArgv(argv []string, dir string, homes []string) string {
	if argvReadOnlyProblem(argv) == "" {
		return ""
	}
	known := allInert(len(argv))
	if why := inProtectedDir(argv, known, dir, homes); why != "" {
		return why
	}
	return argvProtected(argv, known, dir, homes, nesting{left: new(int(maxNested))})
}

// inProtectedDir says why a program that is not inspect-only, run in
// dir, may change what dir is part of: whatever it writes without naming
// a path (`git init`, a build, a script, an archive it extracts) lands
// there. The directory a program runs in is judged as a directory it
// names: in the home directory, or one holding it, what it writes
// unnamed (an archive's .bashrc or u/.ssh/, `cp -r x/. .`, `git clone`'s
// .git beside the home's dot entries) is the home's own configuration,
// so it is a person's as `tar -C ~` is. The kernel's directory is the
// physical one, so dir is also judged through its links.
func inProtectedDir(words []string, known []bool, dir string, homes []string) string {
	shown := strings.Join(shownValues(words, known), " ")
	if why := protected(dir, homes); why != "" {
		return fmt.Sprintf("`%s` runs in %s, where what it writes lands: %s", shown, escalation.Show(dir), why)
	}
	for _, d := range []string{dir, escalation.Physical(dir)} {
		if why := escalation.TakesHome(d, homes); why != "" {
			return fmt.Sprintf("`%s` runs in %s, where what it writes without naming it (an archive's entries, a build's or a checkout's files) lands beside or in place of the home's own configuration: %s", shown, escalation.Show(dir), why)
		}
	}
	return ""
}

// ProtectedWrite is the run-time check of a file a redirection opens for
// writing (path as written, relative to dir): why writing it changes a
// path package escalation protects, or "".
func ProtectedWrite(target, dir string, homes []string) string {
	if isDevice(target) {
		return ""
	}
	p := target
	if !filepath.IsAbs(p) {
		p = dir + "/" + p
	}
	return protected(p, homes)
}

// argvProtected judges one call's words (known[i] false: computed, and
// skipped: the caller decided) from dir; n is how deep inside command
// lines of other words the call is.
func argvProtected(words []string, known []bool, dir string, homes []string, n nesting) string {
	shown := strings.Join(shownValues(words, known), " ")
	// A known program under another name (a link or copy of git, cp,
	// xargs … that the command names by path) is judged as that program
	// too.
	if nw := programsByIdentity(words, known, dir, ""); !slices.Equal(nw, words) {
		if why := argvProtected(nw, known, dir, homes, n); why != "" {
			return why
		}
	}
	for i, w := range words {
		if !known[i] {
			continue
		}
		if appendsInput[path.Base(w)] {
			return fmt.Sprintf("`%s`: %s builds command lines from its input, which could name %s", shown, path.Base(w), protectedKinds)
		}
	}
	for _, g := range gitCommandLines(words, known) {
		if why := gitConfigWrite(g.args); why != "" {
			return fmt.Sprintf("`%s` %s", shown, why)
		}
		// `env GIT_DIR=d git init`: the words before git set its
		// environment.
		if startsRepo(g.args) {
			for _, a := range g.pre {
				if name, _, ok := strings.Cut(a, "="); ok && gitInitEnv(name) {
					return fmt.Sprintf("`%s` %s", shown, gitInitEnvWhy(name))
				}
			}
		}
	}
	if why := pathsProtected(words, known, dir, homes, shown, false); why != "" {
		return why
	}
	bases, why := programDirs(words, known, dir, homes)
	if why != "" {
		return fmt.Sprintf("`%s` %s", shown, why)
	}
	for _, base := range bases {
		if why := pathsProtected(words, known, base, homes, shown, true); why != "" {
			return why
		}
	}
	return nestedProtected(words, known, append([]string{dir}, bases...), homes, n, shown)
}

// nestedProtected judges each word of a call that holds shell syntax as
// the command line a program may hand to a shell (`flock f -c '…'`,
// `script -c`, `watch`, `git rebase --exec=…`, `find -exec sh -c`), run
// from each of dirs: a command of its own, with its quotes, cds,
// redirections and git calls read as the shell reads them, so
// `flock f -c 'cd; tar -xf a.tar'` runs tar in the home directory and
// `'cp x .gi""t/hooks/pre-commit'` names .git/hooks. Splitting the word
// on blanks and quotes (pathCandidates) sees neither. A word that does
// not parse as a command is not one a shell would run.
func nestedProtected(words []string, known []bool, dirs, homes []string, n nesting, shown string) string {
	home := ""
	if len(homes) > 0 {
		home = homes[0]
	}
	for i, w := range words {
		if i == 0 || !known[i] || !strings.ContainsAny(w, " \t\n;&|<>()'\"`$\\") {
			continue
		}
		for _, text := range commandTexts(w) {
			if _, err := parse(text); err != nil {
				continue
			}
			if n.depth+1 > maxNesting {
				return fmt.Sprintf("`%s` holds command lines nested more than %d deep, too deep to judge", shown, maxNesting)
			}
			for _, d := range dirs {
				if *n.left == 0 {
					return fmt.Sprintf("`%s` holds more command lines, or may run them from more directories, than %d judgements of them cover", shown, maxNested)
				}
				*n.left--
				if why := humanOnly(text, d, home, nesting{depth: n.depth + 1, left: n.left}); why != "" {
					return fmt.Sprintf("`%s` may run the command line %s from %s, and %s", shown, escalation.Show(text), escalation.Show(d), why)
				}
			}
		}
	}
	return ""
}

// commandTexts are the texts a word may hand a shell as a command line:
// the word, the value of a long option (`--exec=…`), and what follows
// each letter of a short option cluster (`-qc…`: which letter takes the
// value only the program knows), up to maxCluster letters: a cluster is
// a few options, and each suffix is parsed.
func commandTexts(w string) []string {
	out := []string{w}
	if !strings.HasPrefix(w, "-") {
		return out
	}
	if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "--") {
		return append(out, v)
	}
	for k := 2; k < len(w) && k <= maxCluster+1 && !strings.HasPrefix(w, "--"); k++ {
		if c := w[k-1]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			break
		}
		out = append(out, w[k:])
	}
	return out
}

// resolveWord is a path word of a call as the program takes it from dir:
// a leading ~ is the home directory (homes[0]), a relative path is under
// dir (as written: Physical walks its `..` itself).
func resolveWord(c, dir string, homes []string) string {
	if rest, ok := strings.CutPrefix(c, "~"); ok && (rest == "" || rest[0] == '/') && len(homes) > 0 {
		return homes[0] + rest
	}
	if filepath.IsAbs(c) {
		return c
	}
	return dir + "/" + c
}

// maxProgramJudgements bounds the relative words times the directories
// beside dir that one call's words are judged from (each judgement walks
// the path): a call naming many directories and many relative paths is a
// person's, rather than slow to judge.
const maxProgramJudgements = 512

// programDirs are the directories other than dir that a call's relative
// words may be taken from: every existing directory a word of it names,
// since a program may change into one before it takes the others (env
// -C d, git -C d, make -C d, tar -C d, and any program's option of its
// own for it): `env -C /usr/share cp x ../../home/u/.bashrc` names no
// dot entry from dir. why says why they are too many to judge.
func programDirs(words []string, known []bool, dir string, homes []string) (dirs []string, why string) {
	relative := 0
	for i, w := range words {
		if i == 0 || !known[i] {
			continue
		}
		for _, c := range pathCandidates(w) {
			p := resolveWord(c, dir, homes)
			if p == dir+"/"+c {
				relative++
			}
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() || p == dir || p == dir+"/." || slices.Contains(dirs, p) {
				continue
			}
			dirs = append(dirs, p)
		}
	}
	if len(dirs)*relative > maxProgramJudgements {
		return nil, fmt.Sprintf("names %d directories, any of which it may change into before it takes its %d relative paths, too many to judge from each", len(dirs), relative)
	}
	return dirs, ""
}

// pathsProtected judges each known word of a call, and each part of it a
// program may take for a path, as a path taken from dir (only the
// relative ones: relOnly).
func pathsProtected(words []string, known []bool, dir string, homes []string, shown string, relOnly bool) string {
	copies := known[0] && treeMovers[path.Base(words[0])]
	for i, w := range words {
		if !known[i] || i == 0 && !strings.Contains(w, "/") {
			continue
		}
		for _, c := range pathCandidates(w) {
			p := resolveWord(c, dir, homes)
			if relOnly && p != dir+"/"+c {
				continue
			}
			if why := protected(p, homes); why != "" {
				return fmt.Sprintf("`%s` names a protected path: %s", shown, why)
			}
			if copies && i > 0 {
				if why := treeProblem(p, homes); why != "" {
					return fmt.Sprintf("`%s` %s", shown, why)
				}
			}
			// A program that writes may remove, move or replace a directory
			// it names (find -delete, mv, rsync --delete, tar -C): the home
			// directory, or one holding it, takes the home's dot entries
			// with it or gets new ones. As written (a trailing slash makes
			// the kernel follow a link) and resolved: a program may follow
			// a link it is given (cp -r x/u link-to-home's-parent merges
			// into the home), and which do is not known here.
			for _, q := range []string{p, escalation.Physical(p)} {
				if why := escalation.TakesHome(q, homes); why != "" {
					return fmt.Sprintf("`%s` may remove, move or replace a directory holding your home's own configuration: %s", shown, why)
				}
			}
		}
	}
	return ""
}

// treeMovers copy or move whole trees into place: a tree holding .git or
// an AGENTS.md plants it where it lands, and one copied into the home
// directory may bring dotfiles.
var treeMovers = map[string]bool{"cp": true, "mv": true, "rsync": true, "install": true, "ditto": true}

// treeProblem says why copying or moving the existing tree at p, or into
// it, may plant a protected path.
func treeProblem(p string, homes []string) string {
	real := escalation.Physical(p)
	for _, h := range homes {
		if filepath.Clean(p) == h || real == h {
			return "copies or moves into your home directory, where a dot entry is its own configuration, which shells and programs run later read"
		}
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return ""
	}
	n, found := 0, ""
	err = filepath.WalkDir(real, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable part: cp fails there too
		}
		if n++; n > maxTreeEntries {
			return fs.SkipAll
		}
		if q != real && escalation.Name(d.Name()) != "" {
			found = q
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case err != nil:
		return ""
	case found != "":
		return "may copy or move the tree " + escalation.Show(p) + ", which holds " + escalation.Show(found) + " (" + escalation.Name(filepath.Base(found)) + "), into place"
	case n > maxTreeEntries:
		return fmt.Sprintf("may copy or move the tree %s, too large (over %d entries) to check for a .git or AGENTS.md it would plant", escalation.Show(p), maxTreeEntries)
	}
	return ""
}

// protected judges one path (absolute, as written) lexically and as the
// kernel resolves it through links.
func protected(p string, homes []string) string {
	if why := escalation.Why(filepath.Clean(p), homes); why != "" {
		return why
	}
	real := escalation.Physical(p)
	if real == "" {
		return "it names " + escalation.Show(p) + ", whose links loop, so where it lands cannot be told"
	}
	return escalation.Why(real, homes)
}

// pathSeparators split a word into the parts a program may take for a
// path: `of=F`, `--output=F`, `host:F`, `a,F`, and a script's own text
// (`sh x.sh 'echo > F'`, a find -exec argument).
var pathSeparators = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("[\\s=:,;|&<>()'\"`{}]+") })

// pathCandidates are the word and its parts, each also without a short
// option's letter (`-o.git/x`, `-t.git/hooks`).
func pathCandidates(w string) []string {
	out := []string{w}
	for _, part := range pathSeparators().Split(w, -1) {
		if part == "" {
			continue
		}
		out = append(out, part)
		if len(part) > 2 && part[0] == '-' && part[1] != '-' {
			out = append(out, part[2:])
		}
	}
	return out
}

// gitConfigWrite says why git's arguments after the program name change
// a repository's or the user's git configuration (whose hooks path,
// file-system monitor, pager, aliases … run programs on a later git
// command), or start a repository from a template or configuration of
// the command's choosing, or in a directory of its choosing rather than
// a new .git; "" otherwise.
func gitConfigWrite(args []string) string {
	g := parseGit(args)
	if g.alias {
		return "defines a git alias on its command line (-c alias.…), under whose name git may run init, clone or config, or any program"
	}
	switch g.sub {
	case "config":
		first := true
		for _, a := range g.rest {
			switch {
			case a == "-l", a == "--list", strings.HasPrefix(a, "--get"):
				return ""
			case strings.HasPrefix(a, "-"):
			case first && (a == "get" || a == "list"):
				return ""
			default:
				first = false
			}
		}
		return "changes git's configuration, whose hooks path, file-system monitor, pager and aliases run programs on a later git command"
	case "maintenance", "lfs":
		// Subcommands that write git's configuration (and, for
		// maintenance start, the user's scheduler; for lfs install, the
		// repository's hooks) without a config key on the command line.
		writes := map[string][]string{"maintenance": {"register", "unregister", "start", "stop"}, "lfs": {"install", "uninstall", "update"}}[g.sub]
		for _, a := range g.rest {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if slices.Contains(writes, a) {
				return "`git " + g.sub + " " + a + "` changes git's configuration (and the hooks or the scheduler that run git later)"
			}
			break
		}
	case "init", "clone":
		if g.config {
			return "starts a repository under configuration the command sets (-c), which later git commands run with"
		}
		if g.gitDir != "" {
			return makesHead(g.gitDir)
		}
		for _, a := range g.rest {
			if opt := longOption(a, "--template", "--config", "--separate-git-dir"); opt != "" || g.sub == "clone" && shortConfig(a) {
				if opt == "" {
					opt = "-c"
				}
				return "starts a repository from a template or configuration the command chooses (" + opt + "), whose hooks and config run programs later"
			}
			if opt := longOption(a, "--bare", "--mirror"); opt != "" {
				return makesHead(opt)
			}
		}
	}
	return ""
}

// makesHead is why a git init or clone that puts its repository's own
// directory where the command says (opt) is a person's: it makes a HEAD
// there, and a directory holding a HEAD is git's own (package
// escalation), whose config and hooks, laid there before or while git
// works (git keeps what it finds), run programs on the next git command.
func makesHead(opt string) string {
	return "makes a repository's own directory (a HEAD) in a directory the command chooses (" + opt + "), not a new .git; git keeps the config and hooks it finds there, which run programs on the next git command"
}

// gitCall is git's command line parsed as far as it matters here: the
// subcommand and its arguments, whether a global -c or --config-env sets
// configuration, and the global option (--bare, --git-dir) that names the
// repository's own directory, if any.
type gitCall struct {
	sub    string
	rest   []string
	config bool
	gitDir string
	// alias: a global -c or --config-env defines an alias, under whose
	// name any subcommand may run.
	alias bool
}

// isAliasKey: a configuration assignment (key=value) or key that names
// an alias (git's section names ignore case).
func isAliasKey(kv string) bool {
	return len(kv) > 6 && strings.EqualFold(kv[:6], "alias.")
}

// parseGit reads git's arguments after the program name. git's global
// options must be spelled in full (it takes no abbreviation of them).
func parseGit(args []string) gitCall {
	var g gitCall
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		switch a := args[i]; {
		case a == "-c", a == "--config-env":
			g.config = true
			if i+1 < len(args) {
				g.alias = g.alias || isAliasKey(args[i+1])
			}
			i++ // its value
		case strings.HasPrefix(a, "--config-env="), strings.HasPrefix(a, "-c") && len(a) > 2:
			g.config = true
			g.alias = g.alias || isAliasKey(strings.TrimPrefix(strings.TrimPrefix(a, "--config-env="), "-c"))
		case a == "--bare":
			g.gitDir = a
		case a == "--git-dir":
			g.gitDir = a
			i++
		case strings.HasPrefix(a, "--git-dir="):
			g.gitDir = "--git-dir"
		case a == "-C", a == "--work-tree", a == "--namespace", a == "--exec-path", a == "--super-prefix":
			i++ // its value
		}
	}
	if i < len(args) {
		g.sub, g.rest = args[i], args[i+1:]
	}
	return g
}

// gitRun is one git command line a call runs: git's arguments after the
// program name, and the words before it (env's assignments among them).
type gitRun struct{ pre, args []string }

// gitCommandLines are the git command lines a call's words run: after a word
// that is git (by any path) or one of its dashed programs (git-init runs
// as git init), among the words themselves or inside a word that holds a
// whole command line (env -S, script -c, watch), split at blanks with
// its quotes dropped.
func gitCommandLines(words []string, known []bool) []gitRun {
	var out []gitRun
	scan := func(seq []string, ok func(int) bool) {
		for i, w := range seq {
			if !ok(i) {
				continue
			}
			base := path.Base(w)
			if base == "git" {
				out = append(out, gitRun{seq[:i], seq[i+1:]})
			} else if sub, dashed := strings.CutPrefix(base, "git-"); dashed && sub != "" {
				out = append(out, gitRun{seq[:i], append([]string{sub}, seq[i+1:]...)})
			}
		}
	}
	scan(words, func(i int) bool { return known[i] && known[0] })
	for i, w := range words {
		if !known[i] || !strings.ContainsAny(w, " \t\n") {
			continue
		}
		fields := strings.Fields(w)
		for j, f := range fields {
			fields[j] = strings.Trim(f, `'"`)
		}
		scan(fields, func(int) bool { return true })
	}
	return out
}

// startsRepo: git's arguments run init or clone, which make a HEAD.
func startsRepo(args []string) bool {
	sub := parseGit(args).sub
	return sub == "init" || sub == "clone"
}

// longOption is which of opts the argument a spells: git's subcommands
// take any prefix of a long option for it (--templ is --template), and an
// ambiguous one only fails. "" for none.
func longOption(a string, opts ...string) string {
	name, _, _ := strings.Cut(a, "=")
	if len(name) <= 2 || !strings.HasPrefix(name, "--") {
		return ""
	}
	for _, opt := range opts {
		if strings.HasPrefix(opt, name) {
			return opt
		}
	}
	return ""
}

// shortConfig: a cluster of git clone's short options that holds -c
// (-c x=y, -ccore.x=y, -qc x=y), up to the first option that takes a
// value (what follows it is the value).
func shortConfig(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for _, r := range a[1:] {
		if r == 'c' {
			return true
		}
		if strings.ContainsRune("objuO", r) {
			return false
		}
	}
	return false
}

// gitInitEnv: an environment variable that tells git init or clone where
// to make the repository's own directory (GIT_DIR) or where to take its
// template and configuration from (GIT_TEMPLATE_DIR, GIT_CONFIG_*,
// GIT_CONFIG_PARAMETERS, and HOME and XDG_CONFIG_HOME for the user's
// configuration, whose init.templateDir plants hooks).
func gitInitEnv(name string) bool {
	switch name {
	case "GIT_DIR", "GIT_TEMPLATE_DIR", "HOME", "XDG_CONFIG_HOME":
		return true
	}
	return strings.HasPrefix(name, "GIT_CONFIG")
}

func gitInitEnvWhy(name string) string {
	if name == "GIT_DIR" {
		return makesHead("GIT_DIR")
	}
	return "starts a repository from a template or configuration the command's environment chooses (" + name + "), whose hooks and config run programs later"
}

// mentionsGitInitEnv is the first variable of gitInitEnv the command
// names anywhere (an assignment, export, read …; for HOME, any mention
// other than reading it), or "".
func mentionsGitInitEnv(command string) string {
	for _, name := range []string{"GIT_DIR", "GIT_TEMPLATE_DIR", "GIT_CONFIG", "XDG_CONFIG_HOME"} {
		if strings.Contains(command, name) {
			return name
		}
	}
	if reassignsHome(command) {
		return "HOME"
	}
	return ""
}

// ProtectedGitEnv is the run-time check of one program's argv about to
// run with env, when the command started with start: why a git init or
// clone there is a person's because the command changed where git makes
// the repository's own directory or takes its template and configuration
// from (gitInitEnv), or any git call is because the command's environment
// defines an alias; "" otherwise.
func ProtectedGitEnv(argv, env, start []string) string {
	runs := gitCommandLines(argv, allInert(len(argv)))
	if len(runs) == 0 {
		return ""
	}
	starts := slices.ContainsFunc(runs, func(g gitRun) bool { return startsRepo(g.args) })
	for name, val := range changedEnv(env, start) {
		if !gitInitEnv(name) {
			continue
		}
		// An alias the environment defines may be init or config under
		// another name, whatever the subcommand.
		if strings.HasPrefix(name, "GIT_CONFIG_KEY_") && isAliasKey(val) || name == "GIT_CONFIG_PARAMETERS" && strings.Contains(strings.ToLower(val), "alias.") {
			return fmt.Sprintf("`%s` runs under a git alias its environment defines (%s), under whose name git may run init, clone or config, or any program", strings.Join(argv, " "), name)
		}
		if starts {
			return fmt.Sprintf("`%s` %s", strings.Join(argv, " "), gitInitEnvWhy(name))
		}
	}
	return ""
}

// redirectWrites: a redirection that opens a file for writing (`>&F`
// with a file name is bash's `&>F`).
func redirectWrites(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
		return true
	case syntax.DplOut:
		v, ok := wordValue(r.Word)
		return !ok || v != "-" && !isDigits(v)
	}
	return false
}

// isDevice: the null device and the process's own streams.
func isDevice(p string) bool {
	switch p {
	case os.DevNull, "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	rest, ok := strings.CutPrefix(p, "/dev/fd/")
	return ok && isDigits(rest)
}

// reassignsHome reports whether the command may change HOME (an
// assignment, export, read, loop variable …): any mention of the name
// other than reading it as $HOME or ${HOME}.
func reassignsHome(command string) bool {
	rest := strings.NewReplacer("${HOME}", "", "$HOME", "").Replace(command)
	return strings.Contains(rest, "HOME")
}

// callValues are sc's words, with ~, $HOME and ${HOME} read as home
// where it is known.
func callValues(sc simpleCommand, home string) ([]string, []bool) {
	words := slices.Clone(sc.words)
	known := slices.Clone(sc.inert)
	if sc.call == nil {
		return words, known
	}
	for i, w := range sc.call.Args {
		if !known[i] {
			words[i], known[i] = pathValue(w, home)
		}
	}
	return words, known
}

// pathValue is wordValue with a leading ~ or ~/ and every plain $HOME or
// ${HOME} read as home ("" home: unknown), and every expansion whose
// value is a number ($$, $?, $#, $!, ${#x}, $((…))) read as 0: a number
// names no protected place but what its literal neighbours name
// (`~/.$$` is a dotfile as `~/.0` is).
func pathValue(w *syntax.Word, home string) (string, bool) {
	if v, ok := wordValue(w); ok || w == nil {
		return v, ok
	}
	stand := func(p syntax.WordPart) (string, bool) {
		switch p := p.(type) {
		case *syntax.ParamExp:
			if isHomeParam(p) && home != "" {
				return home, true
			}
			if isNumericParam(p) {
				return "0", true
			}
		case *syntax.ArithmExp:
			return "0", true
		}
		return "", false
	}
	var parts []syntax.WordPart
	for i, p := range w.Parts {
		if v, ok := stand(p); ok {
			parts = append(parts, &syntax.SglQuoted{Value: v})
			continue
		}
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && home != "" && (p.Value == "~" || strings.HasPrefix(p.Value, "~/")) {
				parts = append(parts, &syntax.SglQuoted{Value: home})
				if rest := p.Value[1:]; rest != "" {
					parts = append(parts, &syntax.Lit{Value: rest})
				}
				continue
			}
		case *syntax.DblQuoted:
			var run []syntax.WordPart
			flush := func() {
				if len(run) > 0 {
					parts = append(parts, &syntax.DblQuoted{Parts: run})
					run = nil
				}
			}
			for _, q := range p.Parts {
				if v, ok := stand(q); ok {
					flush()
					parts = append(parts, &syntax.SglQuoted{Value: v})
					continue
				}
				run = append(run, q)
			}
			flush()
			continue
		}
		parts = append(parts, p)
	}
	return wordValue(&syntax.Word{Parts: parts})
}

func isHomeParam(p *syntax.ParamExp) bool { return plainParam(p) && p.Param.Value == "HOME" }

// isNumericParam: $$, $?, $#, $! and ${#x}, whose values are numbers.
func isNumericParam(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Excl || p.Width || p.IsSet || p.Index != nil || p.Slice != nil || p.Repl != nil ||
		p.Exp != nil || p.Names != 0 || p.NestedParam != nil || len(p.Modifiers) > 0 || p.Flags != nil {
		return false
	}
	if p.Length {
		return true
	}
	switch p.Param.Value {
	case "$", "?", "#", "!":
		return true
	}
	return false
}

func plainParam(p *syntax.ParamExp) bool {
	return p.Param != nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil && p.Names == 0 && p.NestedParam == nil &&
		len(p.Modifiers) == 0 && p.Flags == nil
}

// shownValues are words for a message, … for a computed one.
func shownValues(words []string, known []bool) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if !known[i] {
			w = "…"
		}
		out[i] = w
	}
	return out
}

// changesDir: the call is the shell's cd, pushd or popd (`builtin cd`
// and `command cd` included), which writes nothing.
func changesDir(words []string, known []bool) bool {
	for len(words) > 1 && known[0] && (words[0] == "builtin" || words[0] == "command") {
		words, known = words[1:], known[1:]
	}
	if len(words) == 0 || !known[0] {
		return false
	}
	switch words[0] {
	case "cd", "pushd", "popd":
		return true
	}
	return false
}

// reachableDirs is every directory a call of f may run in, from dir: a
// literal cd or pushd may move any later call, and subshells, branches
// and pipes make the order unclear, so each target is resolved from
// every directory reached so far. why says why they cannot be known (a
// computed target, `cd -`, a relative cd a loop or function repeats, or
// too many).
func reachableDirs(f *syntax.File, calls []simpleCommand, dir, home string) (dirs []string, why string) {
	repeated := repeatedIn(f)
	dirs = []string{filepath.Clean(dir)}
	for _, sc := range calls {
		words, known := callValues(sc, home)
		if !changesDir(words, known) {
			continue
		}
		for words[0] == "builtin" || words[0] == "command" {
			words, known = words[1:], known[1:]
		}
		name := words[0]
		args, argKnown := words[1:], known[1:]
		if name == "popd" || name == "pushd" && len(args) == 1 && argKnown[0] && (strings.HasPrefix(args[0], "+") || strings.HasPrefix(args[0], "-")) {
			continue // back to, or round, directories already reached
		}
		target := home
		switch {
		case len(args) > 1:
			continue // a usage error: the directory stays
		case len(args) == 1 && !argKnown[0]:
			return nil, fmt.Sprintf("`%s` to a directory the shell computes", name)
		case len(args) == 1 && args[0] == "-":
			return nil, fmt.Sprintf("`%s -`", name)
		case len(args) == 1:
			target = args[0]
		case home == "":
			return nil, fmt.Sprintf("`%s` to a home directory the command may have changed", name)
		}
		if !filepath.IsAbs(target) && repeated(sc.call) {
			return nil, fmt.Sprintf("`%s %s` in a loop", name, target)
		}
		for _, d := range slices.Clone(dirs) {
			next := target
			if !filepath.IsAbs(next) {
				next = filepath.Join(d, next)
			}
			if next = filepath.Clean(next); !slices.Contains(dirs, next) {
				if len(dirs) == maxGitDirs {
					return nil, fmt.Sprintf("it can reach more than %d directories", maxGitDirs)
				}
				dirs = append(dirs, next)
			}
			// The interpreter's cd is lexical, a program's `..` physical:
			// both are where a later call may be.
			if real := escalation.Physical(d + "/" + target); real != "" && !slices.Contains(dirs, real) && !filepath.IsAbs(target) {
				if len(dirs) == maxGitDirs {
					return nil, fmt.Sprintf("it can reach more than %d directories", maxGitDirs)
				}
				dirs = append(dirs, real)
			}
		}
	}
	return dirs, ""
}

// envMayNameWrite: a variable whose value a program may take for a
// place to write (a trace or index file, a cache, a temporary, history
// or configuration directory: GIT_TRACE, GIT_INDEX_FILE, HISTFILE,
// TMPDIR, XDG_CONFIG_HOME …). Which variables a program reads is its own
// affair, so every one counts but the search lists (…PATH, whose entries
// programs read from) and the shell's record of its own directory (PWD,
// OLDPWD: where a program runs is judged as such).
func envMayNameWrite(name string) bool {
	return !strings.HasSuffix(name, "PATH") && name != "PWD" && name != "OLDPWD"
}

// envValueProtected says why a variable's value, which a program may
// take for where to write, names a protected path from dir ("" dir: the
// directory is not known, so only the value's own names are judged): the
// value and each part of it (a list's entries, an option's value) that
// reads as a path (absolute, under ~, or with a slash), or that is a
// protected name by itself (GIT_INDEX_FILE=AGENTS.md).
func envValueProtected(name, val, dir string, homes []string, takes bool) string {
	for _, c := range pathCandidates(val) {
		if w := escalation.Name(c); w != "" {
			return fmt.Sprintf("its environment sets %s to %s, which a program may write: it names %s", name, escalation.Show(val), w)
		}
		if !strings.Contains(c, "/") && !strings.HasPrefix(c, "~") {
			continue
		}
		if dir == "" && !filepath.IsAbs(c) {
			for _, part := range strings.Split(c, "/") {
				if w := escalation.Name(part); w != "" {
					return fmt.Sprintf("its environment sets %s to %s, which a program may write: it names %s", name, escalation.Show(val), w)
				}
			}
			continue
		}
		p := resolveWord(c, dir, homes)
		if w := protected(p, homes); w != "" {
			return fmt.Sprintf("its environment sets %s to %s, which a program may write: %s", name, escalation.Show(val), w)
		}
		// A directory a writing program is told to work in (GIT_WORK_TREE,
		// a prefix, an output directory) is judged as one it names.
		if takes {
			for _, q := range []string{p, escalation.Physical(p)} {
				if w := escalation.TakesHome(q, homes); w != "" {
					return fmt.Sprintf("its environment sets %s to %s, where a program may write: %s", name, escalation.Show(val), w)
				}
			}
		}
	}
	return ""
}

// assignsProtected judges every variable the command assigns with a
// value it spells out (in front of a program, on its own, or through
// export, declare, local, readonly) as a place a program may write
// (envMayNameWrite), from every directory the command reaches. A
// computed value is the run-time check's (ProtectedEnv), which sees it
// in the environment a program gets.
func assignsProtected(f *syntax.File, home string, homes, dirs []string, dirsWhy string, takes bool) string {
	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		as, ok := n.(*syntax.Assign)
		if !ok || as.Name == nil || as.Value == nil || !envMayNameWrite(as.Name.Value) {
			return true
		}
		val, known := pathValue(as.Value, home)
		if !known {
			// Computed: the run-time check sees the value; what the text
			// spells of it is judged here.
			val, dirsWhy = literalSkeleton(as.Value, homes), "computed"
		}
		if val == "" {
			return true
		}
		if dirsWhy != "" {
			why = envValueProtected(as.Name.Value, val, "", homes, takes)
			return why == ""
		}
		for _, d := range dirs {
			if why = envValueProtected(as.Name.Value, val, d, homes, takes); why != "" {
				return false
			}
		}
		return true
	})
	return why
}

// literalSkeleton is what a word spells out itself: its literal parts,
// with a slash where the shell computes something (`$PWD/AGENTS.md` is
// /AGENTS.md), and a leading ~ read as the home directory (homes[0]).
func literalSkeleton(w *syntax.Word, homes []string) string {
	var b strings.Builder
	var lits func(parts []syntax.WordPart)
	lits = func(parts []syntax.WordPart) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				lits(p.Parts)
			default:
				b.WriteString("/")
			}
		}
	}
	lits(w.Parts)
	out := b.String()
	if rest, ok := strings.CutPrefix(out, "~"); ok && (rest == "" || rest[0] == '/') && len(homes) > 0 {
		out = homes[0] + rest
	}
	return out
}

// ProtectedEnv is the run-time check of the environment env a program
// is about to get from dir, against the one the command started with
// (start): why a variable the command set or changed names a protected
// path the program may take for where to write (`GIT_INDEX_FILE=AGENTS.md
// git add .` writes git's index over AGENTS.md, `GIT_TRACE=$PWD/AGENTS.md`
// appends git's trace to it), or "".
func ProtectedEnv(argv, env, start []string, dir string, homes []string) string {
	// A program that is not inspect-only may write in a directory its
	// environment names, as in one its argv names.
	takes := len(argv) > 0 && argvReadOnlyProblem(argv) != ""
	for name, val := range changedEnv(env, start) {
		if !envMayNameWrite(name) {
			continue
		}
		if why := envValueProtected(name, val, dir, homes, takes); why != "" {
			return why
		}
	}
	return ""
}
