package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/config"
)

// NewTrustCmd builds `jazz trust [DIR]` and `jazz trust --list`: a
// project's ./.jazz/config.json applies in full only in a directory the
// user trusts, and only as long as the file is the one they trusted.
func NewTrustCmd(d Deps) *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust DIR's .jazz/config.json and .agents/mcp.json as they are now (default: the working directory)",
		Long: "A project config (DIR/.jazz/config.json) that is not trusted may only narrow your own config:\n" +
			"keys that would widen what is approved or send keys and data elsewhere are ignored.\n" +
			"A project's MCP servers (DIR/.agents/mcp.json) start programs, so they apply only when trusted.\n" +
			"Trusting records the directory (its path, owner, device and inode) and the files' SHA-256 in\n" +
			"JAZZ_HOME; any change to a file, a directory made again at that path, or one that another user\n" +
			"owns or group or others can write makes it untrusted again until you review it and trust it once more.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := trustStore(d)
			if err != nil {
				return err
			}
			if list {
				if len(args) > 0 {
					return fmt.Errorf("jazz trust --list takes no directory")
				}
				recs, err := store.List(cmd.Context())
				if err != nil {
					return err
				}
				if len(recs) == 0 {
					fmt.Fprintln(d.IO.ErrOut, "No trusted project directories.")
				}
				for _, r := range recs {
					fmt.Fprintf(d.IO.Out, "%s\t%s\t%s\t%s\n", shown(store.Status(cmd.Context(), r)), shown(r.Dir), r.SHA256[:min(12, len(r.SHA256))], r.TrustedAt)
				}
				return nil
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			rec, widening, err := store.Trust(cmd.Context(), dir, d.Cwd)
			if err != nil {
				return fmt.Errorf("trust %s: %w", shown(dir), err)
			}
			what := "it sets nothing an untrusted file could not"
			if len(widening) > 0 {
				what = "including " + strings.Join(widening, ", ")
			}
			var files []string
			if rec.SHA256 != "" {
				files = append(files, fmt.Sprintf(".jazz/config.json (sha256 %s)", rec.SHA256[:12]))
			}
			if rec.MCPSHA256 != "" {
				files = append(files, fmt.Sprintf("%s (sha256 %s)", config.MCPFile, rec.MCPSHA256[:12]))
			}
			fmt.Fprintf(d.IO.Out, "Trusted %s: its %s now applies in full, %s.\n", shown(rec.Dir), strings.Join(files, " and "), what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list trusted directories and whether their config is still the trusted one")
	return cmd
}

// NewUntrustCmd builds `jazz untrust [DIR]`.
func NewUntrustCmd(d Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "untrust [DIR]",
		Short: "Stop trusting DIR's .jazz/config.json (default: the working directory)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := trustStore(d)
			if err != nil {
				return err
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			found, err := store.Untrust(cmd.Context(), dir, d.Cwd)
			if err != nil {
				return fmt.Errorf("untrust %s: %w", shown(dir), err)
			}
			if !found {
				return fmt.Errorf("%s is not a trusted project directory (see jazz trust --list)", shown(config.ResolveDir(dir, d.Cwd)))
			}
			fmt.Fprintf(d.IO.Out, "Untrusted %s.\n", shown(config.ResolveDir(dir, d.Cwd)))
			return nil
		},
	}
}

func trustStore(d Deps) (*config.TrustStore, error) {
	home, err := config.Home(d.Getenv, d.Cwd)
	if err != nil {
		return nil, err
	}
	return &config.TrustStore{Home: home}, nil
}

// shown quotes a string from the file system when it holds anything a
// terminal would not print as is.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
