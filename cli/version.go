package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// BuildVersion describes the running binary from the build information
// the Go toolchain stamps into it: the module version (a tag, a
// pseudo-version, or "(devel)"), the VCS revision and commit time, and
// whether the working tree had uncommitted changes. Nothing is set by
// hand at release time, so it cannot go stale.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "jazz (no build information) " + runtime.Version()
	}
	return formatVersion(info)
}

// formatVersion renders info as one line:
// `jazz <version> (<revision> <time>[, modified]) <go version>`.
func formatVersion(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var vcs []string
	if rev != "" {
		vcs = append(vcs, "revision "+rev)
	}
	if when != "" {
		vcs = append(vcs, when)
	}
	if modified {
		vcs = append(vcs, "modified")
	}
	out := "jazz " + version
	if len(vcs) > 0 {
		out += " (" + strings.Join(vcs, ", ") + ")"
	} else {
		out += " (no VCS information)"
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return out + " " + goVersion
}

// NewVersionCmd builds `jazz version`, the same line as `jazz --version`.
func NewVersionCmd(d Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print jazz's version, VCS revision and Go version on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(d.IO.Out, BuildVersion())
			return err
		},
	}
}
