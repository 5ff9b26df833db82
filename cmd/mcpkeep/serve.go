package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/metrics"
	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/store"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serving is one run of `mcpkeep proxy` or `mcpkeep run`: the wiring of
// a proxy.Server to stdio, HTTP listeners, signals, the trace and metrics.
type serving struct {
	// load reads the config, at start and at every SIGHUP.
	load      func() (*config.Config, []config.Warning, error)
	tracePath string
	log       *slog.Logger
	sdkLog    bool // pass the logger to the SDK's server too
	opts      proxy.Options
	listen    listenOpts
	initWait  time.Duration       // unless opts say
	cache     *catalogcache.Cache // nil: --no-cache
	replicas  replicaOpts         // --store and the rest (replicaflags.go)
	cacheDir  string              // the cache's directory ("" with --no-cache)
	// resumeGC turns the collector back on after the start (gc.go:
	// pauseStartGC); nil when serve did not pause it.
	resumeGC func()
}

// serve runs sv on the process's stdin and stdout with its signals:
// SIGINT and SIGTERM stop it, SIGHUP reloads. A host that dies leaves
// stdout a broken pipe: unhandled, SIGPIPE on fd 1 kills the process
// before it disposes its servers; noticed, the write fails with EPIPE and
// the proxy shuts down in order.
func (sv *serving) serve(stdout io.Writer) int {
	relayGC()
	// Until the first apply settled (run); under a quarter of a small
	// container's memory (memlimit.go).
	sv.resumeGC = pauseStartGC(func() int64 { return startCap(memoryLimit(os.DirFS("/"))) })
	defer sv.resumeGC() // however run ends
	// As a container's PID 1, nobody else reaps what servers' wrappers
	// leave orphaned (docs/kubernetes.md).
	defer transport.StartReaper(context.Background(), sv.log)()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	return sv.run(os.Stdin, writeCloser(stdout), sigs)
}

