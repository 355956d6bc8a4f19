package shellguard

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The judgement knows programs by name (`git init`, `cat f`), but what
// runs is a file, and a file may be renamed, copied or linked: `ln -s
// /usr/bin/git g; ./g init --bare d` is git's init under a name the
// git rules do not read, and a `cat` found first on PATH may be any
// program. So a program is identified by what its executable is: the
// same file as a known program (links followed, hard links and bind
// mounts by identity), or a copy of one (the same bytes).

// systemBinDirs are where the system installs the programs the
// judgement knows by name.
func systemBinDirs() []string {
	return []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
}

// gitExecutables are where git's own executable is installed: every
// system directory, and git's exec path, which holds one more copy.
func gitExecutables() []string {
	var out []string
	for _, d := range systemBinDirs() {
		out = append(out, d+"/git")
	}
	return append(out, "/usr/lib/git-core/git", "/usr/libexec/git-core/git")
}

// maxIdentityBytes bounds the contents compared to tell a copy: larger
// files are compared by identity only.
const maxIdentityBytes = 256 << 20

// sameExecutable reports whether the file at bin (fi: its stat, links
// followed) is the file at known or a copy of it.
func sameExecutable(bin string, fi os.FileInfo, known string) bool {
	ki, err := os.Stat(known)
	if err != nil || !ki.Mode().IsRegular() {
		return false
	}
	if os.SameFile(fi, ki) {
		return true
	}
	if fi.Size() != ki.Size() || fi.Size() > maxIdentityBytes {
		return false
	}
	return sameBytes(bin, known)
}

// sameBytes reports whether the two files hold the same bytes.
func sameBytes(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF)
		}
	}
}

// executableAt is the regular, executable file p names (links
// followed), or nil.
func executableAt(p string) os.FileInfo {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return nil
	}
	return fi
}

// isGitExecutable reports whether the file at bin is git's executable
// (in a system directory or git's exec path, or the git that pathVar
// finds from dir) or a copy of it.
func isGitExecutable(bin, dir, pathVar string) bool {
	fi := executableAt(bin)
	if fi == nil {
		return false
	}
	known := gitExecutables()
	if pathVar != "" {
		if g := lookProgram("git", dir, []string{"PATH=" + pathVar}); g != "" {
			known = append(known, g)
		}
	}
	for _, k := range known {
		if sameExecutable(bin, fi, k) {
			return true
		}
	}
	return false
}

// namesGit: a word git's rules already read as git (by its name: git,
// or a dashed git-… that git runs as that subcommand).
func namesGit(w string) bool {
	base := path.Base(w)
	if base == "git" {
		return true
	}
	sub, dashed := strings.CutPrefix(base, "git-")
	return dashed && sub != ""
}

// knownNames are the programs the rules know by name: git, the
// read-only set, the programs and subcommand families that clearly
// mutate, the tree movers, the wrappers and the programs that build
// command lines from their input.
func knownNames() []string {
	seen := map[string]bool{"git": true}
	add := func(names ...string) {
		for _, n := range names {
			seen[n] = true
		}
	}
	for n := range readOnlyPrograms() {
		add(n)
	}
	for n := range mutatingPrograms {
		add(n)
	}
	for n := range mutatingSubcommands {
		add(n)
	}
	for n := range treeMovers {
		add(n)
	}
	for n := range runsOther {
		add(n)
	}
	for n := range appendsInput {
		add(n)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	return out
}

// identify is the known program (knownNames) the executable file bin
// is, when it is called by another name (called, a base name): a link
// to it, a hard link, or a copy (the same bytes); git also as git's exec
// path holds it, or as pathVar finds it from dir. "" when bin is no known
// program, is the one its name says, or is several of them (a multi-call
// binary such as busybox, which acts by the name it is called).
func identify(bin, called, dir, pathVar string, known []knownFile) string {
	fi := executableAt(bin)
	if fi == nil {
		return ""
	}
	if namesGit(called) {
		return "" // git's rules read it as git already
	}
	if isGitExecutable(bin, dir, pathVar) {
		if called == "git" {
			return ""
		}
		return "git"
	}
	var found []string
	for _, k := range known {
		if slices.Contains(found, k.name) {
			continue
		}
		if os.SameFile(fi, k.info) || fi.Size() == k.info.Size() && fi.Size() <= maxIdentityBytes && sameBytes(bin, k.path) {
			found = append(found, k.name)
		}
	}
	if len(found) != 1 || found[0] == called {
		return ""
	}
	return found[0]
}

// knownFile is one file of a known program in a system directory.
type knownFile struct {
	name, path string
	info       os.FileInfo
}

// knownFiles are the files of the known programs (knownNames) in the
// system directories.
func knownFiles() []knownFile {
	var out []knownFile
	for _, n := range knownNames() {
		for _, d := range systemBinDirs() {
			if fi, err := os.Stat(d + "/" + n); err == nil && fi.Mode().IsRegular() {
				out = append(out, knownFile{n, d + "/" + n, fi})
			}
		}
	}
	return out
}

// ProgramsByIdentity is argv (one program's, after expansion, about to
// run from dir with env) with every word that names a known program
// under another name spelled by that program's name, as the rules that
// know programs by name read them: a link, hard link or copy of git
// runs as git whatever it is called (git takes a name of its own only
// when it starts git-: `ln -s /usr/bin/git g; ./g init --bare d`), and
// one of rm, cp, xargs, env … acts as rm, cp, xargs, env (`./r -rf x`,
// `echo .git/config | ./x cp f`). That holds for the program itself, a
// program a wrapper runs (`env ./g init`), and one inside a word that
// holds a command line (`env -S './g init'`). A word with a slash is
// taken from dir, a bare one from env's PATH as the interpreter would
// find it. argv itself when no word is a known program under another
// name.
func ProgramsByIdentity(argv []string, dir string, env []string) []string {
	pathVar, _ := LookupEnv(env, "PATH")
	return programsByIdentity(argv, allInert(len(argv)), dir, pathVar)
}

// programsByIdentity is ProgramsByIdentity over a call's known words;
// pathVar "" looks up no bare word.
func programsByIdentity(words []string, known []bool, dir, pathVar string) []string {
	var files []knownFile // stat once, when a word is an executable
	named := func(w string) string {
		if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "=*?[") {
			return ""
		}
		var bin string
		switch {
		case filepath.IsAbs(w):
			bin = w
		case strings.Contains(w, "/"):
			bin = filepath.Join(dir, w)
		case pathVar == "":
			return ""
		default:
			bin = lookProgram(w, dir, []string{"PATH=" + pathVar})
		}
		if bin == "" || executableAt(bin) == nil {
			return ""
		}
		if files == nil {
			files = knownFiles()
		}
		return identify(bin, path.Base(w), dir, pathVar, files)
	}
	var out []string
	set := func(i int, w string) {
		if out == nil {
			out = append([]string(nil), words...)
		}
		out[i] = w
	}
	for i, w := range words {
		if !known[i] {
			continue
		}
		if n := named(w); n != "" {
			set(i, n)
			continue
		}
		if !strings.ContainsAny(w, " \t\n") {
			continue
		}
		fields := strings.Fields(w)
		changed := false
		for j, f := range fields {
			if n := named(strings.Trim(f, `'"`)); n != "" {
				fields[j], changed = n, true
			}
		}
		if changed {
			set(i, strings.Join(fields, " "))
		}
	}
	if out == nil {
		return words
	}
	return out
}

