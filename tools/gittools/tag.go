package gittools

import (
	"context"
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/tools"
)

type tagArgs struct {
	baseArgs
	Create  string `json:"create,omitempty"`
	Message string `json:"message,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Delete  string `json:"delete,omitempty"`
	Force   bool   `json:"force,omitempty"`
}

// tagName checks a tag name given by the model.
func (r *repo) tagName(ctx context.Context, t string) *tools.Result {
	if f := refArg("tag", t); f != nil {
		return f
	}
	if res := r.cmd(true).run(ctx, DefaultTimeout, "check-ref-format", "refs/tags/"+t); !res.ok() {
		return fail(fmt.Sprintf("%q is not a valid tag name", t))
	}
	return nil
}

func planTag(ctx context.Context, r *repo, a *tagArgs) (*plan, *tools.Result) {
	switch {
	case a.Create != "":
		return planTagCreate(ctx, r, a)
	case a.Delete != "":
		return planTagDelete(ctx, r, a)
	}
	// The original asked for approval of this; there is nothing to approve.
	return nil, fail("Invalid operation: must specify either 'create' or 'delete'")
}

func planTagCreate(ctx context.Context, r *repo, a *tagArgs) (*plan, *tools.Result) {
	if f := r.tagName(ctx, a.Create); f != nil {
		return nil, f
	}
	at := "HEAD"
	if a.Commit != "" {
		if f := refArg("commit", a.Commit); f != nil {
			return nil, f
		}
		at = a.Commit
	}
	oid, f := r.resolve(ctx, at)
	if f != nil {
		return nil, f
	}
	if oid == "" {
		return nil, fail(fmt.Sprintf("No commit named %q to tag.", at))
	}
	existing, f := r.refOid(ctx, "refs/tags/"+a.Create)
	if f != nil {
		return nil, f
	}
	if existing != "" && !a.Force {
		return nil, fail(fmt.Sprintf("Tag %q already exists; pass force: true to move it.", a.Create))
	}
	var b strings.Builder
	kind := "lightweight"
	if a.Message != "" {
		kind = "annotated"
	}
	fmt.Fprintf(&b, "Creates the %s tag %s at %s.\n", kind, a.Create, r.subject(ctx, oid))
	if a.Message != "" {
		fmt.Fprintf(&b, "Tag message:\n%s\n", indent(a.Message))
	}
	if existing != "" {
		target, _ := r.resolve(ctx, "refs/tags/"+a.Create)
		fmt.Fprintf(&b, "FORCE: the existing tag %s (at %s) is replaced.\n", a.Create, r.subject(ctx, target))
	}
	msg := "Create " + kind + ` tag "` + quoted(a.Create) + `"`
	if a.Commit != "" {
		msg += " at commit " + quoted(a.Commit)
	}
	if a.Force {
		msg += " (force - overwrites existing)"
	}
	return &plan{message: msg, preview: b.String(), oid: oid, ref: existing,
		state: []string{"tag " + a.Create, "at " + oid, "existing " + existing, "message " + a.Message, fmt.Sprintf("force %t", a.Force)}}, nil
}

func planTagDelete(ctx context.Context, r *repo, a *tagArgs) (*plan, *tools.Result) {
	if f := r.tagName(ctx, a.Delete); f != nil {
		return nil, f
	}
	existing, f := r.refOid(ctx, "refs/tags/"+a.Delete)
	if f != nil {
		return nil, f
	}
	if existing == "" {
		return nil, fail(fmt.Sprintf("There is no tag %q to delete.", a.Delete))
	}
	target, _ := r.resolve(ctx, "refs/tags/"+a.Delete)
	msg := `Delete tag "` + quoted(a.Delete) + `"`
	if a.Force {
		msg += " (force)"
	}
	return &plan{message: msg, preview: fmt.Sprintf("Deletes the tag %s (at %s) from this repository; a pushed copy stays on the remote.\n", a.Delete, r.subject(ctx, target)),
		ref: existing, kind: "delete", state: []string{"delete " + a.Delete, "existing " + existing}}, nil
}

// TagResult is git_tag's result.
type TagResult struct {
	WorkingDirectory string `json:"workingDirectory"`
	Tag              string `json:"tag"`
	Message          string `json:"message,omitempty"`
	Commit           string `json:"commit,omitempty"`
	Force            bool   `json:"force"`
	Created          bool   `json:"created,omitempty"`
	Deleted          bool   `json:"deleted,omitempty"`
}

func actTag(ctx context.Context, r *repo, a *tagArgs, p *plan) tools.Result {
	if p.kind == "delete" {
		// Deleted only if it still points where the preview saw it.
		if res := r.act(ctx, DefaultTimeout, "update-ref", "-d", "refs/tags/"+a.Delete, p.ref); !res.ok() {
			return tools.Fail(res.failure("git tag delete", r.dir))
		}
		return tools.OK(TagResult{WorkingDirectory: r.dir, Tag: a.Delete, Deleted: true, Force: a.Force})
	}
	args := []string{"tag"}
	if a.Force {
		args = append(args, "-f")
	}
	if a.Message != "" {
		args = append(args, "-a", "-m", a.Message)
	}
	args = append(args, "--", a.Create, p.oid)
	if res := r.act(ctx, DefaultTimeout, args...); !res.ok() {
		return tools.Fail(res.failure("git tag create", r.dir))
	}
	commit := a.Commit
	if commit == "" {
		commit = "HEAD"
	}
	return tools.OK(TagResult{WorkingDirectory: r.dir, Tag: a.Create, Message: a.Message, Commit: commit, Force: a.Force, Created: true})
}
