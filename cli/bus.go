package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// checkedHome is JAZZ_HOME, checked to be a directory jazz may use.
func checkedHome(d Deps) (string, error) {
	home, err := config.Home(d.Getenv, d.Cwd)
	if err != nil {
		return "", err
	}
	if err := config.CheckHome(home); err != nil {
		return "", err
	}
	return home, nil
}

// NewBusCmd builds `jazz bus`: the shared NATS server and its identities.
func NewBusCmd(d Deps) *cobra.Command {
	cmd := &cobra.Command{Use: "bus", Short: "Run the NATS server runs and approvers share, and manage who may use it"}
	cmd.AddCommand(newBusServeCmd(d), newBusAddApproverCmd(d), newBusRemoveApproverCmd(d), newBusInitCmd(d), newBusAddWorkerCmd(d), newBusRemoveWorkerCmd(d), newBusClusterCmd(d))
	return cmd
}

// newBusInitCmd creates the approvals bucket, the audit and policy streams on an
// external server, with an identity allowed to create streams; runners
// and approvers are not.
func newBusInitCmd(d Deps) *cobra.Command {
	var o busclient.Options
	var replicas int
	cmd := &cobra.Command{
		Use:   "init --nats-url URL (--creds FILE | --nkey FILE)",
		Short: "Create the approvals bucket, audit and policy streams and worker-pool streams on an external NATS deployment",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o = o.WithEnv(d.Getenv)
			o.Name = "jazz-bus-init"
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			nc, err := busclient.Connect(ctx, o)
			if err != nil {
				return err
			}
			defer nc.CloseNow()
			if _, err := approvals.OpenStore(ctx, nc, true); err != nil {
				return err
			}
			if err := approvals.Harden(ctx, nc); err != nil {
				return err
			}
			if err := workstore.Ensure(ctx, nc, replicas); err != nil {
				return err
			}
			// Workers only bind their pool's consumer: it is made here,
			// for the pools JAZZ_HOME's workers.json lists (and default).
			var workers []busserver.Worker
			if home, herr := checkedHome(d); herr == nil {
				if workers, err = busserver.ReadWorkersFile(home); err != nil {
					return err
				}
			}
			pools := busserver.PoolLeases(workers)
			if err := workstore.EnsurePools(ctx, nc, pools); err != nil {
				return err
			}
			fmt.Fprintf(d.IO.ErrOut, "bucket %s and streams %s, %s are ready on %s\n", approvals.Bucket, approvals.AuditStream, approvals.PolicyStream, busclient.Redact(o.URL))
			fmt.Fprintf(d.IO.ErrOut, "worker pools: streams %s, %s and bucket %s (%d replicas), consumers of %d pools\n", workstore.TaskStream, workstore.OutStream, workstore.Bucket, replicas, len(pools))
			return nil
		},
	}
	f := cmd.Flags()
	addBusFlags(f, &o, busFlagText{
		URL:   "the deployment's URL",
		Creds: "credentials allowed to create streams",
		Nkey:  "nkey seed allowed to create streams",
	})
	f.IntVar(&replicas, "replicas", 1, "copies of the worker-pool streams (3 on a cluster)")
	return cmd
}

