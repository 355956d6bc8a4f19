package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/internal/filelock"
	"github.com/jazz-run/jazz/messages"
)

// Approver is one person (or process) allowed to decide: their nkey's
// public key, the highest risk tier they may approve, and whether they may
// change a run's policy.
type Approver struct {
	Name      string `json:"name"`
	PublicKey string `json:"publicKey"`
	MaxTier   string `json:"maxTier"`
	// Policy allows signed policy changes (still capped by the run's
	// --max-remote-policy).
	Policy bool `json:"policy,omitempty"`
}

// Registry is the set of approvers a run trusts, by public key.
type Registry struct {
	byKey map[string]Approver
	// home, when set, is the JAZZ_HOME whose approvers.json listed the
	// keys in fromFile: each of them is looked up there again at every
	// Lookup, so removing or narrowing one takes effect at once.
	home     string
	fromFile map[string]bool
}

// NewRegistry validates the list; a bad entry is an error, never skipped
// silently, so a typo cannot quietly widen or narrow who may decide.
func NewRegistry(list []Approver) (*Registry, error) {
	r := &Registry{byKey: map[string]Approver{}}
	for i, a := range list {
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("approvers[%d]: %w", i, err)
		}
		if prev, dup := r.byKey[a.PublicKey]; dup && prev != a {
			return nil, fmt.Errorf("approvers[%d]: public key %s is listed twice with different settings", i, a.PublicKey)
		}
		r.byKey[a.PublicKey] = a
	}
	return r, nil
}

// namePattern is compiled on first use: the counted repeat makes a big
// program, too dear for the init of every jazz process.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// ValidName reports whether name can name an approver (and its seed file).
func ValidName(name string) bool { return namePattern().MatchString(name) }

func (a Approver) validate() error {
	if !ValidName(a.Name) {
		return fmt.Errorf("name %q: use 1-64 letters, digits, '.', '_' or '-'", a.Name)
	}
	if !nkeys.IsValidPublicUserKey(a.PublicKey) {
		return fmt.Errorf("approver %s: publicKey %q is not an nkey user public key (U…)", a.Name, a.PublicKey)
	}
	if tierRank(a.MaxTier) == 0 {
		return fmt.Errorf("approver %s: maxTier %q: expected read-only, low-risk or high-risk", a.Name, a.MaxTier)
	}
	return nil
}

// Lookup finds the approver with this public key.
func (r *Registry) Lookup(publicKey string) (Approver, bool) {
	if r == nil {
		return Approver{}, false
	}
	a, ok := r.byKey[publicKey]
	if !ok || !r.fromFile[publicKey] {
		return a, ok
	}
	return r.recheck(a)
}

// Removed reports whether publicKey was admitted from approvers.json
// when the run loaded its registry and is not admitted by it now
// (removed since, or the file unreadable), and who it was then.
func (r *Registry) Removed(publicKey string) (Approver, bool) {
	if r == nil || !r.fromFile[publicKey] {
		return Approver{}, false
	}
	a := r.byKey[publicKey]
	if _, ok := r.recheck(a); ok {
		return Approver{}, false
	}
	return a, true
}

// recheck narrows a to what approvers.json says now: absent (or the
// file unreadable) admits nothing; otherwise the lower tier and both
// policy rights. The run's own list still bounds it.
func (r *Registry) recheck(a Approver) (Approver, bool) {
	list, err := ReadApproversFile(r.home)
	if err != nil {
		return Approver{}, false
	}
	for _, now := range list {
		if now.PublicKey != a.PublicKey {
			continue
		}
		if tierRank(now.MaxTier) < tierRank(a.MaxTier) {
			a.MaxTier = now.MaxTier
		}
		a.Policy = a.Policy && now.Policy
		return a, true
	}
	return Approver{}, false
}

// List returns the approvers sorted by name.
func (r *Registry) List() []Approver {
	if r == nil {
		return nil
	}
	out := make([]Approver, 0, len(r.byKey))
	for _, a := range r.byKey {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Len is the number of approvers.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.byKey)
}

// tierRank orders tiers; 0 means not a tier. unknown (execute_command
// before classification) ranks with high-risk.
func tierRank(t string) int {
	switch t {
	case messages.LevelReadOnly:
		return 1
	case messages.LevelLowRisk:
		return 2
	case messages.LevelHighRisk, messages.LevelUnknown:
		return 3
	}
	return 0
}

// TierCovers reports whether an approver capped at maxTier may approve a
// call of the given level; a level that is not known counts as high-risk.
func TierCovers(maxTier, level string) bool {
	m := tierRank(maxTier)
	l := tierRank(level)
	if l == 0 {
		l = 3
	}
	return m > 0 && l <= m
}

// ParseApprovers reads the `approvers` config value: an array of
// {name, publicKey, maxTier, policy}. Empty input is an empty list.
func ParseApprovers(raw json.RawMessage) ([]Approver, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []Approver
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("approvers must be an array of {name, publicKey, maxTier, policy}: %w", err)
	}
	for i := range list {
		if list[i].MaxTier == "" {
			list[i].MaxTier = messages.LevelHighRisk
		}
	}
	return list, nil
}

// Files of the local bus setup under JAZZ_HOME.
const (
	BusDir        = "bus"
	ApproversFile = "approvers.json"
	ApproverSeeds = "approvers"
)

// ApproversPath is where `jazz bus add-approver` records approvers.
func ApproversPath(home string) string { return filepath.Join(home, BusDir, ApproversFile) }

