package readtools

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// option is an Effect Option as the original serialises it:
// {"_id":"Option","_tag":"Some","value":…} or {"_id":"Option","_tag":"None"}.
type option struct {
	ID    string `json:"_id"`
	Tag   string `json:"_tag"`
	Value string `json:"value,omitempty"`
}

// timeOption wraps a time as Some(ISO-8601 UTC, milliseconds), or None
// for the zero time.
func timeOption(t time.Time) option {
	if t.IsZero() {
		return option{ID: "Option", Tag: "None"}
	}
	return option{ID: "Option", Tag: "Some", Value: t.UTC().Format("2006-01-02T15:04:05.000Z")}
}

// statResult is stat's result; the pointer fields are null for a missing
// path (the spec's intended shape, which the original never reached).
type statResult struct {
	Path   string  `json:"path"`
	Exists bool    `json:"exists"`
	Type   *string `json:"type"`
	Size   *int64  `json:"size"`
	Mtime  *option `json:"mtime"`
	Atime  *option `json:"atime"`
}

func statHandler(_ context.Context, env *tools.Env, raw json.RawMessage) tools.Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := decode(raw, &a); err != nil {
		return badArgs(err)
	}
	abs := resolve(env, a.Path)
	if err := guard(env).Check(abs); err != nil {
		return tools.Fail(err.Error())
	}
	fi, err := os.Stat(abs) // follows links, as the spec says
	if isMissing(err) {
		return tools.OK(statResult{Path: abs})
	}
	if err != nil {
		return tools.Fail(err.Error())
	}
	typ, size := fileType(fi.Mode()), fi.Size()
	mtime, atime := timeOption(fi.ModTime()), timeOption(accessTime(fi))
	return tools.OK(statResult{Path: abs, Exists: true, Type: &typ, Size: &size, Mtime: &mtime, Atime: &atime})
}

// fileType names a mode the way Effect's FileSystem does.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "File"
	case m.IsDir():
		return "Directory"
	case m&fs.ModeCharDevice != 0:
		return "CharacterDevice"
	case m&fs.ModeDevice != 0:
		return "BlockDevice"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "Socket"
	}
	return "Unknown"
}