// CheckProgram is the run-time check of the file the interpreter is
// about to execute for argv (bin, found from argv[0]): under an
// automatic approval, a program the read-only set knows by name must be
// that program, the system's (the same file as, or a copy of, the one
// in a system directory), since its option grammar is what the approval
// rests on: a `cat` found first on PATH that is another program, or git
// under cat's name, is not cat.
func (j Judgement) CheckProgram(bin string, argv []string) error {
	if !j.Automatic() || len(argv) == 0 || !impostor(bin, argv[0]) {
		return nil
	}
	name := argv[0]
	return fmt.Errorf("%w: `%s` runs %s, which is not the system's %s (not the same file as, nor a copy of, one in %s), so what the approval (%s) judged of %s does not hold for it",
		ErrNotJudged, strings.Join(argv, " "), bin, name, strings.Join(systemBinDirs(), ", "), j.By, name)
}

// impostor reports whether name, a bare name of the read-only set that
// the interpreter found as bin, is not the system's program of that name
// (the same file as, or a copy of, the one in a system directory).
func impostor(bin, name string) bool {
	if strings.Contains(name, "/") {
		return false // named by path: never in the read-only set (argvReadOnlyProblem)
	}
	if _, ok := readOnlyPrograms()[name]; !ok {
		return false
	}
	if fi := executableAt(bin); fi != nil {
		for _, d := range systemBinDirs() {
			if sameExecutable(bin, fi, d+"/"+name) {
				return false
			}
		}
	}
	return true
}

// AsExecuted is argv as the judgement reads it once the interpreter has
// found bin for argv[0]: when argv[0] names a program of the read-only
// set but bin is not that program (a copy of tee placed on PATH as cat),
// argv[0] is bin itself, a program named by its path, which no
// inspect-only grammar admits, so what it names is judged (`cat
// AGENTS.md` run by that tee writes AGENTS.md). argv itself otherwise.
func AsExecuted(bin string, argv []string) []string {
	if len(argv) == 0 || !impostor(bin, argv[0]) {
		return argv
	}
	return append([]string{bin}, argv[1:]...)
}

// CheckEnv is the run-time check of the environment env a program is
// about to get under j, against the one the command started with
// (start). A classifier rated the command's text, so a variable the
// command set or changed must be one the text spells: a name the shell
// computes (`export "$n=./x.so"` with n=LD_PRELOAD, BASH_ENV, NODE_OPTIONS
// …) makes every program load or run what the rating never saw. PWD and
// OLDPWD are the shell's own. Other approvals pass: the static pass and
// the allowlist admit no such assignment, and a person or the high-risk
// policy saw the text whole.
func (j Judgement) CheckEnv(env, start []string) error {
	if j.By != ByClassifier {
		return nil
	}
	for name := range changedEnv(env, start) {
		if name == "PWD" || name == "OLDPWD" {
			continue
		}
		if !spellsName(j.Command, name) {
			return fmt.Errorf("%w: the command sets %s in the environment of the programs it runs, a name its text does not spell, so the rating (%s) did not see it", ErrNotJudged, name, j.By)
		}
	}
	return nil
}

// spellsName reports whether text holds name as a whole word (not inside
// a longer name: PRELOAD is not LD_PRELOAD).
func spellsName(text, name string) bool {
	isName := func(b byte) bool {
		return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
	}
	for i := 0; ; {
		k := strings.Index(text[i:], name)
		if k < 0 {
			return false
		}
		k += i
		end := k + len(name)
		if (k == 0 || !isName(text[k-1])) && (end == len(text) || !isName(text[end])) {
			return true
		}
		i = k + 1
	}
}
