package app

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/webtools"
)

// TestBuiltinGroups: each group's names are exactly the tools it builds,
// in order, and together they are BuiltinRegistry; a tool added to a
// package without its name here fails.
func TestBuiltinGroups(t *testing.T) {
	var all []string
	for g := range builtinGroups {
		var built []string
		for _, tl := range buildGroup(g, webtools.Options{}) {
			built = append(built, tl.Name)
		}
		if want := strings.Fields(groupNames(g)); !slices.Equal(built, want) {
			t.Errorf("group %d builds %v, its names say %v", g, built, want)
		}
		all = append(all, built...)
	}
	reg, err := BuiltinRegistry(RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg.Names(), all) {
		t.Errorf("BuiltinRegistry = %v, the groups = %v", reg.Names(), all)
	}
	for _, n := range all {
		if !isBuiltin(n) {
			t.Errorf("isBuiltin(%q) = false", n)
		}
	}
	for _, n := range []string{"", "read", "read_file ", "ask_user", "spawn_subagent", "mcp_x", "git_status git_log"} {
		if isBuiltin(n) {
			t.Errorf("isBuiltin(%q) = true", n)
		}
	}
}

// TestAgentBuiltinsHoldWhatTheFullRegistryGives: for any list, the
// agent's registry (only the groups it names) and BuiltinRegistry agree
// on every listed name, on the subset an agent gets, and in order.
func TestAgentBuiltinsHoldWhatTheFullRegistryGives(t *testing.T) {
	full, err := BuiltinRegistry(RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lists := [][]string{
		nil,
		{},
		{"read_file", "ls"},
		{" read_file ", "nope", "", "mcp_srv_tool"},
		{"write_file"},
		{"execute_write_file"}, // a hidden twin: listed, never held
		{"git_commit", "web_fetch", "get_time", "execute_command"},
		strings.Fields(groupNames(groupGit)),
		full.Names(),
	}
	for _, list := range lists {
		got, err := agentBuiltins(RunOptions{}, list)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range list {
			n = strings.TrimSpace(n)
			ft, fok := full.Lookup(n)
			gt, gok := got.Lookup(n)
			if fok != gok || fok && (ft.Name != gt.Name || ft.Hidden != gt.Hidden || ft.Twin != gt.Twin ||
				ft.Level != gt.Level || string(ft.Schema) != string(gt.Schema) || ft.Description != gt.Description) {
				t.Errorf("list %q: %q is %v in the agent's registry, %v in the full one", list, n, gok, fok)
			}
		}
		if a, b := specs(full.Subset(list)), specs(got.Subset(list)); !reflect.DeepEqual(a, b) {
			t.Errorf("list %q: subsets differ:\n full  %v\n agent %v", list, a, b)
		}
		if a, b := full.Subset(list).Names(), got.Subset(list).Names(); !slices.Equal(a, b) {
			t.Errorf("list %q: subset order %v, want %v", list, b, a)
		}
	}
	none, err := agentBuiltins(RunOptions{}, []string{"nope"})
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Names()) != 0 {
		t.Errorf("an agent listing no built-in got %v", none.Names())
	}
}

// TestAgentBuiltinsRefuseABadNetAllow: JAZZ_NET_ALLOW is checked for
// every run, as when all tools were built, web tools listed or not.
func TestAgentBuiltinsRefuseABadNetAllow(t *testing.T) {
	o := RunOptions{Getenv: func(k string) string {
		if k == "JAZZ_NET_ALLOW" {
			return "not-a-range"
		}
		return ""
	}}
	_, fullErr := BuiltinRegistry(o)
	_, agentErr := agentBuiltins(o, []string{"read_file"})
	if fullErr == nil || agentErr == nil || fullErr.Error() != agentErr.Error() {
		t.Errorf("errors: full %v, agent %v", fullErr, agentErr)
	}
}

func specs(r *tools.Registry) []string {
	var out []string
	for _, tl := range r.Visible() {
		s := tl.Spec()
		out = append(out, s.Name+"|"+s.Description+"|"+string(s.Parameters))
	}
	return out
}
