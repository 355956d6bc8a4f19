package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jazz-run/jazz/safefile"
)

// A project's ./.jazz/config.json comes with whatever repository was
// cloned, so by default it may only narrow what the user's own config
// allows (see narrow). The user trusts a project directory with
// `jazz trust`: a record in JAZZ_HOME of the directory's resolved path
// and the SHA-256 of the file's bytes then lets that exact file apply in
// full. Any change to the file voids the record until it is trusted again.

// TrustFile is the name of the trust records in JAZZ_HOME.
const TrustFile = "trusted-projects.json"

// maxTrustBytes bounds the trust records file.
const maxTrustBytes = 1 << 20

// ErrNoProjectConfig matches a `jazz trust` of a directory without a
// .jazz/config.json.
var ErrNoProjectConfig = errors.New("no project config")

// TrustRecord is one trusted project directory.
type TrustRecord struct {
	// Dir is the project directory, absolute with symlinks resolved.
	Dir string `json:"dir"`
	// SHA256 is the hex digest of Dir/.jazz/config.json when trusted
	// ("" when there was none).
	SHA256 string `json:"sha256"`
	// MCPSHA256 is the hex digest of Dir/.agents/mcp.json when trusted
	// ("" when there was none): it starts programs, so it is trusted, and
	// voided by any change, exactly like the config.
	MCPSHA256 string `json:"mcpSha256,omitempty"`
	// Identity is the directory's owner, device and inode when trusted
	// (nil where the system has none): a directory made again at Dir,
	// by another user or from another clone, is not the one trusted, even
	// with the same config bytes, since what the config points at (a
	// server's script, a tool's program) lives beside it.
	Identity *DirIdentity `json:"identity,omitempty"`
	// TrustedAt is when, ISO-8601 UTC.
	TrustedAt string `json:"trustedAt"`
}

