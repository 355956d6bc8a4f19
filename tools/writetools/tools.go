//go:build unix

// Package writetools owns the high-risk file tools (write_file, edit_file,
// mkdir, rm, mv, cp) as two-phase pairs: a visible propose half that
// resolves paths, reads the target, simulates the change and computes the
// diff without mutating anything, and a hidden `execute_<name>` twin the
// gate runs with exactly the arguments the propose half returned.
//
// # What the approver sees is what happens
//
// Paths are resolved lexically first (tool-schemas.md §2: no confinement,
// `../../etc/passwd` goes where it says), then walked the way the kernel
// walks them, one component at a time from "/" with O_NOFOLLOW, every
// symbolic link read and followed by hand (walk.go). When links make the
// real target differ from the path as written, the message and the
// preview say so ("Through symbolic links, <repo>/docs/authorized_keys is
// /home/u/.ssh/authorized_keys."). What a change destroys is stated:
// the file and its size, or the directory and how many files,
// directories and bytes go with it.
//
// # Jazz's own files
//
// No file tool reads, writes, moves, copies or removes what the read
// tools refuse to read (secrets.Guard: JAZZ_HOME, process information
// under /proc, the run's config and key files), through any spelling: a
// symbolic link, a hard link of one of them, a tree that holds them. The
// propose half refuses before anyone is asked (its diff, a copy, or the
// yes/no of "pattern not found" would tell the model their content), and
// the twin refuses again on its own walk and on every descriptor it reads
// (guard.go).
//
// # What only a person approves
//
// A change to what decides later calls or runs (a .git directory, .jazz,
// .agents, an AGENTS.md, a dot entry of the home directory; judged on
// every path touched, as written and resolved, and on the entries of a
// moved or copied tree) carries HumanOnly in its approval request: no
// tool allowlist, remembered answer or policy approves it, only a person
// (escalation.go). So does replacing or removing what the user made
// read-only (a file or directory with no write bit, or none for this
// process, an entry of a tree removed or replaced, the directory the
// change is made in): a rename over a file and an unlink need no write
// permission on the file itself, and the approval says it is read-only.
//
// # Binding an approval to its preview
//
// The propose half adds one property to the twin's arguments,
// expectedState: a digest of every component the walk went through (its
// physical path, type, device and inode, and for a link its target) and
// of the leaf as the operation sees it (a file's identity, mode, size,
// times and, for a write or an edit, content; a directory's whole tree; a
// link's target), and who may approve the change (the human-only verdict,
// which also depends on what is beside the target: a HEAD there makes its
// directory git's own). The change time is what tells a file from one removed
// and made again, even with the same bytes and a reused inode number, and
// the mode is what a write keeps. The twin walks again and refuses with
// `<abs> changed since the preview was approved; propose the change
// again.` when any of it differs. The property exists only in the twins'
// schemas.
//
// The twin then acts through the descriptors its own walk opened, so the
// directory it writes in is the one whose chain it just verified however
// the names change afterwards, and it never follows a link while acting.
// What it replaces or removes is checked again at the last moment: a
// file's identity and times right before the rename over it; a
// directory or file to destroy is first renamed aside and checked after
// that rename, then removed (a swap at the last moment is put back, not
// destroyed). A new file is created with renameat2(RENAME_NOREPLACE).
// The window left is a rewrite in place of an existing file between the
// last check and the rename, which no POSIX call closes; and a retargeted
// link after the walk read it, which still leads where the approval said.
//
// # Writes, and stopping
//
// Every file write goes to a temporary file in the target's directory and
// is renamed over the target, keeping the target's permission bits and
// its owner and group (or failing when they cannot be kept), so a killed
// process leaves the old file or the new one, never half of one. Other
// hard links of the target keep the old content, and the approval says
// so. A file copied over a file keeps that file's owner, group and mode,
// as cp(1) does. No tool makes an entry more than maxTreeDepth
// directories below /,
// the depth rm, mv and cp work through.
// A copy is built under a hidden name and renamed into place. Twins look
// at their context between chunks and entries: stopped before the final
// rename, they undo what they made and say nothing was changed; stopped
// while removing, they say how many entries went and where the rest is.
package writetools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/pathres"
)

