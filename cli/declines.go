package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/messages"
)

// declineNotice is the notice after a run whose gate declined calls: each
// declined tool by name, who declined it, and, for what nobody could
// approve, the options that would allow it next time.
func declineNotice(agent string, declined []messages.AgentCall, levelOf func(tool string) string) string {
	type group struct {
		why   string
		names []string
		count map[string]int
	}
	groups := map[string]*group{}
	var order []string
	for _, c := range declined {
		key := declineKind(c.DecidedBy)
		g := groups[key]
		if g == nil {
			g = &group{why: key, count: map[string]int{}}
			groups[key] = g
			order = append(order, key)
		}
		if g.count[c.Name] == 0 {
			g.names = append(g.names, c.Name)
		}
		g.count[c.Name]++
	}
	n := len(declined)
	calls := "calls"
	if n == 1 {
		calls = "call"
	}
	parts := []string{fmt.Sprintf("%s: the gate declined %d tool %s", agent, n, calls)}
	for _, key := range order {
		g := groups[key]
		var listed []string
		for _, name := range g.names {
			if k := g.count[name]; k > 1 {
				listed = append(listed, fmt.Sprintf("%s ×%d", name, k))
			} else {
				listed = append(listed, name)
			}
		}
		part := strings.Join(listed, ", ") + " (" + g.why + ")"
		if key == kindUnattended {
			part += ". " + howToAllow(g.names, levelOf)
		}
		parts = append(parts, part)
	}
	return parts[0] + ": " + strings.Join(parts[1:], "; ")
}

// Who declined, as the notice words it.
const (
	kindUnattended = "unattended, so nobody could approve"
	kindDenylist   = "refused by the command denylist; no option allows it"
	kindPerson     = "declined by the person asked"
	kindCancelled  = "not decided before the run stopped"
	kindOther      = "declined"
)

func declineKind(by string) string {
	switch {
	case by == messages.DecidedByNobody:
		return kindUnattended
	case by == messages.DecidedByDenylist:
		return kindDenylist
	case by == messages.DecidedByHuman || by == messages.DecidedByBridge || strings.HasPrefix(by, messages.DecidedByRemote):
		return kindPerson
	case by == messages.DecidedByCancel:
		return kindCancelled
	}
	return kindOther
}

// howToAllow names the options that approve these tools in a run nobody
// attends: the lowest policy covering them, the per-tool allowlist, and
// for commands the config's allowlist (the safer choice: it admits the
// commands named, not every command).
func howToAllow(names []string, levelOf func(string) string) string {
	policy := messages.PolicyLowRisk
	var tools []string
	commands := false
	for _, n := range names {
		if n == "execute_command" {
			commands = true
		} else {
			tools = append(tools, n)
		}
		// Commands (tier unknown), MCP and custom tools need high-risk.
		if lvl := levelOf(n); lvl != messages.LevelLowRisk && lvl != messages.LevelReadOnly {
			policy = messages.PolicyHighRisk
		}
	}
	sort.Strings(tools)
	opts := []string{"--approval-policy " + policy}
	if len(tools) > 0 {
		opts = append(opts, "--auto-approve-tools "+strings.Join(tools, ","))
	}
	if commands {
		opts = append(opts, `an "autoApprovedCommands" entry for the command in JAZZ_HOME/config.json`)
	}
	it := "it"
	if len(names) > 1 {
		it = "them"
	}
	return "To allow " + it + ": " + strings.Join(opts, ", or ")
}

// toolLevels is the risk tier of each tool jazz defines, for the decline
// notice; tools it does not define (MCP, custom) count as high-risk.
func toolLevels() func(string) string {
	reg, err := app.ReferenceRegistry()
	return func(name string) string {
		if err != nil {
			return messages.LevelHighRisk
		}
		if t, ok := reg.Lookup(name); ok {
			return t.Level
		}
		return messages.LevelHighRisk
	}
}
