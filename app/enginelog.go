package app

import (
	"context"
	"log/slog"
	"sync"

	"github.com/anthdm/hollywood/actor"
)

// engineLogFlushed is broadcast on the engine's event stream at teardown;
// the stream handles events in order, so once it comes back every event
// broadcast before it has been logged.
type engineLogFlushed struct{}

// flushEngineLog waits, within ctx, until the actor engine has logged
// every lifecycle event of the run. hollywood logs them from its event
// stream actor, after the fact: a run that ends quickly would otherwise
// exit with the last lines of its --debug log unwritten. Without a debug
// log it costs nothing.
func flushEngineLog(ctx context.Context, e *actor.Engine) {
	if !slog.Default().Enabled(ctx, slog.LevelDebug) {
		return
	}
	seen := make(chan struct{})
	var once sync.Once
	pid := e.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(engineLogFlushed); ok {
			once.Do(func() { close(seen) })
		}
	}, "logflush")
	e.Subscribe(pid)
	e.BroadcastEvent(engineLogFlushed{})
	select {
	case <-seen:
	case <-ctx.Done():
	}
	e.Unsubscribe(pid)
	e.Poison(pid)
}
