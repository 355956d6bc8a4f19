//go:build unix

package writetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/secrets"
)

// maxReadBytes bounds the file write_file and edit_file read for their
// preview and diff: a larger file gets a clear refusal, not a slow diff.
const maxReadBytes = 16 << 20

// maxWriteBytes bounds what write_file and edit_file write, and so what
// their propose halves build and diff before anyone is asked: as much as
// they read, so that whatever they write can be previewed and edited
// again. A 64 MiB write_file cost its preview 3 GB of allocation and six
// seconds; an edit could grow without end (edits.go).
const maxWriteBytes = maxReadBytes

// target is a located path with what an operation needs of its leaf.
type target struct {
	*located
	kind    string   // "absent", or kindOf the leaf
	content []byte   // a file's content (read mode)
	tree    treeInfo // a directory's (object mode)
	link    string   // a link's target text
	// guard judged the target, and judges what its act reads again.
	guard secrets.Guard
	// state is the fingerprint text: every step, then the leaf. The
	// twin recomputes it and compares digests (fingerprint).
	state string
}

// inspectMode says what of the leaf is fingerprinted.
type inspectMode int

const (
	// readContent reads a file leaf whole and fingerprints its content
	// (write_file, edit_file: the preview's diff is of this content)
	// with its identity, mode, size and times.
	readContent inspectMode = iota
	// objectState fingerprints the leaf as an object to remove, move or
	// copy: its identity, mode, size and time, a directory's whole tree.
	objectState
	// identityOnly fingerprints the leaf's identity, mode, size and
	// time, reading nothing (mkdir, and the links rm follows to check).
	identityOnly
)

// inspect resolves abs and describes its leaf. The caller closes it.
func inspect(ctx context.Context, g secrets.Guard, abs string, followLeaf bool, mode inspectMode) (*target, error) {
	l, err := locate(ctx, abs, followLeaf)
	if err != nil {
		return nil, err
	}
	// Nothing of a protected place is read, fingerprinted or acted on.
	if err := judgeLocated(g, l, followLeaf); err != nil {
		l.close()
		return nil, err
	}
	t := &target{located: l, kind: "absent", guard: g}
	leaf := "leaf absent"
	if l.st != nil {
		t.kind = kindOf(l.st)
		switch {
		case t.kind == "file" && mode == readContent:
			t.content, err = readRegularAt(ctx, g, l.parent, l.leaf, l.real, l.st, maxReadBytes)
			// The content is what the diff was computed from; the rest of
			// the entry is what the write keeps (the mode) and what tells
			// this file from one made since under a reused inode number
			// (the change time, which no one can set back).
			sum := sha256.Sum256(t.content)
			leaf = "leaf " + entryLine(".", l.st, "", true) + " sha256:" + hex.EncodeToString(sum[:])
		case t.kind == "dir" && mode == objectState:
			t.tree, err = inspectTreeAt(ctx, g, l.parent, l.leaf, l.real, l.st)
			leaf = "leaf " + entryLine(".", l.st, "", true) + " tree " + t.tree.digest
		case t.kind == "link":
			t.link, err = readlinkAt(l.parent, l.leaf)
			leaf = "leaf " + entryLine(".", l.st, t.link, true)
		default:
			leaf = "leaf " + entryLine(".", l.st, "", true)
		}
		if err != nil {
			l.close()
			return nil, err
		}
	}
	t.state = strings.Join(l.steps, "\n") + "\n" + leaf
	return t, nil
}

// close releases the target's descriptor; a nil target is fine.
func (t *target) close() {
	if t != nil {
		t.located.close()
	}
}

// fingerprint is the digest of the state the twin receives.
func (t *target) fingerprint() string {
	sum := sha256.Sum256([]byte(t.state))
	return hex.EncodeToString(sum[:])
}

// sealed is the fingerprint with who may approve the change: why is
// humanOnly's verdict on it ("" for any approval). The verdict depends on
// more than the target (a HEAD beside it makes its directory git's own),
// and another call, of the same batch or between, can change that
// without touching the target. A twin computes both again, so a change
// approved as one any approval may make does not run once it has become
// one only a person may.
func (t *target) sealed(why string) string {
	sum := sha256.Sum256([]byte(t.state + "\nperson-only " + strconv.Quote(why)))
	return hex.EncodeToString(sum[:])
}

// mode is the permission bits of an existing leaf, or newFileMode.
func (t *target) mode() uint32 {
	if t.st == nil {
		return newFileMode
	}
	return uint32(t.st.Mode) & 0o777
}

// resolvedNote tells the approver where a path really goes when symbolic
// links make it differ from the path as written: a repository's
// `docs -> ~/.ssh` shows as such.
func resolvedNote(t *target) string {
	if t.real == t.lexical {
		return ""
	}
	return "\n\nThrough symbolic links, " + disp(t.lexical) + " is " + disp(t.real) + "."
}

// hardLinkNote tells the approver of a write or an edit that the file
// has other names: the new content is renamed over this one, so they
// keep the old content (an editor writing in place would change them).
func hardLinkNote(t *target) string {
	if t.st == nil || t.st.Nlink < 2 {
		return ""
	}
	others := "the other keeps"
	if t.st.Nlink > 2 {
		others = "the others keep"
	}
	return fmt.Sprintf("\n\n%s has %d names (hard links): the new content replaces this name only; %s the old content.", disp(t.real), t.st.Nlink, others)
}

// shown is the path with its resolution, for one-line results.
func shown(t *target) string {
	if t.real == t.lexical {
		return disp(t.lexical)
	}
	return disp(t.lexical) + " (through symbolic links: " + disp(t.real) + ")"
}

// destroyed says exactly what removing or replacing the leaf destroys.
func destroyed(t *target) string {
	p := disp(t.lexical)
	switch t.kind {
	case "file":
		return "the file " + p + " (" + formatSize(t.st.Size) + ")"
	case "dir":
		if t.tree == (treeInfo{digest: t.tree.digest}) {
			return "the empty directory " + p
		}
		parts := []string{plural(t.tree.files, "file", "files"), plural(t.tree.dirs, "directory", "directories")}
		if t.tree.links > 0 {
			parts = append(parts, plural(t.tree.links, "symbolic link", "symbolic links"))
		}
		if t.tree.others > 0 {
			parts = append(parts, plural(t.tree.others, "other entry", "other entries"))
		}
		return "the directory " + p + " and everything in it: " + strings.Join(parts, ", ") + ", " + formatSize(t.tree.bytes)
	case "link":
		return "the symbolic link " + p + " (pointing to " + disp(t.link) + "); what it points to is kept"
	}
	return "the " + kindName(t.st) + " " + p
}

// disp is a path (or link target) as a message shows it: as is, unless
// it holds a character that is not printable (a newline, a control or
// bidirectional-override character, invalid UTF-8); then quoted with
// escapes, so no name can break a message's lines or forge one of them
// ("Through symbolic links, … is …" included).
func disp(p string) string {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(p)
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// kindName names a file type for a person.
func kindName(st *unix.Stat_t) string {
	switch k := kindOf(st); k {
	case "dir":
		return "directory"
	case "link":
		return "symbolic link"
	case "fifo":
		return "named pipe"
	case "chardev":
		return "character device"
	case "blockdev":
		return "block device"
	default:
		return k
	}
}