func newBusServeCmd(d Deps) *cobra.Command {
	var o busserver.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the bus: NATS with JetStream, nkey identities per role, TLS off loopback",
		Long: `Run the NATS server a team's runs and approvers share, until interrupted.

On first start it creates one nkey identity per role in JAZZ_HOME/bus (mode 0600):
runner (runs: publish requests, read decisions), observer (read only) and worker.
People who decide are added with 'jazz bus add-approver'. It listens on
127.0.0.1 by default; any other address needs TLS: your --tls-cert/--tls-key, or a
generated self-signed certificate whose fingerprint clients pin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			o.Home = home
			if debug, _ := cmd.Flags().GetBool("debug"); debug {
				o.Logf = func(f string, a ...any) { fmt.Fprintf(d.IO.ErrOut, "bus: "+f+"\n", a...) }
			}
			s, err := busserver.Start(cmd.Context(), o)
			if err != nil {
				return err
			}
			defer s.Close()
			info := s.Info()
			if asJSON {
				b, _ := json.Marshal(info)
				fmt.Fprintln(d.IO.Out, string(b))
			} else {
				fmt.Fprintln(d.IO.Out, info.URL)
			}
			fmt.Fprintf(d.IO.ErrOut, "jazz bus listening on %s (store %s/bus/jetstream)\n", info.URL, home)
			if info.TLSPin != "" {
				fmt.Fprintf(d.IO.ErrOut, "TLS certificate %s\n  pin: %s\n", info.TLSCert, info.TLSPin)
			}
			fmt.Fprintf(d.IO.ErrOut, "runner identity: %s\n", busserver.RoleSeedPath(home, busserver.RoleRunner))
			list, _ := approvals.ReadApproversFile(home)
			if len(list) == 0 {
				fmt.Fprintln(d.IO.ErrOut, "no approvers yet: add one with `jazz bus add-approver NAME`")
			} else {
				fmt.Fprintf(d.IO.ErrOut, "%d approver(s); Ctrl-C stops the bus\n", len(list))
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Host, "host", "127.0.0.1", "address to listen on (anything but loopback requires TLS)")
	f.IntVar(&o.Port, "port", busserver.DefaultPort, "port to listen on")
	f.BoolVar(&o.TLS, "tls", false, "require TLS on loopback too")
	f.StringVar(&o.TLSCert, "tls-cert", "", "your server certificate (PEM); default: a generated self-signed one")
	f.StringVar(&o.TLSKey, "tls-key", "", "the key of --tls-cert (PEM)")
	f.BoolVar(&asJSON, "json", false, "print the connection info as JSON on stdout")
	return cmd
}

func newBusAddApproverCmd(d Deps) *cobra.Command {
	var maxTier, publicKey string
	var policy, printSeed, asJSON bool
	cmd := &cobra.Command{
		Use:   "add-approver NAME",
		Short: "Give a person an identity that may decide approvals (and, with --policy, change policy)",
		Long: `Create an nkey identity for a person and trust it to decide approvals up to --max-tier.

By default the seed is written to JAZZ_HOME/bus/approvers/NAME.nk (mode 0600). With
--print it goes to stdout instead, to hand to the person; with --public-key the person
keeps their own seed and only the public key is recorded. A running 'jazz bus serve'
picks the new approver up within a second.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !approvals.ValidName(name) {
				return fmt.Errorf("approver name %q: use 1-64 letters, digits, '.', '_' or '-'", name)
			}
			switch maxTier {
			case messages.LevelReadOnly, messages.LevelLowRisk, messages.LevelHighRisk:
			default:
				return fmt.Errorf("Invalid --max-tier %q. Expected read-only, low-risk, or high-risk.", maxTier)
			}
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			var a approvals.Approver
			var seed []byte
			if publicKey != "" {
				if !nkeys.IsValidPublicUserKey(publicKey) {
					return fmt.Errorf("--public-key %q is not an nkey user public key (U…)", publicKey)
				}
				a, err = approvals.AddApproverKey(home, name, publicKey, maxTier, policy)
			} else {
				a, seed, err = approvals.AddApprover(home, name, maxTier, policy)
			}
			if err != nil {
				return err
			}
			seedPath := ""
			switch {
			case seed != nil && printSeed:
			case seed != nil:
				seedPath = approvals.ApproverSeedPath(home, name)
				if err := approvals.WriteSecret(seedPath, append(seed, '\n')); err != nil {
					return err
				}
			}
			if asJSON {
				out := map[string]any{"name": a.Name, "publicKey": a.PublicKey, "maxTier": a.MaxTier, "policy": a.Policy}
				if seedPath != "" {
					out["seedFile"] = seedPath
				}
				if printSeed && seed != nil {
					out["seed"] = strings.TrimSpace(string(seed))
				}
				b, _ := json.Marshal(out)
				fmt.Fprintln(d.IO.Out, string(b))
				return nil
			}
			if printSeed && seed != nil {
				fmt.Fprintln(d.IO.Out, strings.TrimSpace(string(seed)))
				fmt.Fprintf(d.IO.ErrOut, "approver %s (%s, up to %s): the seed above is their secret; save it to a file with mode 0600 and pass it as --nkey\n", a.Name, a.PublicKey, a.MaxTier)
				return nil
			}
			fmt.Fprintln(d.IO.Out, a.PublicKey)
			if seedPath != "" {
				fmt.Fprintf(d.IO.ErrOut, "approver %s may decide up to %s; seed written to %s\n  decide with: jazz approvals watch --as %s\n", a.Name, a.MaxTier, seedPath, a.Name)
			} else {
				fmt.Fprintf(d.IO.ErrOut, "approver %s may decide up to %s with the key they hold\n", a.Name, a.MaxTier)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&maxTier, "max-tier", messages.LevelHighRisk, "highest risk tier this person may approve: read-only, low-risk or high-risk")
	f.BoolVar(&policy, "policy", false, "may also change a run's approval policy (never above the run's --max-remote-policy, nor above --max-tier)")
	f.BoolVar(&printSeed, "print", false, "print the seed on stdout instead of writing it to JAZZ_HOME")
	f.StringVar(&publicKey, "public-key", "", "record this public key; the person keeps their own seed")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newBusRemoveApproverCmd(d Deps) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "remove-approver NAME",
		Short: "Revoke a person's approver identity: their key decides, answers and connects no more",
		Long: `Take NAME out of JAZZ_HOME/bus/approvers.json and delete the seed jazz kept for them.

A running 'jazz bus serve' closes the connections of the key within a second and lets
it in no more; a run started from this JAZZ_HOME, even one started before, refuses
every decision, policy change and answer the key signs from now on, and logs each one
refused (reason "revoked") in JAZZ_HOME/audit.jsonl. Approvers listed under
"approvers" in the global config are not in approvers.json: remove them there.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !approvals.ValidName(name) {
				return fmt.Errorf("approver name %q: use 1-64 letters, digits, '.', '_' or '-'", name)
			}
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			a, err := approvals.RemoveApprover(home, name)
			if err != nil {
				return err
			}
			if asJSON {
				b, _ := json.Marshal(map[string]any{"name": a.Name, "publicKey": a.PublicKey, "removed": true})
				fmt.Fprintln(d.IO.Out, string(b))
				return nil
			}
			fmt.Fprintln(d.IO.Out, a.PublicKey)
			fmt.Fprintf(d.IO.ErrOut, "approver %s is removed: a running bus drops the key within a second, and runs refuse what it signs\n", a.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print who was removed as JSON")
	return cmd
}

func newBusAddWorkerCmd(d Deps) *cobra.Command {
	var asJSON bool
	var pools []string
	var leaseMs int64
	cmd := &cobra.Command{
		Use:   "add-worker NAME",
		Short: "Give a worker its own identity: it may take pool tasks and speak only for its own",
		Long: `Create an nkey identity for a worker and let it into the bus: its seed is written to
JAZZ_HOME/bus/workers/NAME.nk (mode 0600), for 'jazz worker --nkey'. The server lets
each worker publish only under its own key, so a runner believes a report about a task
only from the worker that took it. It may join the pools named by --pool (default: the
default pool), and only them. The bus server, not the worker, creates each pool's
consumer, with the pool's lease (--lease, "leaseMs" in workers.json; the longest any of
the pool's workers lists). A running 'jazz bus serve' lets it in within a second.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			if leaseMs != 0 && len(pools) == 0 {
				pools = []string{workstore.DefaultPool}
			}
			var grants []busserver.Pool
			for _, p := range pools {
				grants = append(grants, busserver.Pool{Name: p, LeaseMs: leaseMs})
			}
			w, err := busserver.AddWorker(home, args[0], grants...)
			if err != nil {
				return err
			}
			seed := busserver.WorkerSeedPath(home, w.Name)
			if asJSON {
				b, _ := json.Marshal(map[string]any{"name": w.Name, "publicKey": w.PublicKey, "seedFile": seed})
				fmt.Fprintln(d.IO.Out, string(b))
				return nil
			}
			fmt.Fprintln(d.IO.Out, w.PublicKey)
			fmt.Fprintf(d.IO.ErrOut, "worker %s: seed written to %s\n  run it with: jazz worker --nkey %s\n", w.Name, seed, seed)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the identity as JSON")
	cmd.Flags().StringSliceVar(&pools, "pool", nil, "a pool the worker may join (repeat, or comma list; default: the default pool)")
	cmd.Flags().Int64Var(&leaseMs, "lease", 0, "milliseconds a task of these pools stays with a worker that stopped heartbeating (500 to 600000; default 10000)")
	return cmd
}

