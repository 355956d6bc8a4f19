package gittools

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestPromisorRemoteReachesNothing: a repository that declares a promisor
// remote (extensions.partialClone, or remote.<name>.promisor alone) and
// lacks an object makes git fetch it, lazily, from whatever URL the
// repository names, in the middle of a read-only diff, log or blame: a
// network request of the repository's choosing (127.0.0.1 or the cloud
// metadata address included) from a tool that is auto-approved. Each
// read-only tool refuses such a repository below high-risk, naming the
// setting, and the server never hears from git. Under high-risk the
// same diff does reach it, so the test can fail.
func TestPromisorRemoteReachesNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	w := newWorld(t)
	cases := []struct {
		name, key string
		kv        []string
	}{
		{"partialclone", "extensions.partialclone", []string{"extensions.partialClone", "origin"}},
		{"promisor", "remote.origin.promisor", []string{"remote.origin.promisor", "true"}},
		{"filter", "remote.origin.partialclonefilter", []string{"remote.origin.partialCloneFilter", "blob:none"}},
	}
	for _, tc := range cases {
		dir := w.repo("promisor-" + tc.name)
		old := w.git(dir, "rev-parse", "HEAD:README")
		writeFile(t, filepath.Join(dir, "README"), "hello\nagain\n")
		w.git(dir, "commit", "-q", "-am", "second")
		if err := os.Remove(filepath.Join(dir, ".git", "objects", old[:2], old[2:])); err != nil {
			t.Fatal(err)
		}
		w.git(dir, "config", "remote.origin.url", srv.URL+"/x.git")
		for i := 0; i+1 < len(tc.kv); i += 2 {
			w.git(dir, "config", tc.kv[i], tc.kv[i+1])
		}
		if tc.name == "filter" {
			// The filter alone makes no promisor; with partialClone it is
			// one more key naming the remote's lazy fetches.
			w.git(dir, "config", "extensions.partialClone", "origin")
		}
		w.env.WorkDir = dir
		for _, p := range []string{"", messages.PolicyReadOnly, messages.PolicyLowRisk} {
			setPolicy(w, p)
			for name, args := range map[string]map[string]any{
				"git_diff":  {"commit": "HEAD~1"},
				"git_blame": {"file": "README"},
				"git_log":   {},
			} {
				r := w.call(name, args)
				if r.Success || !strings.Contains(r.Error, tc.key) {
					t.Errorf("%s, policy %q, %s: want a refusal naming %s, got success=%v error=%q", tc.name, p, name, tc.key, r.Success, r.Error)
				}
			}
		}
		if n := hits.Load(); n != 0 {
			t.Fatalf("%s: git made %d requests to the repository's promisor remote", tc.name, n)
		}
	}
	// The same diff under high-risk, the repository's choices honoured,
	// does ask the server: the refusal above is what kept it away.
	setPolicy(w, messages.PolicyHighRisk)
	w.env.WorkDir = filepath.Join(w.home, "promisor-promisor")
	w.call("git_diff", map[string]any{"commit": "HEAD~1"})
	if hits.Load() == 0 {
		t.Fatal("under high-risk the lazy fetch did not happen: the test proves nothing")
	}
}
