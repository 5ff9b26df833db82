package main

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/backoff"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/mcpkeep/mcpkeep/transport"
)

// traceFlushEvery is how stale the trace file may get while the proxy
// runs; the supervisors' observers only buffer (they must not block on a
// disk), so a ticker pushes the lines out.
const traceFlushEvery = 250 * time.Millisecond

// proxyTrace writes the proxy's --trace file: a multi-server header from
// the config, then every transition of every supervisor. A nil
// *proxyTrace (no --trace) does nothing.
type proxyTrace struct {
	w    *trace.Writer
	log  *slog.Logger
	stop chan struct{}
	done sync.WaitGroup
}

func openTrace(path string, cfg *config.Config, log *slog.Logger) (*proxyTrace, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &proxyTrace{w: trace.NewWriter(f, traceHeader(cfg, time.Now())), log: log, stop: make(chan struct{})}
	t.done.Add(1)
	go t.flusher()
	return t, nil
}

// traceHeader describes the servers of cfg as they start. Servers that a
// SIGHUP adds later are not in it (the format has one header per file):
// they are read with the top-level configuration, the stdio defaults.
func traceHeader(cfg *config.Config, started time.Time) trace.Header {
	h := trace.Header{Version: trace.Version, Started: started, Clock: trace.ClockReal,
		Servers: map[string]trace.Config{}, Note: "mcpkeep proxy"}
	h.Config = traceConfig(config.Server{Transport: config.TransportStdio, Command: "default",
		Reconnect: backoff.Default(), ConnectTimeout: config.DefaultConnectTimeout})
	for _, sc := range cfg.Servers {
		h.Servers[sc.Name] = traceConfig(sc)
	}
	return h
}

func traceConfig(sc config.Server) trace.Config {
	tw := mcpkeep.DefaultTerminationWindow
	if op, err := sc.Opener(nil); err == nil {
		if w, ok := op.(transport.TerminationWindower); ok && w.TerminationWindow() > 0 {
			tw = w.TerminationWindow()
		}
	}
	return trace.Config{
		Policy:              trace.PolicyOf(sc.Reconnect),
		ConnectTimeoutMs:    trace.Ms(sc.ConnectTimeout),
		TerminationWindowMs: trace.Ms(tw),
	}
}

func (t *proxyTrace) observer() mcpkeep.Observer {
	if t == nil {
		return nil
	}
	return mcpkeep.TraceObserver(t.w)
}

func (t *proxyTrace) flusher() {
	defer t.done.Done()
	tick := time.NewTicker(traceFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = t.w.Flush()
		case <-t.stop:
			return
		}
	}
}

// close flushes the last lines; call it after the pool is disposed so the
// trace ends with every server's disposed.
func (t *proxyTrace) close() {
	if t == nil {
		return
	}
	close(t.stop)
	t.done.Wait()
	if err := t.w.Close(); err != nil { // closes the file too
		t.log.Error("trace incomplete", slog.Any("err", err))
	}
}
