package gittools

// pairs declares the eight gated git tools (tool-schemas.md §7).
func pairs() []pairDef {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	str1 := func(desc string) map[string]any {
		return map[string]any{"type": "string", "minLength": 1, "description": desc}
	}
	flag := func(desc string) map[string]any { return map[string]any{"type": "boolean", "description": desc} }
	files := func(desc string) map[string]any {
		return map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"}, "description": desc}
	}
	return []pairDef{
		{"git_add", "Stage files for the next commit (files, or all: true for every change). Needs approval; the preview lists what is staged.",
			map[string]any{"files": files("Paths or pathspecs to stage (required, even with all)."), "all": flag("Stage every change, new and deleted files included.")},
			[]string{"files"}, proposeWith[addArgs]("git_add", planAdd), executeWith[addArgs]("git_add", planAdd, actAdd)},
		{"git_commit", "Commit the staged changes with a message (all: true also stages the changes of tracked files). Needs approval; the preview shows the staged diff.",
			map[string]any{"message": str1("The commit message."), "all": flag("Also commit the changes of every tracked file (git commit --all).")},
			[]string{"message"}, proposeWith[commitArgs]("git_commit", planCommit), executeWith[commitArgs]("git_commit", planCommit, actCommit)},
		{"git_push", "Push a branch (default: the current one) to a configured remote (default origin). Needs approval; the preview shows the URL and the commits the remote receives. force is leased: it only overwrites what the preview saw.",
			map[string]any{"remote": str("Configured remote name (default origin)."), "branch": str("Local branch to push (default: the current branch)."), "force": flag("Overwrite the remote branch (leased).")},
			nil, proposeWith[pushArgs]("git_push", planPush), executeWith[pushArgs]("git_push", planPush, actPush)},
		{"git_pull", "Fetch a branch from a configured remote (default origin; default branch: the upstream) and merge it, or rebase onto it. Needs approval; the preview shows the incoming commits as last fetched.",
			map[string]any{"remote": str("Configured remote name (default origin)."), "branch": str("Remote branch (default: the current branch's upstream)."), "rebase": flag("Rebase the local commits instead of merging.")},
			nil, proposeWith[pullArgs]("git_pull", planPull), executeWith[pullArgs]("git_pull", planPull, actPull)},
		{"git_checkout", "Switch to a branch or commit, or create a branch (create: true). Needs approval; the preview lists the files that change, and with force the local changes discarded.",
			map[string]any{"branch": str1("Branch or commit to switch to (a new branch's name with create)."), "create": flag("Create the branch at HEAD (checkout -b)."), "force": flag("Discard local changes (checkout -f).")},
			[]string{"branch"}, proposeWith[checkoutArgs]("git_checkout", planCheckout), executeWith[checkoutArgs]("git_checkout", planCheckout, actCheckout)},
		{"git_merge", "Merge a branch into the current one, or abort a merge in progress (abort: true). Needs approval; the preview shows the incoming commits and files changed on both sides.",
			map[string]any{
				"branch": str1("Branch or commit to merge (required even to abort)."), "message": str("Merge commit message."),
				"noFastForward": flag("Always make a merge commit (--no-ff)."), "squash": flag("Stage the changes without committing (--squash)."),
				"abort":    flag("Abort the merge in progress."),
				"strategy": map[string]any{"type": "string", "enum": []any{"resolve", "recursive", "octopus", "ours", "subtree"}, "description": "Merge strategy."},
			},
			[]string{"branch"}, proposeWith[mergeArgs]("git_merge", planMerge), executeWith[mergeArgs]("git_merge", planMerge, actMerge)},
		{"git_rm", "Remove files from git tracking, and from the work tree unless cached. Needs approval; the preview lists the files and any uncommitted changes lost.",
			map[string]any{"files": files("Paths to remove."), "cached": flag("Only from the index; keep the files."), "recursive": flag("Remove directories recursively (-r)."), "force": flag("Remove even with uncommitted changes (-f).")},
			[]string{"files"}, proposeWith[rmArgs]("git_rm", planRm), executeWith[rmArgs]("git_rm", planRm, actRm)},
		{"git_tag", "Create a tag (create: name; message makes it annotated; commit: where, default HEAD) or delete one (delete: name). Needs approval.",
			map[string]any{"create": str("Name of the tag to create."), "message": str("Message: makes an annotated tag."), "commit": str("Commit to tag (default HEAD)."),
				"delete": str("Name of the tag to delete."), "force": flag("Replace an existing tag.")},
			nil, proposeWith[tagArgs]("git_tag", planTag), executeWith[tagArgs]("git_tag", planTag, actTag)},
	}
}
