package shellguard

import (
	"fmt"
	"strings"
	"sync"
)

// Option groups of git's inspect-only subcommands. Left out on purpose:
// --output (writes a file), --ext-diff and --textconv (run configured
// programs), --show-signature and %G… formats (run gpg), --remerge-diff
// (writes objects), -O/--open-files-in-pager (runs a pager), --dirty and
// --broken (refresh the index). Value-taking long options are marked
// glued-only (`=?`) unless git certainly takes the next word: the safe
// direction (see arity).
const (
	gitRevOpts = "-n= -i -E -F -P -g -m -c --max-count= --skip= --since= --after= --until= --before= --since-as-filter=?" +
		" --author= --committer= --grep-reflog= --grep= --all-match --invert-grep --regexp-ignore-case --basic-regexp" +
		" --extended-regexp --fixed-strings --perl-regexp --remove-empty --merges --no-merges --min-parents=? --max-parents=?" +
		" --no-min-parents --no-max-parents --first-parent --exclude-first-parent-only --not --all --branches=? --tags=?" +
		" --remotes=? --glob=? --exclude=? --reflog --single-worktree --ignore-missing --bisect --cherry-mark --cherry-pick" +
		" --left-only --right-only --cherry --walk-reflogs --merge --boundary --simplify-by-decoration --full-history" +
		" --dense --sparse --simplify-merges --ancestry-path=? --show-pulls --date-order --author-date-order --topo-order" +
		" --reverse --no-walk=? --do-walk --pretty=? --format=? --abbrev-commit --no-abbrev-commit --oneline --encoding=?" +
		" --expand-tabs=? --no-expand-tabs --notes=? --no-notes --relative-date --date=? --parents --children --left-right" +
		" --graph --show-linear-break=? --decorate=? --no-decorate --decorate-refs=? --decorate-refs-exclude=?" +
		" --clear-decorations --source --mailmap --no-mailmap --use-mailmap --no-use-mailmap --full-diff --log-size -L=" +
		" --follow --cc --dd --diff-merges=? --no-diff-merges --combined-all-paths --count"
	gitDiffOpts = "-p -u -s -U=? -z -M=? -C=? -B=? -D -S= -G= -R -a -b -w -W --patch --no-patch --unified=? --raw" +
		" --patch-with-raw --patch-with-stat --indent-heuristic --no-indent-heuristic --minimal --patience --histogram" +
		" --anchored=? --diff-algorithm=? --stat=? --compact-summary --numstat --shortstat --dirstat=? --cumulative" +
		" --dirstat-by-file=? --summary --name-only --name-status --submodule=? --color=? --no-color --color-moved=?" +
		" --no-color-moved --color-moved-ws=? --no-color-moved-ws --word-diff=? --word-diff-regex=? --color-words=?" +
		" --no-renames --rename-empty --no-rename-empty --check --ws-error-highlight=? --full-index --binary --abbrev=?" +
		" --no-abbrev --break-rewrites=? --find-renames=? --find-copies=? --find-copies-harder --irreversible-delete" +
		" --diff-filter=? --find-object=? --pickaxe-all --pickaxe-regex --skip-to=? --rotate-to=? --relative=? --no-relative" +
		" --text --ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change --ignore-all-space --ignore-blank-lines" +
		" --ignore-matching-lines=? --inter-hunk-context=? --function-context --exit-code --quiet --no-ext-diff --no-textconv" +
		" --ignore-submodules=? --src-prefix=? --dst-prefix=? --no-prefix --default-prefix --line-prefix=?" +
		" --ita-invisible-in-index --ita-visible-in-index --stat-width=? --stat-name-width=? --stat-graph-width=? --stat-count=?"
	// No --column: git runs `git column` as a child for it.
	gitColorOpts = " --color=? --no-color --no-column"
)

