//go:build !unix

// Package shellrun runs approved commands in child processes; it needs
// Unix (sessions, process groups, resource limits), and elsewhere only
// ProtectSelf exists, so jazz builds without execute_command.
package shellrun

// ProtectSelf does nothing where there is no Unix.
func ProtectSelf() error { return nil }
