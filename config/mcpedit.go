package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jazz-run/jazz/safefile"
)

// UpdateMCPFile rewrites the MCP definitions file at path (a user's
// ~/.agents/mcp.json, as `jazz mcp add|remove|enable|disable` do): change
// gets the servers by name, as written, and edits them in place. The file
// keeps its shape ({"mcpServers": …} or a bare map) and its other
// top-level keys; a new one is {"mcpServers": …}. It is read like every
// private file (bounded, refused when others could have written it) and
// written atomically with mode 0600, its directory made 0700 when new.
// Nothing is written when change fails.
func UpdateMCPFile(ctx context.Context, path string, change func(servers map[string]json.RawMessage) error) error {
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxFileBytes, What: "MCP definitions file", Private: true, Restrict: true})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", printable(path), err)
	}
	top := map[string]json.RawMessage{}
	wrapped := true
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &top); err != nil {
			return fmt.Errorf("%s is not a JSON object (%v): fix or move it first: %w", printable(path), err, ErrInvalid)
		}
		_, wrapped = top["mcpServers"]
	}
	servers := top
	if wrapped {
		servers = map[string]json.RawMessage{}
		if raw := top["mcpServers"]; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &servers); err != nil {
				return fmt.Errorf("%s: mcpServers is not an object (%v): %w", printable(path), err, ErrInvalid)
			}
		}
	}
	if err := change(servers); err != nil {
		return err
	}
	if wrapped {
		b, err := json.Marshal(servers)
		if err != nil {
			return fmt.Errorf("encode %s: %w", printable(path), err)
		}
		top["mcpServers"] = b
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", printable(path), err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", printable(dir), err)
	}
	tmp, err := os.CreateTemp(dir, ".mcp.json.*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", printable(path), err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(append(out, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(name, 0o600)); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write %s: %w", printable(path), err)
	}
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write %s: %w", printable(path), err)
	}
	return nil
}
