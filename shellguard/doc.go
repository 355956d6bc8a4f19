// Package shellguard owns the static shell-command policy of execute_command
// (spec shell-safety.md and tools-and-approval.md §6–§7): the built-in
// denylist with its mktemp/$TMPDIR carve-out, the run-time check of expanded
// argv, command-allowlist keys and the compound allowlist rule over a real
// shell parse, a conservative static read-only classifier, and the sanitized
// environment of child processes.
//
// Everything here is a pure function of its arguments. The denylist is not a
// sandbox: it catches a confused model's accidents. Approval is the control
// and a container the boundary; LIMITATIONS.md lists what gets through.
package shellguard
