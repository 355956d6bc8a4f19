package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/visible"
	"github.com/jazz-run/jazz/workerpool"
)

// WorkerOptions are `jazz worker`'s flags as parsed.
type WorkerOptions struct {
	Bus      busclient.Options
	Pool     string
	Capacity int
	LeaseMs  int
	Name     string
	Dir      string
	Tools    string
	JSON     bool
}

// NewWorkerCmd builds `jazz worker`: join a pool and run its tasks.
func NewWorkerCmd(d Deps) *cobra.Command {
	var o WorkerOptions
	cmd := &cobra.Command{
		Use:   "worker --nats-url URL (--creds FILE | --nkey FILE) [--pool NAME] [--capacity N]",
		Short: "Join a worker pool and run the subagents and remote runs sent to it",
		Long: `Join a worker pool on a shared bus and run what runners send it: spawn_subagent
children of runs whose config names the pool ("workerPool"), and whole runs started
with 'jazz run --remote'. Each task runs with this machine's own model keys and
tools (from this JAZZ_HOME's config and environment), within the tool ceiling the
task carries; every gated call is decided by the submitting run's gate, never here.

Without --nats-url the local 'jazz bus serve' is used with its worker identity. Give
each worker its own identity ('jazz bus add-worker NAME'): the server lets a worker
speak only for its own tasks. SIGINT/SIGTERM hands running tasks back to the pool.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd.Context(), d, o) },
	}
	f := cmd.Flags()
	addBusFlags(f, &o.Bus, busFlagText{
		URL:   "the bus, comma-separated cluster URLs (default: the local 'jazz bus serve')",
		Creds: "NATS credentials file of this worker",
		Nkey:  "nkey seed file of this worker (default with the local bus: its worker identity)",
	})
	f.StringVar(&o.Pool, "pool", workerpool.DefaultPool, "the pool to join")
	f.IntVar(&o.Capacity, "capacity", 4, "tasks run at once")
	f.IntVar(&o.LeaseMs, "lease", 0, "milliseconds the pool's lease must be (it is the bus's: \"leaseMs\" of the pool in JAZZ_HOME/bus/workers.json, 'jazz bus add-worker --lease'); the worker does not join a pool whose lease differs")
	f.StringVar(&o.Name, "name", "", "a name for `jazz workers` (default: the identity's file name)")
	f.StringVar(&o.Dir, "dir", "", "working directory of the tasks' agents (default: the current one)")
	f.StringVar(&o.Tools, "tools", "", "comma list capping the tools any task may use here (default: every built-in tool)")
	f.BoolVar(&o.JSON, "json", false, "print the worker's identity as JSON on stdout once it has joined")
	return cmd
}

// workerVersion is this binary's module version, for `jazz workers`.
func workerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func runWorker(ctx context.Context, d Deps, o WorkerOptions) error {
	if o.Capacity < 1 || o.Capacity > 1024 {
		return fmt.Errorf("--capacity must be between 1 and 1024, got %d", o.Capacity)
	}
	if o.LeaseMs != 0 && (o.LeaseMs < 500 || o.LeaseMs > 600_000) {
		return fmt.Errorf("--lease must be between 500 and 600000 milliseconds, got %d", o.LeaseMs)
	}
	home, err := config.Home(d.Getenv, d.Cwd)
	if err != nil {
		return err
	}
	if err := config.CheckHome(home); err != nil {
		return err
	}
	cfg, warnings, err := config.Load(ctx, config.LoadOptions{Home: home, Getenv: d.Getenv, Cwd: d.Cwd})
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(d.IO.ErrOut, "worker: "+format+"\n", args...)
	}
	for _, w := range warnings {
		logf("%s", w)
	}
	// Resolved once: the connection reads and the tasks' programs are
	// kept from the same files.
	bo := o.Bus.WithEnv(d.Getenv).Resolved(d.Cwd)
	if bo, err = bo.WithLocal(home, busserver.RoleSeedPath(home, busserver.RoleWorker)); err != nil {
		return err
	}
	kp, err := bo.Signer()
	if err != nil {
		return fmt.Errorf("worker identity: %w", err)
	}
	key, _ := kp.PublicKey()
	name := o.Name
	if name == "" {
		name = strings.TrimSuffix(baseName(firstNonEmpty(bo.Nkey, bo.Creds)), ".nk")
	}
	bo.Name = "jazz-worker-" + name
	bo.InboxPrefix = busserver.WorkerInboxPrefix(key)
	bo.ReconnectFor = 24 * time.Hour // a worker waits out an outage
	bo.OnDisconnect = func(err error) { logf("disconnected from the bus: %v", err) }
	bo.OnReconnect = func() { logf("reconnected") }
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	nc, err := busclient.Connect(cctx, bo)
	cancel()
	if err != nil {
		return err
	}
	defer nc.CloseNow()
	dir := o.Dir
	if dir == "" {
		dir = d.Cwd
	}
	var capTools []string
	if o.Tools != "" {
		for _, t := range strings.Split(o.Tools, ",") {
			if t = strings.TrimSpace(t); t != "" {
				capTools = append(capTools, t)
			}
		}
	}
	rt, err := app.NewWorkerRuntime(ctx, app.WorkerOptions{Config: cfg, Getenv: d.Getenv, WorkDir: dir, Tools: capTools, KeyFiles: bo.SecretFiles(),
		Warn: func(msg string) { logf("%s", msg) }})
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())
	jctx, jdone := context.WithTimeout(ctx, 30*time.Second)
	w, err := workerpool.StartWorker(jctx, workerpool.WorkerOptions{Conn: nc, Key: key, Name: name, Pool: o.Pool,
		Capacity: o.Capacity, Lease: time.Duration(o.LeaseMs) * time.Millisecond, Version: workerVersion(), Runtime: rt,
		Logf: logf})
	jdone()
	if err != nil {
		return err
	}
	if o.JSON {
		b, _ := json.Marshal(map[string]any{"worker": key, "name": name, "pool": o.Pool, "capacity": o.Capacity})
		fmt.Fprintln(d.IO.Out, string(b))
	} else {
		fmt.Fprintln(d.IO.Out, key)
	}
	<-ctx.Done()
	logf("stopping: running tasks go back to the pool")
	sctx, sdone := context.WithTimeout(context.Background(), 10*time.Second)
	defer sdone()
	w.Stop(sctx)
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// NewWorkersCmd builds `jazz workers`: the live workers and their load.
func NewWorkersCmd(d Deps) *cobra.Command {
	var bo busclient.Options
	var pool string
	var asJSON bool
	var waitMs int
	cmd := &cobra.Command{
		Use:   "workers [--pool NAME]",
		Short: "List the live workers of the bus's pools: load, capacity and version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.Home(d.Getenv, d.Cwd)
			if err != nil {
				return err
			}
			bo = bo.WithEnv(d.Getenv)
			if bo, err = bo.WithLocal(home, busserver.RoleSeedPath(home, busserver.RoleObserver)); err != nil {
				return err
			}
			bo.Name = "jazz-workers"
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			nc, err := busclient.Connect(ctx, bo)
			if err != nil {
				return err
			}
			defer nc.CloseNow()
			found, err := workerpool.List(ctx, nc, pool, time.Duration(waitMs)*time.Millisecond)
			if err != nil {
				return err
			}
			list := found.Workers
			if n := found.Unverified; n > 0 {
				// On stderr, so --json's stdout stays the list alone.
				what := "1 claim was"
				if n > 1 {
					what = strconv.Itoa(n) + " claims were"
				}
				fmt.Fprintf(d.IO.ErrOut, "%s not confirmed by the worker it names (an impostor, or a worker that left or was too slow to answer): not listed\n", what)
			}
			if asJSON {
				if list == nil {
					list = []workerpool.LiveWorker{}
				}
				b, _ := json.Marshal(list)
				fmt.Fprintln(d.IO.Out, string(b))
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintln(d.IO.ErrOut, "no live workers")
				return nil
			}
			tw := tabwriter.NewWriter(d.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "POOL\tNAME\tRUNNING\tCAPACITY\tDONE\tVERSION\tSINCE\tKEY")
			for _, w := range list {
				fmt.Fprint(tw, workerRow(w))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	addBusFlags(f, &bo, busFlagText{
		URL:   "the bus (default: the local 'jazz bus serve')",
		Creds: "NATS credentials file",
		Nkey:  "nkey seed file (default with the local bus: its observer identity)",
	})
	f.StringVar(&pool, "pool", "", "only this pool")
	f.IntVar(&waitMs, "wait", 1000, "milliseconds to wait for answers")
	f.BoolVar(&asJSON, "json", false, "JSON on stdout")
	return cmd
}

// workerRow is one line of the `jazz workers` table. A worker chooses its
// own name, pool and version: each is shown inert (visible.Line), so no
// escape sequence reaches the terminal and no tab or newline moves a
// column or forges a row.
func workerRow(w workerpool.LiveWorker) string {
	return fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", visible.Line(w.Pool), visible.Line(w.Name), w.Running, w.Capacity,
		strconv.FormatInt(w.Done, 10), visible.Line(w.Version), w.Started.Local().Format(time.DateTime), visible.Line(w.Worker))
}