// ReadApproversFile reads JAZZ_HOME/bus/approvers.json; a missing file is
// an empty list.
func ReadApproversFile(home string) ([]Approver, error) {
	data, err := os.ReadFile(ApproversPath(home))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read approvers: %w", err)
	}
	list, err := ParseApprovers(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ApproversPath(home), err)
	}
	return list, nil
}

// LoadRegistry is who a run trusts: the approvers `jazz bus add-approver`
// recorded in JAZZ_HOME plus the global config's `approvers`.
func LoadRegistry(home string, configApprovers json.RawMessage) (*Registry, error) {
	list, err := ReadApproversFile(home)
	if err != nil {
		return nil, err
	}
	more, err := ParseApprovers(configApprovers)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	reg, err := NewRegistry(append(list, more...))
	if err != nil {
		return nil, err
	}
	// Approvers from the file are revoked by removing them from it; the
	// config's are fixed for the run's life (its config was read once).
	reg.home, reg.fromFile = home, map[string]bool{}
	for _, a := range list {
		reg.fromFile[a.PublicKey] = true
	}
	for _, a := range more {
		delete(reg.fromFile, a.PublicKey)
	}
	return reg, nil
}

// AddApprover creates a signing identity for name, records it in
// JAZZ_HOME/bus/approvers.json and returns the approver and its seed.
// The caller decides whether the seed is printed or written to a file.
func AddApprover(home, name, maxTier string, policy bool) (Approver, []byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return Approver{}, nil, fmt.Errorf("create approver key: %w", err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	a, err := AddApproverKey(home, name, pub, maxTier, policy)
	if err != nil {
		return Approver{}, nil, err
	}
	return a, seed, nil
}

// AddApproverKey records a public key the person generated themselves.
func AddApproverKey(home, name, publicKey, maxTier string, policy bool) (Approver, error) {
	if maxTier == "" {
		maxTier = messages.LevelHighRisk
	}
	unlock, err := LockList(ApproversPath(home))
	if err != nil {
		return Approver{}, err
	}
	defer unlock()
	list, err := ReadApproversFile(home)
	if err != nil {
		return Approver{}, err
	}
	for _, a := range list {
		if a.Name == name {
			return Approver{}, fmt.Errorf("approver %q already exists (public key %s); to replace it, first run: jazz bus remove-approver %s", name, a.PublicKey, name)
		}
	}
	a := Approver{Name: name, PublicKey: publicKey, MaxTier: maxTier, Policy: policy}
	if err := a.validate(); err != nil {
		return Approver{}, err
	}
	list = append(list, a)
	if _, err := NewRegistry(list); err != nil {
		return Approver{}, err
	}
	data, _ := json.MarshalIndent(list, "", "  ")
	if err := WriteSecret(ApproversPath(home), append(data, '\n')); err != nil {
		return Approver{}, err
	}
	return a, nil
}

// RemoveApprover revokes the approver called name: it is taken out of
// JAZZ_HOME/bus/approvers.json (a running `jazz bus serve` closes its
// connections at its next reload, and every run loaded from this home
// refuses what it signs from then on) and the seed jazz kept for it, if
// any, is deleted. It returns who was removed.
func RemoveApprover(home, name string) (Approver, error) {
	unlock, err := LockList(ApproversPath(home))
	if err != nil {
		return Approver{}, err
	}
	defer unlock()
	list, err := ReadApproversFile(home)
	if err != nil {
		return Approver{}, err
	}
	var gone Approver
	kept := make([]Approver, 0, len(list))
	var names []string
	for _, a := range list {
		if a.Name == name {
			gone = a
			continue
		}
		kept = append(kept, a)
		names = append(names, a.Name)
	}
	if gone.Name == "" {
		if len(names) == 0 {
			return Approver{}, fmt.Errorf("no approver %q: %s lists none", name, ApproversPath(home))
		}
		return Approver{}, fmt.Errorf("no approver %q in %s (it lists: %s)", name, ApproversPath(home), strings.Join(names, ", "))
	}
	data, _ := json.MarshalIndent(kept, "", "  ")
	if err := WriteSecret(ApproversPath(home), append(data, '\n')); err != nil {
		return Approver{}, err
	}
	// The key is revoked once the list is written; the seed of a revoked
	// key is no use to anyone, and left behind it reads as a live one.
	if err := os.Remove(ApproverSeedPath(home, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return gone, fmt.Errorf("approver %s is revoked, but its seed file could not be deleted: %w", name, err)
	}
	return gone, nil
}

// ListLockWait bounds how long an update of an identity list waits for
// another one in progress (a jazz command holds it for milliseconds).
const ListLockWait = 10 * time.Second

// LockList takes the lock every read-modify-write of an identity list
// (approvers.json, workers.json) holds, so two commands at once lose
// neither change: a lost removal would undo a revocation unseen. It
// waits at most ListLockWait.
func LockList(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ListLockWait)
	defer cancel()
	return filelock.Lock(ctx, path)
}

// ApproverSeedPath is where a local approver's seed is kept.
func ApproverSeedPath(home, name string) string {
	return filepath.Join(home, BusDir, ApproverSeeds, name+".nk")
}

// WriteSecret writes data atomically with mode 0600, its directory 0700.
func WriteSecret(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	// On disk before the rename makes it the file: a crash after it must
	// not leave an empty list (no approvers, no workers) in its place.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// LoadSigner reads an nkey user seed from a seed file or a NATS .creds
// file (whose seed is the user's key).
func LoadSigner(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read identity: %w", err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return nil, fmt.Errorf("identity %s holds no nkey user seed: %w", path, err)
	}
	return kp, nil
}