// gitSubcommands are git's inspect-only subcommands, each with its option
// grammar and a rule over its operands where the subcommand has writing
// forms (branch and tag create with an operand, reflog expires).
var gitSubcommands = sync.OnceValue(func() map[string]progCheck {
	log := opts(gitRevOpts + " " + gitDiffOpts)
	log.numeric = true
	listOnly := func(p parsedArgs) string {
		if len(p.operands) > 0 && !p.has("-l", "--list") {
			return fmt.Sprintf("an operand (%q) without --list: it would create it", p.operands[0])
		}
		return gitAtomRule(p)
	}
	grepSpec := opts("-a --text -I --no-textconv -i --ignore-case -w --word-regexp -v --invert-match -h -H --full-name -E" +
		" --extended-regexp -G --basic-regexp -F --fixed-strings -P --perl-regexp -n --line-number --column -l" +
		" --files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c --count --break" +
		" --heading -p --show-function -A= -B= -C= -W --function-context --threads= -f= -e= --and --or --not -q --quiet" +
		" --all-match --max-depth= -r --recursive --no-recursive --cached --untracked --no-index --exclude-standard" +
		" --no-exclude-standard --recurse-submodules -m= --max-count=" + gitColorOpts)
	grepSpec.numeric = true
	return map[string]progCheck{
		"log":      grammar(log, gitFormatRule),
		"show":     grammar(log, gitFormatRule),
		"diff":     grammar(opts(gitDiffOpts+" --cached --staged --merge-base --no-index"), nil),
		"shortlog": grammar(opts(gitRevOpts+" -s -e -n --numbered --summary --email --committer --group=? -w=?"), gitFormatRule),
		"reflog": grammar(log, func(p parsedArgs) string {
			if len(p.operands) > 0 && p.operands[0] != "show" && gitReflogVerbs[p.operands[0]] {
				return fmt.Sprintf("git reflog %s changes the reflog", p.operands[0])
			}
			return gitFormatRule(p)
		}),
		"status": grammar(opts("-s --short -b --branch --show-stash --porcelain=? --long -v --verbose -u=? --untracked-files=?"+
			" --ignore-submodules=? --ignored=? -z --ahead-behind --no-ahead-behind --renames --no-renames --find-renames=?"+gitColorOpts), nil),
		"blame": grammar(opts("-b --root --show-stats -L= -l -t -S= --reverse=? -p --porcelain --line-porcelain --incremental"+
			" --encoding=? --contents= --date=? --progress --no-progress -M=? -C=? --ignore-rev= --ignore-revs-file="+
			" --color-lines --color-by-age --score-debug -f --show-name -n --show-number -s -e --show-email -w --abbrev=? --minimal"), nil),
		"grep": grammar(grepSpec, nil),
		"rev-parse": grammar(opts("--show-toplevel --show-prefix --show-cdup --git-dir --absolute-git-dir --git-common-dir"+
			" --is-inside-work-tree --is-inside-git-dir --is-bare-repository --is-shallow-repository"+
			" --show-ref-format --show-object-format=? --abbrev-ref=? --short=? --verify -q"+
			" --quiet --symbolic --symbolic-full-name --all --branches=? --tags=? --remotes=? --glob=? --exclude=?"+
			" --disambiguate=? --default --prefix --revs-only --no-revs --flags --no-flags --sq --not --local-env-vars"+
			" --path-format=? --git-path --since=? --after=? --until=? --before=? --shared-index-path --end-of-options"), nil),
		"ls-files": grammar(opts("-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage"+
			" --unmerged --killed --directory --no-empty-directory --eol --deduplicate -x= --exclude= -X= --exclude-from="+
			" --exclude-per-directory= --exclude-standard --error-unmatch --with-tree= --full-name --recurse-submodules"+
			" --abbrev=? --debug --sparse --format=? --resolve-undo"), gitAtomRule),
		"ls-tree": grammar(opts("-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree --abbrev=? --format=?"), gitAtomRule),
		"cat-file": grammar(opts("-t -s -e -p --batch=? --batch-check=? --batch-command=? --batch-all-objects --buffer --unordered"+
			" --follow-symlinks --allow-unknown-type -Z --mailmap --no-mailmap --use-mailmap --no-use-mailmap"), gitAtomRule),
		"describe": grammar(opts("--all --tags --contains --abbrev=? --candidates=? --exact-match --debug --long --match=? --exclude=? --always --first-parent"), nil),
		"branch": grammar(opts("-a --all -r --remotes -v --verbose -l --list --show-current --sort=? --contains=? --no-contains=?"+
			" --merged=? --no-merged=? --points-at=? --format=? -i --ignore-case --abbrev=? --no-abbrev --omit-empty"+gitColorOpts), listOnly),
		"tag": grammar(opts("-l --list -n=? --sort=? --contains=? --no-contains=? --merged=? --no-merged=? --points-at=? --format=?"+
			" -i --ignore-case --omit-empty"+gitColorOpts), listOnly),
		"remote": grammar(opts("-v --verbose"), maxOperands(0)),
	}
})

// gitReflogVerbs are reflog's subcommands other than show.
var gitReflogVerbs = map[string]bool{"expire": true, "delete": true, "exists": true, "drop": true, "list": true}