// run serves until the host closes in (stdin EOF, when serving stdio) or
// SIGINT/SIGTERM arrives, then shuts down (proxy.Server.Shutdown), so no
// child process is left, and returns the exit code. SIGHUP re-reads the
// config and applies it by difference.
func (sv *serving) run(in io.ReadCloser, out io.WriteCloser, sigs <-chan os.Signal) int {
	cfg, warns, err := sv.load()
	sv.warn(warns)
	if err != nil {
		sv.logErrors("invalid config", err)
		return 1
	}
	if sv.resumeGC != nil && !warmStart(sv.cache, cfg) {
		// Nothing to register in one burst: the collector runs as usual
		// (gc.go).
		sv.resumeGC()
	}
	trace, err := openTrace(sv.tracePath, cfg, sv.log)
	if err != nil {
		sv.log.Error("cannot write the trace", slog.Any("err", err))
		return 1
	}
	defer trace.close()

	m := metrics.New(sv.log)
	opts := sv.opts
	// The live page shows each server's last stderr tail from the log
	// (proxy.LogTap, docs/design.md §28).
	opts.Logger = slog.New(proxy.NewLogTap(sv.log.Handler()))
	if sv.sdkLog {
		opts.SDKLogger = sv.log.With(slog.String("component", "sdk"))
	}
	opts.Implementation = &mcp.Implementation{Name: "mcpkeep", Version: resolveVersion()}
	opts.Pool.Observer = mcpkeep.Observers(trace.observer(), m.Observer())
	opts.Metrics = m
	if opts.InitWait == 0 {
		opts.InitWait = sv.initWait
	}
	// A host times its server from the spawn: --init-wait counts from
	// mcpkeep's own start, not from the host's first request.
	opts.InitWaitFrom = processStart
	opts.Pool.Cache = sv.cache
	defer startTracing(&opts, sv.log)() // docs/design.md §27
	if sv.replicas.key != nil {
		opts.StateKey = sv.replicas.key
	}
	rr, err := sv.replicas.start(context.Background()) // docs/design.md §26
	if err != nil {
		sv.log.Error("cannot run as a replica", slog.Any("err", err))
		return 1
	}
	defer rr.close()
	if rr != nil {
		opts.Replicas = rr.rep
		// Finished tasks in the shared store: any replica answers a
		// poll, and a result outlives its replica (docs/design.md §26).
		opts.Tasks.Store = &tasks.KVStore{KV: rr.st, NotFound: store.ErrNotFound}
	} else {
		sv.taskStore(&opts) // finished tasks on disk (docs/design.md §25)
	}
	srv := proxy.New(cfg, opts)
	m.CountDropped(srv.HostDropped)
	m.CountAmbiguous(srv.HostAmbiguous)
	m.CountTasks(srv.Tasks)
	poolOf := func() *mcpkeep.Pool { p, _ := srv.Pool(); return p }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if sv.resumeGC != nil {
		wait := resumeGCAfter(ctx, srv.Applied(), sv.resumeGC)
		defer func() { cancel(); wait() }()
	}
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		select {
		case <-srv.Applied():
			if _, err := warmUp(ctx, cfg); err != nil && ctx.Err() == nil { // warmup.go
				sv.log.Debug("warm-up failed", slog.Any("err", err))
			}
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(); <-warmed }()
	var served chan error
	if sv.listen.addr == "" || sv.listen.stdio {
		served = make(chan error, 1)
		go func() { served <- srv.Serve(ctx, &transport.HostStdio{Reader: in, Writer: out}) }()
	}
	var servers []*http.Server
	code := 0
	if sv.listen.addr != "" {
		h, err := srv.Handler(proxy.HTTPOptions{Token: sv.listen.token, TrustedOrigins: sv.listen.origins,
			Metrics: m.Handler(poolOf)})
		if err == nil {
			var hs *http.Server
			if hs, err = listenAndServe(sv.listen.addr, h); err == nil {
				servers = append(servers, hs)
				addr := hs.Addr
				sv.log.Info("listening", slog.String("addr", addr), slog.String("mcp", "http://"+addr+"/mcp"),
					slog.String("ui", "http://"+addr+"/ui"), slog.Bool("auth", sv.listen.token != ""))
			}
		}
		if err != nil {
			sv.log.Error("cannot serve", slog.Any("err", fmt.Errorf("--listen: %w", err)))
			code = 1
		}
	}
	if rr != nil && code == 0 {
		if err := rr.join(ctx, &sv.replicas, sv.log, m); err != nil {
			sv.log.Error("cannot join the replicas", slog.Any("err", err))
			code = 1
		}
	}
	if sv.listen.metrics != "" && code == 0 {
		// The live page there takes the same token and origins as --listen.
		h, err := srv.OpsHandlerWith(proxy.HTTPOptions{Token: sv.listen.token, TrustedOrigins: sv.listen.origins,
			Metrics: m.Handler(poolOf)})
		var hs *http.Server
		if err == nil {
			hs, err = listenAndServe(sv.listen.metrics, h)
		}
		if err != nil {
			sv.log.Error("cannot serve health and metrics", slog.Any("err", fmt.Errorf("--metrics-listen: %w", err)))
			code = 1
		} else {
			servers = append(servers, hs)
			sv.log.Info("serving health and metrics", slog.String("addr", hs.Addr), slog.String("ui", "http://"+hs.Addr+"/ui"))
		}
	}

	reloads := make(chan struct{}, 1)
	reloaded := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		// A sign-in written by `mcpkeep auth login` reconnects its server
		// (docs/design.md §22). Watched whatever the config says now: a
		// reload may add a server that signs in; until then the store is
		// not read.
		if st, err := oauth.DefaultStore(); err == nil {
			oauth.Watch(ctx, oauth.WatchOptions{Dir: st.Dir, Active: srv.NeedsSignIn}, srv.SignedIn)
		}
	}()
	go func() {
		defer close(reloaded)
		defer func() { <-watching }()
		for {
			select {
			case <-reloads:
				sv.reload(ctx, srv)
			case <-ctx.Done():
				return
			}
		}
	}()
	applied := srv.Applied()
	for running := code == 0; running; {
		select {
		case <-applied:
			applied = nil
			if srv.StartupError() != nil {
				code, running = 1, false
			}
		case err := <-served:
			sv.log.Info("host disconnected", slog.Any("err", err))
			served, running = nil, false
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				select {
				case reloads <- struct{}{}:
				default: // one is pending: it will read the newest file
				}
				continue
			}
			sv.log.Info("stopping", slog.String("signal", sig.String()))
			running = false
		}
	}
	rr.leave(sv.log) // first: the other replicas stop forwarding here
	return sv.shutdown(srv, servers, code, func() {
		cancel()
		<-reloaded
		if served != nil {
			<-served // Serve returns once ctx is cancelled
		}
	})
}

// processStart is when mcpkeep started, as near as the program can tell.
var processStart = time.Now()
