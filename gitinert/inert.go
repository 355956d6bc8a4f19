package gitinert

import (
	"slices"
	"strings"
)

// InertKey says whether a repository may set key (as `git config --list`
// prints it: section and variable lower-cased, a subsection as written)
// without making git run a program, read or write outside the repository,
// or send anything anywhere the approver was not shown. It is an
// allowlist: a key git may understand that is not on it counts as a risk,
// so a setting added to git later is refused until someone reads what it
// does. Within the branch and remote sections, whose vocabulary git fixes
// and where tools (editors, gh) keep keys of their own that git ignores,
// only the keys git acts on dangerously are refused.
func InertKey(key string) bool {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return false
	}
	sub, name := "", rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		sub, name = rest[:i], rest[i+1:]
	}
	switch section {
	case "color", "advice":
		// Output colours and hints.
		return true
	case "extensions":
		// Repository-format features, each read before it is allowed:
		// partialClone makes the repository a partial clone, whose missing
		// objects git fetches (lazily, in a read-only diff or blame) from
		// the remote it names, a network request of the repository's
		// choosing. An extension git adds later is refused until read.
		return sub == "" && in(name, "noop", "noop-v1", "preciousobjects", "worktreeconfig", "objectformat",
			"compatobjectformat", "refstorage")
	case "alias":
		// No alias can shadow one of git's own commands; a command that
		// names an alias is judged by AliasRisks.
		return true
	case "branch":
		// mergeOptions passes options to every merge (-s runs
		// git-merge-<strategy>).
		return sub != "" && name != "mergeoptions"
	case "remote":
		if sub == "" {
			return name == "pushdefault"
		}
		switch name {
		case "receivepack", "uploadpack": // a program run for the transport
			return false
		case "vcs": // a remote helper program
			return false
		case "mirror", "proxy", "proxyauthmethod": // push everything; reroute traffic
			return false
		case "promisor", "partialclonefilter":
			// A promisor remote: git fetches missing objects from its URL
			// during read-only commands (extensions.partialClone likewise).
			return false
		}
		return true
	case "submodule":
		// update = "!cmd" runs a command; the rest describes submodules.
		return sub != "" && in(name, "url", "active", "branch", "fetchrecursesubmodules", "ignore", "shallow")
	case "http":
		// Headers sent to matching URLs (a CI checkout's token); every
		// other http setting (TLS checks, proxies, cookies) is refused.
		return name == "extraheader"
	case "lfs":
		return (sub == "" && name == "repositoryformatversion") || (sub != "" && in(name, "access", "locksverify"))
	case "maintenance":
		return sub != "" && name == "enabled" || sub == "" && in(name, "auto", "strategy")
	case "include", "includeif":
		// An included file is not read (ListArgs): what it sets is
		// unknown, so it is not inert.
		return false
	}
	if sub != "" {
		// Named drivers (diff.<d>.command, merge.<d>.driver, filter.<f>.clean,
		// …), credential helpers per URL, URL rewrites, hooks: all run or
		// redirect something.
		return false
	}
	allowed, known := inertSettings()[section]
	return known && in(name, strings.Fields(allowed)...)
}

// inertSettings are the two-level keys a repository may set, by section.
// Left out on purpose, among others: core.worktree, core.hooksPath,
// core.fsmonitor, core.pager, core.editor, core.sshCommand, core.askPass,
// core.gitProxy, core.attributesFile, core.excludesFile,
// core.alternateRefsCommand, diff.external, diff.tool, merge.tool,
// merge.verifySignatures, pull.twohead and pull.octopus (strategy
// programs), push.followTags and push.gpgSign, commit.gpgSign, tag.gpgSign,
// gpg.*, sequence.editor, protocol.allow, safe.*, trace2.*, uploadpack.*.
func inertSettings() map[string]string {
	return map[string]string{
		"core": "repositoryformatversion filemode bare logallrefupdates ignorecase precomposeunicode symlinks " +
			"autocrlf eol safecrlf checkstat trustctime quotepath sparsecheckout sparsecheckoutcone splitindex " +
			"untrackedcache commitgraph multipackindex compression loosecompression preloadindex abbrev whitespace " +
			"longpaths deltabasecachelimit bigfilethreshold warnambiguousrefs",
		"user":     "name email signingkey useconfigonly",
		"init":     "defaultbranch",
		"pull":     "rebase ff",
		"push":     "default autosetupremote",
		"merge":    "ff log conflictstyle renames renormalize stat autostash defaulttoupstream",
		"rebase":   "autosquash autostash updaterefs stat abbreviatecommands missingcommitscheck",
		"fetch":    "prune prunetags writecommitgraph fsckobjects parallel showforcedupdates negotiationalgorithm",
		"transfer": "fsckobjects",
		"protocol": "version",
		"receive":  "denycurrentbranch denynonfastforwards denydeletes fsckobjects unpacklimit",
		"gc":       "auto autopacklimit autodetach pruneexpire reflogexpire reflogexpireunreachable writecommitgraph",
		"index":    "version threads sparse recordendofindexentries recordoffsettable skiphash",
		"feature":  "manyfiles experimental",
		"rerere":   "enabled autoupdate",
		"status":   "showuntrackedfiles relativepaths short branch showstash aheadbehind renames renamelimit submodulesummary",
		"log":      "date decorate abbrevcommit follow showroot mailmap excludedecoration",
		"blame":    "date showemail showroot blankboundary coloring ignorerevsfile markignoredlines markunblamablelines",
		"grep":     "linenumber column patterntype extendedregexp fullname threads",
		"diff": "renames algorithm context interhunkcontext mnemonicprefix noprefix relative renamelimit " +
			"suppressblankempty submodule wordregex indentheuristic colormoved colormovedws statgraphwidth " +
			"statnamewidth dirstat autorefreshindex ignoresubmodules",
	}
}

func in(s string, set ...string) bool { return slices.Contains(set, s) }
