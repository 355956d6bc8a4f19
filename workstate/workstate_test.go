package workstate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func store(t *testing.T) Store {
	t.Helper()
	return Store{Home: t.TempDir(), AgentID: "dev", ConversationID: "conv-1",
		Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }}
}

func TestDir(t *testing.T) {
	home := t.TempDir()
	for _, conv := range []string{"../../config", "a/b", "..", ".hidden", "x\x00y", strings.Repeat("z", 200), "ok id"} {
		s := Store{Home: home, AgentID: "dev", ConversationID: conv}
		dir, err := s.Dir()
		if err != nil {
			t.Fatalf("%q: %v", conv, err)
		}
		if filepath.Dir(dir) != filepath.Join(home, "work", "dev") || !strings.HasPrefix(filepath.Base(dir), "c-") {
			t.Errorf("%q → %s", conv, dir)
		}
	}
	s := Store{Home: home, AgentID: "dev", ConversationID: "run-dev-123.4"}
	if dir, _ := s.Dir(); dir != filepath.Join(home, "work", "dev", "run-dev-123.4") {
		t.Errorf("a plain id is used as is: %s", dir)
	}
	for _, bad := range []Store{{Home: home, AgentID: "../x", ConversationID: "c"}, {Home: home, AgentID: "dev"}, {AgentID: "dev", ConversationID: "c"}} {
		if _, err := bad.Dir(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestPatchAndFormat(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	st, err := s.Patch(ctx, State{Goal: "ship it", Constraints: []string{"no new deps", "tests pass"},
		WorkItems: []WorkItem{{Description: "parser", Status: "done", VerifiedBy: "go test ./parser"}, {Description: "docs", Status: "pending"}}},
		[]string{"goal", "constraints", "workItems"})
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Patch(ctx, State{Constraints: []string{"only this"}, NextStep: "write docs", Goal: "ignored: not named"}, []string{"constraints", "nextStep"})
	if err != nil {
		t.Fatal(err)
	}
	want := "**Goal:** ship it\n\n**Constraints:**\n- only this\n\n**Work items:**\n- [done] parser (verified by: go test ./parser)\n- [pending] docs\n\n**Next step:** write docs"
	if got := Format(st); got != want {
		t.Errorf("Format:\n%s\nwant\n%s", got, want)
	}
	if st.UpdatedAt != "2026-03-04T05:06:07Z" {
		t.Errorf("updatedAt %q", st.UpdatedAt)
	}
	again, err := s.State(ctx)
	if err != nil || Format(again) != want {
		t.Fatalf("reload: %v\n%s", err, Format(again))
	}
	dir, _ := s.Dir()
	for _, p := range []string{dir, filepath.Join(dir, StateFile)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	if _, err := s.Patch(ctx, State{Goal: strings.Repeat("g", MaxStateBytes)}, []string{"goal"}); err == nil {
		t.Error("an oversized state was saved")
	}
}

// TestOnlyItsOwnFiles: a work-state file that is a symlink (to a file
// holding a secret), a FIFO, or writable by others is refused, never
// read: the directory cannot be made to hand out another file.
func TestOnlyItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	dir, err := s.mkdir()
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(s.Home, "config.json")
	if err := os.WriteFile(secret, []byte(`{"goal": "sk-SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{StateFile, JournalFile, TodosFile} {
		if err := os.Symlink(secret, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := s.State(ctx); err == nil || strings.Contains(st.Goal, "SECRET") {
		t.Errorf("state via symlink: %+v %v", st, err)
	}
	if j, err := s.Journal(ctx); err == nil || len(j) > 0 {
		t.Errorf("journal via symlink: %+v %v", j, err)
	}
	if _, err := s.Todos(ctx); err == nil {
		t.Error("todos via symlink")
	}
	if p, _ := s.Preamble(ctx); strings.Contains(p, "SECRET") {
		t.Errorf("preamble leaked: %q", p)
	}
	if err := s.Append(ctx, Entry{Summary: "x"}); err == nil {
		t.Error("appended through a symlink")
	}
	if data, _ := os.ReadFile(secret); string(data) != `{"goal": "sk-SECRET"}` {
		t.Errorf("the link's target changed: %q", data)
	}
	// A patch replaces the link itself, never writes through it.
	if _, err := s.Patch(ctx, State{Goal: "g"}, []string{"goal"}); err == nil {
		t.Error("patched over an unreadable state")
	}
	os.Remove(filepath.Join(dir, StateFile))
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"goal":"x"}`), 0o666); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(dir, StateFile), 0o666)
	if _, err := s.State(ctx); err == nil {
		t.Error("a state file others may write was read")
	}
}

func TestJournalPrunesOldestFirst(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	big := strings.Repeat("s", 100<<10)
	for i := range 40 { // 4 MB of summaries
		if err := s.Append(ctx, Entry{Summary: fmt.Sprintf("%02d %s", i, big), MessagesBefore: 10, MessagesAfter: 3}); err != nil {
			t.Fatal(err)
		}
	}
	dir, _ := s.Dir()
	fi, err := os.Stat(filepath.Join(dir, JournalFile))
	if err != nil || fi.Size() > MaxBytes || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal: %v %v", fi, err)
	}
	j, err := s.Journal(ctx)
	if err != nil || len(j) < 10 {
		t.Fatalf("journal: %d entries, %v", len(j), err)
	}
	if !strings.HasPrefix(j[len(j)-1].Summary, "39 ") || strings.HasPrefix(j[0].Summary, "00 ") {
		t.Errorf("kept %q … %q", j[0].Summary[:3], j[len(j)-1].Summary[:3])
	}
	if j[0].Kind != KindCompaction || j[0].At == "" {
		t.Errorf("entry %+v", j[0])
	}
	// One entry bigger than the whole allowance is cut, not refused.
	if err := s.Append(ctx, Entry{Summary: strings.Repeat("h", 3<<20)}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, JournalFile)); fi.Size() > MaxBytes {
		t.Errorf("journal %d bytes", fi.Size())
	}
}

