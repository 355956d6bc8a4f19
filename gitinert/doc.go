// Package gitinert decides whether a git repository's own configuration
// would make git run programs (or reach places) of the repository's
// choosing, and holds the settings jazz lays over every repository that
// git runs in without a person having accepted the repository's own
// programs. The git tools (tools/gittools) and the shell's automatic
// approvals (shellguard, shellrun) make the one check.
//
// The repository's configuration is what git itself reads in the
// directory it runs in: discovery upward from there, a `.git` file that
// points elsewhere, the common directory of a linked worktree, the
// worktree scope. It is listed by git (`git config --list --no-includes
// --show-scope --show-origin`), so the check reads what git will, except
// included files: the listing runs outside jazz's isolation, and an
// include could point git's parser at a file jazz hides (its config, a
// key file). An include directive is a risk. Each key of the local and worktree scopes
// is judged against an allowlist of inert settings (InertKey): a key
// git may understand that is not on it counts as a risk. The user's
// system and global configuration are theirs and trusted.
package gitinert
