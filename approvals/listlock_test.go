package approvals_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/approvals"
)

// TestIdentityListUpdatesAreNotLost: adds and removes run at once, as two
// `jazz bus` commands may; every add not removed is kept and every
// removal stays removed (a lost one would undo a revocation unseen).
func TestIdentityListUpdatesAreNotLost(t *testing.T) {
	home := t.TempDir()
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	key := func() string {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		return pub
	}
	const n = 12
	for i := range n {
		if _, err := approvals.AddApproverKey(home, fmt.Sprintf("old-%d", i), key(), "", false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		k := key()
		go func() {
			defer wg.Done()
			if _, err := approvals.AddApproverKey(home, fmt.Sprintf("new-%d", i), k, "", false); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := approvals.RemoveApprover(home, fmt.Sprintf("old-%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, err := approvals.ReadApproversFile(home)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, a := range list {
		have[a.Name] = true
	}
	for i := range n {
		if !have[fmt.Sprintf("new-%d", i)] {
			t.Errorf("new-%d was added and is gone", i)
		}
		if have[fmt.Sprintf("old-%d", i)] {
			t.Errorf("old-%d was removed and is back", i)
		}
	}
}