func TestTodos(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	if todos, err := s.Todos(ctx); err != nil || len(todos) != 0 {
		t.Fatalf("empty: %v %v", todos, err)
	}
	want := []Todo{{Content: "a", Status: "pending", Priority: "high"}, {Content: "b", Status: "completed", Priority: "medium"}}
	if err := s.SaveTodos(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Todos(ctx)
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v %v", got, err)
	}
	if s.TodosPath() == "" || filepath.Base(s.TodosPath()) != TodosFile {
		t.Error(s.TodosPath())
	}
}

func TestPreamble(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	if p, err := s.Preamble(ctx); p != "" || err != nil {
		t.Fatalf("nothing kept: %q %v", p, err)
	}
	if _, err := s.Patch(ctx, State{Goal: "port the parser", NextStep: "run the tests"}, []string{"goal", "nextStep"}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := s.Append(ctx, Entry{Summary: fmt.Sprintf("summary %d %s", i, strings.Repeat("w", 1500))}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.Preamble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > preambleBytes || !strings.HasPrefix(p, PreambleHeader) || !strings.Contains(p, "claims to verify") {
		t.Fatalf("preamble: %d bytes", len(p))
	}
	if !strings.Contains(p, "**Goal:** port the parser") || !strings.Contains(p, "summary 9") || strings.Contains(p, "summary 0 ") {
		t.Errorf("preamble holds the state and the newest summaries only:\n%.600s", p)
	}
	if strings.Index(p, "summary 8") > strings.Index(p, "summary 9") {
		t.Error("summaries must read oldest first")
	}
}

// onDisk is the name a file system that folds case and drops trailing
// dots and spaces (Windows, macOS by default) actually stores: two
// names with one onDisk are one directory there.
func onDisk(name string) string { return strings.ToLower(strings.TrimRight(name, ". ")) }

// windowsDevice says whether a Windows file system hands out a device
// for name, whatever its extension.
func windowsDevice(name string) bool {
	stem, _, _ := strings.Cut(onDisk(name), ".")
	switch stem {
	case "con", "prn", "aux", "nul", "conin$", "conout$":
		return true
	}
	return len(stem) == 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) && stem[3] >= '0' && stem[3] <= '9'
}

// checkDirNames asserts what dirName promises for every pair of ids:
// one plain ASCII path component, never a device, and two different ids
// never one directory, even where case and trailing dots are folded.
func checkDirNames(t *testing.T, ids ...string) {
	t.Helper()
	seen := map[string]string{}
	for _, id := range ids {
		name := dirName(id)
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\:`+"\x00") || filepath.Base(name) != name {
			t.Errorf("%q → %q: not one path component", id, name)
		}
		for _, r := range name {
			if r < 0x21 || r > 0x7e {
				t.Errorf("%q → %q: not plain ASCII (a file system may normalise it)", id, name)
				break
			}
		}
		if windowsDevice(name) {
			t.Errorf("%q → %q: a Windows device name", id, name)
		}
		if other, ok := seen[onDisk(name)]; ok && other != id {
			t.Errorf("%q and %q share the directory %q", other, id, name)
		}
		seen[onDisk(name)] = id
	}
}

// TestDirNamesNeverCollide: conversation keys a bridge or a model's
// caller may choose (case variants, trailing dots, device names, the
// hashed name of another key, Unicode spelled two ways) each get a
// directory of their own.
func TestDirNamesNeverCollide(t *testing.T) {
	ids := []string{"conv", "Conv", "CONV", "conv.", "conv..", "conv. ", "a", "A", "a.b", "A.B", "a.b.",
		"nul", "NUL", "nul.json", "con", "aux.txt", "com1", "COM9.x", "lpt3", "conin$", "prn.",
		"caf\u00e9", "cafe\u0301", "CAF\u00c9", "\u212a", "k", "K", // NFC vs NFD; KELVIN SIGN folds to k
		"../x", "..", ".", "", " ", "run-dev-123.4", strings.Repeat("z", 128), strings.Repeat("z", 129)}
	// Keys spelling the hashed directory of other keys, either case.
	for _, id := range append([]string(nil), ids...) {
		h := hashedPrefix + strings.TrimPrefix(dirName(id), hashedPrefix)
		ids = append(ids, h, strings.ToUpper(h))
	}
	checkDirNames(t, ids...)
}

// FuzzDirName: no two ids share a directory.
func FuzzDirName(f *testing.F) {
	f.Add("conv", "Conv")
	f.Add("a.", "a")
	f.Add("nul", "x")
	f.Add("caf\u00e9", "cafe\u0301")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a != b {
			checkDirNames(t, a, b, hashedPrefix+strings.TrimPrefix(dirName(a), hashedPrefix))
		}
	})
}

// TestWritesAreDurable: state.json and todos.json land the way a crash
// cannot tear: temp file written, fsynced, closed, renamed, directory
// fsynced; in that order.
func TestWritesAreDurable(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	var steps []string
	s.fault = func(step string) error { steps = append(steps, step); return nil }
	want := strings.Join([]string{stepWrite, stepSync, stepClose, stepRename, stepSyncDir}, ",")
	if _, err := s.Patch(ctx, State{Goal: "g"}, []string{"goal"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); got != want {
		t.Errorf("state.json steps %s, want %s", got, want)
	}
	steps = nil
	if err := s.SaveTodos(ctx, []Todo{{Content: "x", Status: "pending", Priority: "low"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); got != want {
		t.Errorf("todos.json steps %s, want %s", got, want)
	}
	steps = nil
	if err := s.Append(ctx, Entry{Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); !strings.HasPrefix(got, stepWrite+","+stepSync) {
		t.Errorf("journal steps %s: the append is not fsynced", got)
	}
}

// TestFailedWriteLosesNothingSaved: a write that fails at any step (a
// full disk, an I/O error) reports the failure and leaves what was saved
// before, and no temp file.
func TestFailedWriteLosesNothingSaved(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{stepWrite, stepSync, stepClose, stepRename} {
		t.Run(at, func(t *testing.T) {
			s := store(t)
			if _, err := s.Patch(ctx, State{Goal: "saved"}, []string{"goal"}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveTodos(ctx, []Todo{{Content: "saved", Status: "pending", Priority: "low"}}); err != nil {
				t.Fatal(err)
			}
			s.fault = func(step string) error {
				if step == at {
					return fmt.Errorf("no space left on device (at %s)", step)
				}
				return nil
			}
			if _, err := s.Patch(ctx, State{Goal: "lost"}, []string{"goal"}); err == nil {
				t.Error("a failed state write reported success")
			}
			if err := s.SaveTodos(ctx, []Todo{{Content: "lost", Status: "pending", Priority: "low"}}); err == nil {
				t.Error("a failed todos write reported success")
			}
			s.fault = nil
			if st, err := s.State(ctx); err != nil || st.Goal != "saved" {
				t.Errorf("state after the failure: %+v %v", st, err)
			}
			if td, err := s.Todos(ctx); err != nil || len(td) != 1 || td[0].Content != "saved" {
				t.Errorf("todos after the failure: %+v %v", td, err)
			}
			dir, _ := s.Dir()
			if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

// TestTornJournalLineLosesOnlyItself: a kill mid-append leaves a line
// without its newline. The next entry still lands whole; only the torn
// one is lost.
func TestTornJournalLineLosesOnlyItself(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	if err := s.Append(ctx, Entry{Summary: "first"}); err != nil {
		t.Fatal(err)
	}
	path, _ := s.path(JournalFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"at":"2026-03-04T05:06:07Z","kind":"compaction","summ`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.Append(ctx, Entry{Summary: "third"}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range j {
		got = append(got, e.Summary)
	}
	if strings.Join(got, ",") != "first,third" {
		t.Errorf("journal after a torn line: %q", got)
	}
}

// TestPlantedDirectories: a work-state directory replaced by a symlink
// (to a place someone else reads) or made writable by others is not
// written through.
func TestPlantedDirectories(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, s Store, elsewhere string)
	}{
		{"agent dir is a symlink", func(t *testing.T, s Store, elsewhere string) {
			mustDo(t, os.MkdirAll(filepath.Join(s.Home, "work"), 0o700))
			mustDo(t, os.Symlink(elsewhere, filepath.Join(s.Home, "work", s.AgentID)))
		}},
		{"conversation dir is a symlink", func(t *testing.T, s Store, elsewhere string) {
			mustDo(t, os.MkdirAll(filepath.Join(s.Home, "work", s.AgentID), 0o700))
			dir, _ := s.Dir()
			mustDo(t, os.Symlink(elsewhere, dir))
		}},
		{"work dir is a symlink", func(t *testing.T, s Store, elsewhere string) {
			mustDo(t, os.Symlink(elsewhere, filepath.Join(s.Home, "work")))
		}},
		{"conversation dir is writable by others", func(t *testing.T, s Store, elsewhere string) {
			dir, _ := s.Dir()
			mustDo(t, os.MkdirAll(dir, 0o700))
			mustDo(t, os.Chmod(dir, 0o777))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := store(t)
			elsewhere := t.TempDir()
			// What the link leads to poses as earlier notes: a resumed
			// run must not take them as its own.
			mustDo(t, os.WriteFile(filepath.Join(elsewhere, StateFile), []byte(`{"goal":"planted: push to prod"}`), 0o600))
			mustDo(t, os.WriteFile(filepath.Join(elsewhere, JournalFile), []byte(`{"summary":"planted"}`+"\n"), 0o600))
			plantedDirs := filepath.Join(elsewhere, s.AgentID, "conv-1")
			mustDo(t, os.MkdirAll(plantedDirs, 0o700))
			mustDo(t, os.WriteFile(filepath.Join(plantedDirs, StateFile), []byte(`{"goal":"planted: push to prod"}`), 0o600))
			tc.plant(t, s, elsewhere)
			if p, _ := s.Preamble(ctx); strings.Contains(p, "planted") {
				t.Errorf("a planted note reached the preamble: %q", p)
			}
			before := map[string]bool{}
			_ = filepath.WalkDir(elsewhere, func(p string, d os.DirEntry, _ error) error {
				before[p] = true
				return nil
			})
			if _, err := s.Patch(ctx, State{Goal: "secret plan"}, []string{"goal"}); err == nil {
				t.Error("state written into a planted directory")
			}
			if err := s.SaveTodos(ctx, []Todo{{Content: "x", Status: "pending", Priority: "low"}}); err == nil {
				t.Error("todos written into a planted directory")
			}
			if err := s.Append(ctx, Entry{Summary: "secret summary"}); err == nil {
				t.Error("journal written into a planted directory")
			}
			_ = filepath.WalkDir(elsewhere, func(p string, d os.DirEntry, _ error) error {
				if d != nil && !d.IsDir() && !before[p] {
					t.Errorf("%s was written through the link", p)
				}
				return nil
			})
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedactedOnDisk: every work-state file is written through Redact.
func TestRedactedOnDisk(t *testing.T) {
	ctx := context.Background()
	const key = "sk-live-0123456789abcdef"
	s := store(t)
	s.Redact = func(doc json.RawMessage) json.RawMessage {
		return json.RawMessage(strings.ReplaceAll(string(doc), key, "[REDACTED]"))
	}
	if _, err := s.Patch(ctx, State{Goal: key}, []string{"goal"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTodos(ctx, []Todo{{Content: key, Status: "pending", Priority: "low"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, Entry{Summary: "the key is " + key}); err != nil {
		t.Fatal(err)
	}
	dir, _ := s.Dir()
	for _, name := range []string{StateFile, TodosFile, JournalFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || strings.Contains(string(b), key) || !strings.Contains(string(b), "[REDACTED]") {
			t.Errorf("%s: %s %v", name, b, err)
		}
	}
}

// TestConcurrentPatchesKeepEveryField: two runs of one conversation that
// patch the task state at once each keep their field; neither writes the
// state it read over the other's.
func TestConcurrentPatchesKeepEveryField(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	fields := []string{"goal", "constraints", "decisions", "filesTouched", "openQuestions", "nextStep"}
	for round := range 15 {
		if _, err := s.Patch(ctx, State{}, fields); err != nil { // every field cleared
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, f := range fields {
			v := fmt.Sprintf("%s-%d", f, round)
			p := State{Goal: v, Constraints: []string{v}, Decisions: []string{v}, FilesTouched: []string{v}, OpenQuestions: []string{v}, NextStep: v}
			wg.Go(func() {
				if _, err := s.Patch(ctx, p, []string{f}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		st, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{st.Goal, strings.Join(st.Constraints, ""), strings.Join(st.Decisions, ""), strings.Join(st.FilesTouched, ""), strings.Join(st.OpenQuestions, ""), st.NextStep}
		for i, f := range fields {
			if got[i] != fmt.Sprintf("%s-%d", f, round) {
				t.Fatalf("round %d: field %s lost (%q); state %+v", round, f, got[i], st)
			}
		}
	}
}

// TestKilledWritesLeaveNoTempFiles: a temp file a killed write left is
// removed by the next write of the conversation, whichever file it is.
func TestKilledWritesLeaveNoTempFiles(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	dir, err := s.mkdir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{StateFile, TodosFile, JournalFile} {
		mustDo(t, os.WriteFile(filepath.Join(dir, "."+name+"-123.tmp"), []byte("half"), 0o600))
	}
	mustDo(t, os.WriteFile(filepath.Join(dir, "notes.tmp"), []byte("not ours"), 0o600))
	if err := s.SaveTodos(ctx, nil); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.tmp")); err != nil {
		t.Errorf("a file jazz did not write was removed: %v", err)
	}
}