// Tools returns the six pairs: each propose half followed by its hidden
// execute twin.
func Tools() []tools.Tool {
	var out []tools.Tool
	for _, d := range []struct {
		name, desc string
		props      string // JSON object members, for objectSchema
		required   []string
		propose    tools.Handler
		execute    tools.Handler
	}{
		{"write_file", "Write content to a file, replacing it whole or creating it. Prefer edit_file to change part of an existing file.",
			writeFileProps, []string{"path", "content"}, proposeWriteFile, executeWriteFile},
		{"edit_file", "Edit an existing file with line-based operations (replace_lines, replace_pattern, insert, delete_lines), applied in order; each edit's line numbers refer to the file after the previous edits.",
			editFileProps, []string{"path", "edits"}, proposeEditFile, executeEditFile},
		{"mkdir", "Create a directory.",
			mkdirProps, []string{"path"}, proposeMkdir, executeMkdir},
		{"rm", "Remove a file, or a directory with recursive: true.",
			rmProps, []string{"path"}, proposeRm, executeRm},
		{"mv", "Move or rename a file or directory; destination is the final name.",
			moveProps, []string{"source", "destination"}, proposeMv, executeMv},
		{"cp", "Copy a file or directory (recursively); destination is the final name.",
			moveProps, []string{"source", "destination"}, proposeCp, executeCp},
	} {
		pair := tools.Pair(tools.Tool{
			Name:        d.name,
			Description: d.desc,
			Schema:      objectSchema(d.props, d.required),
			Level:       messages.LevelHighRisk,
			Handler:     d.propose,
		}, d.execute, 0)
		// The twin alone accepts the preview's fingerprint.
		pair[1].Schema = objectSchema(d.props+",\n"+expectedStateProp, d.required)
		out = append(out, pair...)
	}
	return out
}

// The argument properties of each pair (JSON object members). Constants,
// so no caller can alter what another run is offered.
const (
	writeFileProps = `"path":{"type":"string","minLength":1,"description":"File to write, absolute or relative to the working directory."},
"content":{"type":"string","description":"The whole new content of the file."},
"createDirs":{"type":"boolean","default":false,"description":"Create missing parent directories."}`
	editFileProps = `"path":{"type":"string","minLength":1,"description":"Existing file, absolute or relative to the working directory."},
"edits":{"type":"array","minItems":1,"maxItems":1000,"description":"Applied in order; each edit's line numbers refer to the file after the previous edits.","items":{"anyOf":[
{"type":"object","properties":{"type":{"const":"replace_lines"},
"startLine":{"type":"integer","minimum":1,"description":"First line, 1-based, inclusive."},
"endLine":{"type":"integer","minimum":1,"description":"Last line, inclusive."},
"content":{"type":"string","description":"Replacement text."}},
"required":["type","startLine","endLine","content"]},
{"type":"object","properties":{"type":{"const":"replace_pattern"},
"pattern":{"type":"string","minLength":1,"description":"Literal single-line text, or re:<regex>."},
"replacement":{"type":"string","description":"Literal text; $1 is not expanded."},
"count":{"type":"integer","description":"Matches to replace: omit for the first, -1 for all."}},
"required":["type","pattern","replacement"]},
{"type":"object","properties":{"type":{"const":"insert"},
"line":{"type":"integer","minimum":0,"description":"Insert after this line; 0 inserts before line 1."},
"content":{"type":"string","description":"Text to insert."}},
"required":["type","line","content"]},
{"type":"object","properties":{"type":{"const":"delete_lines"},
"startLine":{"type":"integer","minimum":1,"description":"First line, 1-based, inclusive."},
"endLine":{"type":"integer","minimum":1,"description":"Last line, inclusive."}},
"required":["type","startLine","endLine"]}]}}`
	mkdirProps = `"path":{"type":"string","minLength":1,"description":"Directory to create."},
"recursive":{"type":"boolean","default":true,"description":"Create parent directories as needed."}`
	rmProps = `"path":{"type":"string","minLength":1,"description":"File or directory to remove."},
"recursive":{"type":"boolean","description":"Required to remove a directory."},
"force":{"type":"boolean","description":"Accepted for compatibility with rm -f; removal never prompts."}`
	moveProps = `"source":{"type":"string","minLength":1,"description":"Existing file or directory."},
"destination":{"type":"string","minLength":1,"description":"The final name of the result."},
"force":{"type":"boolean","default":false,"description":"Replace an existing destination."}`
	expectedStateProp = `"expectedState":{"type":"string","description":"Fingerprint of the targets as the preview saw them; set by the propose step."}`
)

