package actors_test

import (
	"testing"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
)

func TestUniqueCallIDs(t *testing.T) {
	calls := func(ids ...string) []messages.ToolCall {
		out := make([]messages.ToolCall, len(ids))
		for i, id := range ids {
			out[i] = messages.ToolCall{ID: id, Name: "t"}
		}
		return out
	}
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "a", "a"}, []string{"a", "a_2", "a_3"}},
		{[]string{"a", "a", "a_2"}, []string{"a", "a_3", "a_2"}}, // never takes an id a later call has
		{[]string{"", "", "call_1"}, []string{"call_0", "call_1_2", "call_1"}},
	} {
		got := actors.UniqueCallIDs(calls(tc.in...))
		seen := map[string]bool{}
		for i, c := range got {
			if c.ID != tc.want[i] || seen[c.ID] {
				t.Errorf("UniqueCallIDs(%q) = %v, want %q", tc.in, got, tc.want)
				break
			}
			seen[c.ID] = true
		}
	}
}