// gitFormatRule holds log, show, shortlog and reflog to what only
// prints. Their pretty formats (--format, --pretty, shortlog's
// --group=format:) may not verify signatures (%G…, which runs gpg) and
// may name only the %(…) placeholders known to print what git holds
// (%(describe) runs `git describe` as a child). And --diff-merges may
// only pick a way of showing a merge that git computes in memory:
// remerge (r) writes the re-merged objects into a temporary directory
// under .git/objects, as --remerge-diff does.
func gitFormatRule(p parsedArgs) string {
	for _, o := range p.opts {
		format := ""
		switch o.name {
		case "--format", "--pretty":
			format = o.value
		case "--group":
			format, _ = strings.CutPrefix(o.value, "format:")
		case "--diff-merges":
			if !gitDiffMerges[o.value] {
				return fmt.Sprintf("--diff-merges=%s, which is not one of the ways git shows a merge without writing objects", o.value)
			}
			continue
		default:
			continue
		}
		if strings.Contains(format, "%G") {
			return "a %G format, which runs gpg to verify signatures"
		}
		if why := atomProblem(o.name, format, gitLogAtoms); why != "" {
			return why
		}
	}
	return ""
}

// gitDiffMerges are --diff-merges values that show a merge from what git
// holds (git 2.39; `--diff-merges=` alone is refused too, being unknown).
var gitDiffMerges = map[string]bool{"off": true, "none": true, "on": true, "first-parent": true, "1": true,
	"separate": true, "m": true, "combined": true, "c": true, "dense-combined": true, "cc": true}

// gitLogAtoms are the %(…) placeholders of log's pretty formats that only
// print: trailers, and the newer decorate.
var gitLogAtoms = map[string]bool{"trailers": true, "decorate": true}

// atomProblem says why format names a %(name…) that is not in known, or
// "". A name ends at its first `:` or `)`; an unclosed `%(` is refused. A
// literal `%%(` is read as a placeholder: refusing a harmless format is
// the safe way to be wrong. opt names the option in the message.
func atomProblem(opt, format string, known map[string]bool) string {
	rest := format
	for {
		i := strings.Index(rest, "%(")
		if i < 0 {
			return ""
		}
		rest = rest[i+2:]
		end := strings.IndexAny(rest, ":)")
		if end < 0 {
			return fmt.Sprintf("an unclosed %%( in git's %s", opt)
		}
		if name := rest[:end]; !known[name] {
			return fmt.Sprintf("the format atom %%(%s) in git's %s, which is not one known only to print", name, opt)
		}
	}
}

// gitAtoms are the %(atom) names of for-each-ref style formats (branch,
// tag, ls-files, ls-tree, cat-file --batch) that only print what git
// already holds. A format names anything else (a newer git's
// %(signature), which runs gpg, its %(describe), which runs `git
// describe` as a child, or an atom not yet invented) is refused: the
// list says what is known to be inert, not what is known to be bad.
var gitAtoms = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, a := range strings.Fields("refname objecttype objectsize objectname deltabase upstream push HEAD color align end" +
		" if then else symref worktreepath tree parent numparent object type tag subject body contents trailers raw rest" +
		" author authorname authoremail authordate committer committername committeremail committerdate" +
		" tagger taggername taggeremail taggerdate creator creatordate" +
		" objectmode path stage eolinfo eolattr") {
		m[a] = true
	}
	return m
})

// gitAtomRule refuses a --format, --batch or --batch-check value naming a
// %(atom) outside gitAtoms, and a --sort key that is not one of them
// (keys are atoms: a newer git's --sort=signature runs gpg). The atom's
// name ends at its first `:` or `)`; an unclosed `%(` is refused too.
func gitAtomRule(p parsedArgs) string {
	for _, o := range p.opts {
		switch o.name {
		case "--format", "--batch", "--batch-check", "--batch-command":
		case "--sort":
			key := strings.TrimPrefix(o.value, "-")
			for _, pre := range []string{"version:", "v:"} {
				key = strings.TrimPrefix(key, pre)
			}
			key, _, _ = strings.Cut(key, ":")
			if !gitAtoms()[key] {
				return fmt.Sprintf("the sort key %q in git's --sort, which is not one known only to print", o.value)
			}
			continue
		default:
			continue
		}
		if why := atomProblem(o.name, o.value, gitAtoms()); why != "" {
			return why
		}
	}
	return ""
}

// gitCheck: git with only its harmless global options, then one of the
// inspect-only subcommands and its grammar. It relies on git's
// configuration being the user's (a repository's .git/config can name
// pagers, diff drivers and hooks); see LIMITATIONS.md.
func gitCheck(args []string) string {
	i := 0
	for i < len(args) && gitSafeGlobals[args[i]] {
		i++
	}
	if i == len(args) {
		return "git without a subcommand"
	}
	sub := args[i]
	if strings.HasPrefix(sub, "-") {
		return fmt.Sprintf("the git option %q before the subcommand", sub)
	}
	check, ok := gitSubcommands()[sub]
	if !ok {
		return fmt.Sprintf("git %s, which is not one of git's inspect-only subcommands", sub)
	}
	if why := check(args[i+1:]); why != "" {
		return "git " + sub + ": " + why
	}
	return ""
}