func newBusRemoveWorkerCmd(d Deps) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "remove-worker NAME",
		Short: "Revoke a worker's identity: its key connects and takes tasks no more",
		Long: `Take NAME out of JAZZ_HOME/bus/workers.json and delete the seed jazz kept for it.
A running 'jazz bus serve' closes the key's connections within a second and lets it in
no more; a task it held goes back to its pool when the pool's lease runs out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !approvals.ValidName(args[0]) {
				return fmt.Errorf("worker name %q: use 1-64 letters, digits, '.', '_' or '-'", args[0])
			}
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			w, err := busserver.RemoveWorker(home, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				b, _ := json.Marshal(map[string]any{"name": w.Name, "publicKey": w.PublicKey, "removed": true})
				fmt.Fprintln(d.IO.Out, string(b))
				return nil
			}
			fmt.Fprintln(d.IO.Out, w.PublicKey)
			fmt.Fprintf(d.IO.ErrOut, "worker %s is removed: a running bus drops the key within a second\n", w.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print who was removed as JSON")
	return cmd
}

// newBusClusterCmd runs a local cluster for trying worker pools on one
// machine (`make cluster`).
func newBusClusterCmd(d Deps) *cobra.Command {
	var nodes, port int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cluster [--nodes 3] [--port 4242]",
		Short: "Run a local NATS cluster (JetStream replicated) on 127.0.0.1 for trying worker pools",
		Long: `Run NODES bus servers on 127.0.0.1, joined by cluster routes, with the worker-pool