// DirIdentity is what makes a directory the same one: its owner and its
// device and inode.
type DirIdentity struct {
	UID uint32 `json:"uid"`
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// ErrUnsafeProject matches a `jazz trust` of a directory that someone
// other than the user (or root) could change.
var ErrUnsafeProject = errors.New("project directory not private")

// checkProjectPrivate refuses a project file (or directory) that another
// user could have written, along every directory above it: a trusted
// project config applies in full, as the user's own config does, so it
// must pass the same rule (safefile.CheckPrivate: owned by the user or
// root, not writable by group or others, sticky directories such as /tmp
// excepted). A missing file passes: there is nothing to apply.
func checkProjectPrivate(path string) error {
	err := safefile.CheckPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// identityOf is dir's identity now; nil when it cannot be read.
func identityOf(dir string) *DirIdentity {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil
	}
	return dirIdentity(fi)
}

// sameIdentity says whether a record's identity is the directory's now.
// A record without one (made by an older jazz) matches only where the
// system has no identities at all (now is nil too: the directory exists,
// as its config was just read).
func sameIdentity(rec, now *DirIdentity) bool {
	if rec == nil || now == nil {
		return rec == nil && now == nil
	}
	return *rec == *now
}

type trustDoc struct {
	Projects []TrustRecord `json:"projects"`
}

// TrustStore reads and writes the trust records of one JAZZ_HOME.
type TrustStore struct {
	// Home is JAZZ_HOME.
	Home string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Path is the trust records file.
func (s *TrustStore) Path() string { return filepath.Join(s.Home, TrustFile) }

// ProjectConfig is the project config file of dir.
func ProjectConfig(dir string) string { return filepath.Join(dir, ".jazz", "config.json") }

// ResolveDir makes dir absolute (against cwd) with symlinks resolved: the
// key of a trust record. A directory that no longer exists keeps its
// cleaned absolute path.
func ResolveDir(dir, cwd string) string {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(absDir(cwd), dir)
	}
	dir = filepath.Clean(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// List returns the trust records, oldest first. A missing file is none.
func (s *TrustStore) List(ctx context.Context) ([]TrustRecord, error) {
	data, _, err := safefile.Read(ctx, s.Path(), safefile.Options{MaxBytes: maxTrustBytes, What: "trust records", Private: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d trustDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("trust records %s are not valid JSON (%v): %w", s.Path(), err, ErrInvalid)
	}
	return d.Projects, nil
}

// Digest is the hex SHA-256 a trust record keeps of a file's bytes.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Trust records dir (resolved against cwd) as trusted with its project
// config as it is now, replacing an earlier record of the same directory.
// It returns the record and the keys that now apply which an untrusted
// file could not set.
func (s *TrustStore) Trust(ctx context.Context, dir, cwd string) (TrustRecord, []string, error) {
	dir = ResolveDir(dir, cwd)
	p, _, err := readFile(ctx, ProjectConfig(dir), false, false)
	if err != nil {
		return TrustRecord{}, nil, err
	}
	mcpData, servers, _, err := readMCPData(ctx, ProjectMCP(dir), false)
	if err != nil {
		return TrustRecord{}, nil, err
	}
	if !p.ok && servers == nil {
		return TrustRecord{}, nil, fmt.Errorf("%s has no project config (%s and %s are missing or empty): %w", dir, ProjectConfig(dir), ProjectMCP(dir), ErrNoProjectConfig)
	}
	for _, f := range []string{dir, ProjectConfig(dir), ProjectMCP(dir)} {
		if err := checkProjectPrivate(f); err != nil {
			return TrustRecord{}, nil, fmt.Errorf("%s cannot be trusted: another user could change what it holds (%w): %w", dir, err, ErrUnsafeProject)
		}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	rec := TrustRecord{Dir: dir, Identity: identityOf(dir), TrustedAt: now().UTC().Format("2006-01-02T15:04:05.000Z")}
	var widening []string
	if p.ok {
		_, widening = narrow(map[string]any{}, p.doc)
		rec.SHA256 = Digest(p.data)
	}
	if servers != nil {
		rec.MCPSHA256 = Digest(mcpData)
		for _, name := range sortedKeys(servers) {
			widening = append(widening, shown(MCPFile+" mcpServers."+name))
		}
	}
	err = s.update(ctx, func(recs []TrustRecord) []TrustRecord {
		return append(without(recs, dir), rec)
	})
	return rec, widening, err
}

// Untrust removes the record of dir; found is false when there was none.
func (s *TrustStore) Untrust(ctx context.Context, dir, cwd string) (found bool, err error) {
	keys := []string{ResolveDir(dir, cwd)}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(absDir(cwd), dir)
	}
	keys = append(keys, filepath.Clean(dir))
	err = s.update(ctx, func(recs []TrustRecord) []TrustRecord {
		out := recs
		for _, k := range keys {
			out = without(out, k)
		}
		found = len(out) < len(recs)
		return out
	})
	return found, err
}

func without(recs []TrustRecord, dir string) []TrustRecord {
	out := make([]TrustRecord, 0, len(recs))
	for _, r := range recs {
		if r.Dir != dir {
			out = append(out, r)
		}
	}
	return out
}

// update rewrites the records atomically (temp file, rename) with mode
// 0600. JAZZ_HOME must pass the private check first: trust records in a
// directory others can write would be theirs to forge.
func (s *TrustStore) update(ctx context.Context, change func([]TrustRecord) []TrustRecord) error {
	if err := CheckHome(s.Home); err != nil {
		return err
	}
	recs, err := s.List(ctx)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(trustDoc{Projects: change(recs)}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode trust records: %w", err)
	}
	tmp, err := os.CreateTemp(s.Home, "."+TrustFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("save trust records in %s: %w", s.Home, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(append(data, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(name, 0o600)); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("save trust records %s: %w", s.Path(), err)
	}
	if err := os.Rename(name, s.Path()); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("save trust records %s: %w", s.Path(), err)
	}
	return nil
}

// TrustState is what the records say about one project config.
type TrustState struct {
	// Dir is the resolved project directory.
	Dir string
	// Record is the directory's record, when there is one.
	Record *TrustRecord
	// ok: the record matches the file's bytes.
	ok bool
	// Digest is of the file as read now.
	Digest string
	// Unsafe says why a record whose digest matches still trusts nothing
	// ("" when it does): the directory was replaced, or others could
	// write it.
	Unsafe string
}

// trusts looks up the project directory cwd with its config bytes data.
// Unusable records trust nothing: the reason is a warning.
func (s *TrustStore) trusts(ctx context.Context, cwd string, data []byte) (TrustState, []string) {
	return s.trustsDigest(ctx, cwd, ProjectConfig(cwd), data, func(r TrustRecord) string { return r.SHA256 })
}

// trustsMCP is trusts for the project's .agents/mcp.json.
func (s *TrustStore) trustsMCP(ctx context.Context, cwd string, data []byte) (TrustState, []string) {
	return s.trustsDigest(ctx, cwd, ProjectMCP(cwd), data, func(r TrustRecord) string { return r.MCPSHA256 })
}

// trustsDigest matches file's bytes data against the record of cwd's
// directory: the digest, and then the directory itself, which must be
// the one trusted (same owner, device and inode) and, like the file,
// writable by nobody but its owner.
func (s *TrustStore) trustsDigest(ctx context.Context, cwd, file string, data []byte, digest func(TrustRecord) string) (TrustState, []string) {
	st := TrustState{Dir: ResolveDir(cwd, cwd), Digest: Digest(data)}
	recs, err := s.List(ctx)
	if err != nil {
		return st, []string{fmt.Sprintf("trust records unusable, so no project is trusted: %v", err)}
	}
	for i := range recs {
		if recs[i].Dir == st.Dir {
			st.Record = &recs[i]
			st.ok = digest(recs[i]) != "" && digest(recs[i]) == st.Digest
		}
	}
	if st.ok {
		st.Unsafe = unsafeReason(*st.Record, file)
		st.ok = st.Unsafe == ""
	}
	return st, nil
}

// unsafeReason says why rec no longer vouches for file although its bytes
// match; "" when it does.
func unsafeReason(rec TrustRecord, file string) string {
	if !sameIdentity(rec.Identity, identityOf(rec.Dir)) {
		if rec.Identity == nil {
			return "the record was made by an older jazz that did not note which directory it was"
		}
		return "the directory is not the one you trusted (it was removed and made again, or belongs to someone else now)"
	}
	if err := checkProjectPrivate(file); err != nil {
		return fmt.Sprintf("another user could change it: %v", err)
	}
	return ""
}

// untrustedWarning is the one warning about an untrusted project file:
// which keys were ignored and the command that trusts the directory.
func untrustedWarning(file string, st TrustState, ignored []string) string {
	why := "is not trusted"
	switch {
	case st.Record != nil && st.Unsafe != "":
		why = fmt.Sprintf("is no longer trusted although its bytes are those you trusted on %s: %s", st.Record.TrustedAt, printable(st.Unsafe))
	case st.Record != nil:
		why = fmt.Sprintf("changed since you trusted it on %s", st.Record.TrustedAt)
	}
	const show = 40
	list := ignored
	more := ""
	if len(list) > show {
		more = fmt.Sprintf(" and %d more", len(list)-show)
		list = list[:show]
	}
	return fmt.Sprintf("project config %s %s, so it may only narrow your own config; ignored: %s%s. "+
		"If you trust it, review it and run: jazz trust %s", printable(file), why, strings.Join(list, ", "), more, shellWord(st.Dir))
}

// narrowRule decides one key of an untrusted project file: keep (with
// the value to apply) or ignore. base is the value so far (nil when
// unset) and def the default when unset.
type narrowRule struct {
	path string // dotted; "*" matches any one key
	keep func(v, base any, def float64) (any, bool)
	def  float64
}

// narrowRules lists every key an untrusted project file may set, and how
// far. Anything else (keys, endpoints, base URLs, headers, prices, MCP
// servers, custom tools, keys not invented yet) is ignored: the list
// names what is known to be safe, not what is known to be dangerous.
func narrowRules() []narrowRule {
	return []narrowRule{
		{path: "autoApprovedCommands", keep: subsetOfBase},
		{path: "maxIterations", keep: lower, def: DefaultMaxIterations},
		{path: "maxSubagentIterations", keep: lower, def: DefaultMaxSubagentIterations},
		{path: "maxSubagentDepth", keep: lower, def: DefaultMaxSubagentDepth},
		{path: "maxRetries", keep: lower, def: DefaultMaxRetries},
		{path: "context.warnThresholdRatio", keep: lower, def: DefaultWarnRatio},
		{path: "context.compactThresholdRatio", keep: lower, def: DefaultCompactRatio},
		{path: "telemetry.enabled", keep: onlyFalse},
		{path: "telemetry.otlp.enabled", keep: onlyFalse},
		{path: "telemetry.otlp.captureContent", keep: onlyFalse},
		{path: "mcpServers.*.enabled", keep: onlyFalse},
		// Presentation only: how the answer is shown, never what runs or
		// where anything is sent.
		{path: "output.streaming.enabled", keep: anyValue},
		{path: "output.mode", keep: anyValue},
		{path: "output.showThinking", keep: anyValue},
		{path: "output.showToolExecution", keep: anyValue},
		{path: "output.showMetrics", keep: anyValue},
	}
}

func anyValue(v, _ any, _ float64) (any, bool) { return v, true }

func onlyFalse(v, _ any, _ float64) (any, bool) {
	b, ok := v.(bool)
	return v, ok && !b
}

// lower keeps a number no higher than the value so far.
func lower(v, base any, def float64) (any, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	x, err := n.Float64()
	if err != nil {
		return nil, false
	}
	limit := def
	if b, isNum := base.(json.Number); isNum {
		if f, err := b.Float64(); err == nil {
			limit = f
		}
	}
	return v, x <= limit
}

// subsetOfBase keeps the entries that the allowlist so far already has:
// a project may drop entries, never add one.
func subsetOfBase(v, base any, _ float64) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	have := map[string]bool{}
	if b, isList := base.([]any); isList {
		for _, e := range b {
			if s, isStr := e.(string); isStr {
				have[strings.TrimSpace(s)] = true
			}
		}
	}
	kept := make([]any, 0, len(list))
	for _, e := range list {
		s, isStr := e.(string)
		if !isStr || !have[strings.TrimSpace(s)] {
			continue
		}
		kept = append(kept, s)
	}
	return kept, len(kept) == len(list)
}

// narrow returns the part of an untrusted project document that
// narrowRules admit, given the merged document so far, and the dotted
// paths of what it left out, sorted. A key a rule keeps only in part
// (some allowlist entries) is applied in part and listed.
func narrow(base, project map[string]any) (map[string]any, []string) {
	var ignored []string
	applied := narrowObject(base, project, "", &ignored)
	sort.Strings(ignored)
	return applied, ignored
}

func narrowObject(base, obj map[string]any, prefix string, ignored *[]string) map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := obj[k]
		path := joinPath(prefix, k)
		var bv any
		if base != nil {
			bv = base[k]
		}
		if r, ok := ruleFor(path); ok {
			kept, whole := r.keep(v, bv, r.def)
			if kept != nil && (whole || isList(kept)) {
				out[k] = kept
			}
			if !whole {
				*ignored = append(*ignored, shown(path))
			}
			continue
		}
		if sub, isObj := v.(map[string]any); isObj && rulesBelow(path) {
			bm, _ := bv.(map[string]any)
			if inner := narrowObject(bm, sub, path, ignored); len(inner) > 0 {
				out[k] = inner
			}
			continue
		}
		leaves(v, path, ignored)
	}
	return out
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// leaves lists the dotted paths of every leaf under v.
func leaves(v any, path string, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, shown(path))
		return
	}
	for k, vv := range m {
		leaves(vv, joinPath(path, k), out)
	}
}

func joinPath(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func ruleFor(path string) (narrowRule, bool) {
	for _, r := range narrowRules() {
		if matchPath(r.path, path) {
			return r, true
		}
	}
	return narrowRule{}, false
}

// rulesBelow says whether some rule names a key inside path.
func rulesBelow(path string) bool {
	n := strings.Count(path, ".") + 1
	for _, r := range narrowRules() {
		parts := strings.Split(r.path, ".")
		if len(parts) > n && matchPath(strings.Join(parts[:n], "."), path) {
			return true
		}
	}
	return false
}

func matchPath(pattern, path string) bool {
	pp, kp := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(pp) != len(kp) {
		return false
	}
	for i := range pp {
		if pp[i] != "*" && pp[i] != kp[i] {
			return false
		}
	}
	return true
}

// shown is a key path as it may be printed: the file chose it, so a path
// with anything but plain characters is quoted, and so cannot break or
// forge a line of stderr.
func shown(path string) string {
	if len(path) > 120 {
		path = path[:120] + "…"
	}
	for _, r := range path {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-/*…", r)) {
			return strconv.Quote(path)
		}
	}
	return path
}

// printable is a path as it may be printed: quoted when it holds a control
// character or anything that is not printable.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || strings.ContainsRune("/._-+:,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	if !isPrintable(s) {
		return strconv.Quote(s) // not valid shell, but never raw control bytes
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isPrintable(s string) bool { return printable(s) == s }

// Trust states of a record, as Status reports them.
const (
	TrustMatches = "trusted"
	TrustChanged = "changed"
	TrustMissing = "missing"
	// TrustUnsafe: the bytes match, but the directory is not the one
	// trusted, or others could write it.
	TrustUnsafe = "unsafe"
)

// Status says whether r's project config is still the file that was
// trusted: TrustMatches, TrustChanged, TrustMissing, or why it cannot be
// read.
func (s *TrustStore) Status(ctx context.Context, r TrustRecord) string {
	p, _, err := readFile(ctx, ProjectConfig(r.Dir), false, false)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	mcpData, servers, _, err := readMCPData(ctx, ProjectMCP(r.Dir), false)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	switch {
	case !p.ok && servers == nil:
		return TrustMissing
	case p.ok && Digest(p.data) != r.SHA256, !p.ok && r.SHA256 != "":
		return TrustChanged
	case servers != nil && Digest(mcpData) != r.MCPSHA256, servers == nil && r.MCPSHA256 != "":
		return TrustChanged
	}
	for _, f := range []string{ProjectConfig(r.Dir), ProjectMCP(r.Dir)} {
		if why := unsafeReason(r, f); why != "" {
			return TrustUnsafe + ": " + why
		}
	}
	return TrustMatches
}