// objectSchema is the JSON Schema of a pair's arguments: props, required,
// closed to anything else. Written as text, not marshalled from maps:
// every run builds these tools, and json.Marshal of their schema maps was
// ~0.2 ms of a one-turn run's CPU (schemas_test.go checks the result).
func objectSchema(props string, required []string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	b.WriteString(props)
	b.WriteString(`},"required":[`)
	for i, r := range required {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + r + `"`)
	}
	b.WriteString(`],"additionalProperties":false}`)
	return json.RawMessage(b.String())
}

// resolve is the spec's path resolution against the agent's cwd.
func resolve(env *tools.Env, input string) string {
	return pathres.Resolve(env.Cwd(), env.Home, input)
}

// argPath writes an absolute path so that pathres.Resolve gives it back
// unchanged: Resolve drops the backslash of `\X`, so backslashes double;
// it trims spaces (a name ending in a space, a tab, U+2028) and strips
// one pair of surrounding quotes, so such a path is wrapped in quotes.
func argPath(abs string) string {
	p := strings.ReplaceAll(abs, `\`, `\\`)
	if strings.TrimSpace(p) != p {
		p = `"` + p + `"`
	}
	return p
}

// approval is the propose half's answer: the twin's name and arguments.
func approval(name, message, preview string, executeArgs any) tools.Result {
	return approvalBy(name, message, preview, "", executeArgs)
}

// approvalBy is approval for a change only a person may approve when
// humanOnly (its reason) is set; the message says so.
func approvalBy(name, message, preview, humanOnly string, executeArgs any) tools.Result {
	args, err := json.Marshal(executeArgs)
	if err != nil {
		return tools.Fail(fmt.Sprintf("encode %s arguments: %v", name, err))
	}
	return tools.Result{
		Error: "Approval required: " + name + " requires user confirmation.",
		Approval: &messages.ApprovalRequest{
			Message:         message + humanOnlyNote(humanOnly),
			PreviewDiff:     preview,
			ExecuteToolName: tools.TwinName(name),
			ExecuteArgs:     args,
			HumanOnly:       humanOnly,
		},
	}
}

// changed is the twin's refusal when a target no longer matches its preview.
func changed(abs string) tools.Result {
	return tools.Fail(abs + " changed since the preview was approved; propose the change again.")
}

// noPreview refuses a twin call that carries no fingerprint: only the
// propose half's executeArgs may reach a twin.
func noPreview(name string) tools.Result {
	return tools.Fail(tools.TwinName(name) + " needs the expectedState of a " + name + " preview; propose the change again.")
}

// decode unmarshals schema-valid args; a failure here is a bug upstream.
func decode(args json.RawMessage, v any) *tools.Result {
	if err := json.Unmarshal(args, v); err != nil {
		r := tools.Fail("Invalid arguments: " + err.Error())
		return &r
	}
	return nil
}