streams and bucket replicated on up to three of them, until interrupted. The identities
are JAZZ_HOME's, as with 'jazz bus serve', and server.json names every node, so runs,
workers and approvers on this machine find the cluster without --nats-url. For trials
and tests only: no TLS, loopback only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := checkedHome(d)
			if err != nil {
				return err
			}
			if nodes < 1 || nodes > 9 {
				return fmt.Errorf("--nodes must be between 1 and 9, got %d", nodes)
			}
			o := busserver.ClusterOptions{Home: home, Nodes: nodes}
			if port > 0 {
				for i := 0; i < nodes; i++ {
					o.Ports = append(o.Ports, port+i)
				}
			}
			if debug, _ := cmd.Flags().GetBool("debug"); debug {
				o.Logf = func(f string, a ...any) { fmt.Fprintf(d.IO.ErrOut, "bus: "+f+"\n", a...) }
			}
			c, err := busserver.StartCluster(cmd.Context(), o)
			if err != nil {
				return err
			}
			defer c.Close()
			if asJSON {
				b, _ := json.Marshal(map[string]any{"url": c.URL(), "nodes": nodes})
				fmt.Fprintln(d.IO.Out, string(b))
			} else {
				fmt.Fprintln(d.IO.Out, c.URL())
			}
			fmt.Fprintf(d.IO.ErrOut, "jazz bus cluster of %d nodes on %s; Ctrl-C stops it\n", nodes, c.URL())
			fmt.Fprintf(d.IO.ErrOut, "  a worker:  jazz worker --nkey %s\n", busserver.RoleSeedPath(home, busserver.RoleWorker))
			fmt.Fprintf(d.IO.ErrOut, "  a run:     set \"workerPool\": \"default\" in %s/config.json, then jazz run ...\n", home)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 3, "servers in the cluster")
	f.IntVar(&port, "port", 0, "client port of the first node (the others follow); default: free ports")
	f.BoolVar(&asJSON, "json", false, "print the cluster URL as JSON")
	return cmd
}
