package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shutdownBound caps Dispose at exit. Each supervisor bounds its own drain
// by its termination window (about 5 s for stdio), so this is only the
// last resort against a transport that ignores its own bound.
const shutdownBound = 30 * time.Second

// runProxy is `mcpkeep proxy`: an MCP server on stdin/stdout that serves
// the union of the configured servers' tools, each server supervised.
func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("proxy", "proxy --config FILE [--listen ADDR [--stdio] [--auth-token-env VAR]] [--log-format text|json] [--log-level LEVEL] [--trace FILE]")
	cfgPath := fs.String("config", "", "the config file: mcpServers (Claude Desktop, Cursor) or servers (VS Code) shape (required)")
	format := fs.String("log-format", "text", "log format on stderr: text | json (one object per line)")
	level := fs.String("log-level", "info", "debug | info | warn | error (debug adds the servers' stderr and the SDK's logs)")
	tracePath := fs.String("trace", "", "append every lifecycle transition to FILE as JSON lines")
	var listen listenOpts
	listen.register(fs)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	log, err := newLogger(stderr, *format, *level)
	if *cfgPath == "" {
		err = errors.Join(err, errors.New("--config FILE is required"))
	}
	err = errors.Join(err, listen.check())
	if err != nil {
		fmt.Fprintf(stderr, "mcpkeep proxy: %v\n", err)
		fs.Usage()
		return 2
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A host that dies leaves stdout a broken pipe. Unhandled, SIGPIPE on
	// fd 1 kills the process before it disposes its servers; noticed, the
	// write fails with EPIPE and the proxy shuts down in order.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	p := &proxy{tracePath: *tracePath, log: log, sdkLog: *level == "debug", listen: listen, ops: newOps(log),
		load: func() (*config.Config, []config.Warning, error) { return config.Load(*cfgPath) }}
	return p.run(os.Stdin, writeCloser(stdout), sigs)
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

// proxy is one run of `mcpkeep proxy` (or `mcpkeep run`, which is a
// proxy of one server under its own names).
type proxy struct {
	// load reads the config, at start and at every SIGHUP.
	load      func() (*config.Config, []config.Warning, error)
	tracePath string
	log       *slog.Logger
	sdkLog    bool // pass the logger to the SDK's server too
	// impl is what the proxy says it is; nil is {"mcpkeep", version}.
	impl *mcp.Implementation
	// namer names the servers' tools and prompts; nil is the pool's.
	namer tools.Namer
	// patch edits the answer to the host's initialize (see front).
	patch func(pool *mcpkeep.Pool, res mcp.Result)
	// initWait bounds the host's initialize (zero: defaultInitWait).
	initWait time.Duration
	// listen serves hosts over Streamable HTTP (see listenOpts).
	listen listenOpts
	// ops serves health, readiness and metrics (with --listen or
	// --metrics-listen) and counts what happens either way.
	ops *ops
}

// serverNames are the names of cfg's servers.
func serverNames(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		out = append(out, sc.Name)
	}
	return out
}

// run serves until the host closes in (stdin EOF) or SIGINT/SIGTERM
// arrives, then disposes every server, so no child process is left, and
// returns the exit code. SIGHUP re-reads the config and applies it by
// difference.
func (p *proxy) run(in io.ReadCloser, out io.WriteCloser, sigs <-chan os.Signal) int {
	cfg, warns, err := p.load()
	p.warn(warns)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			p.log.Error("invalid config", slog.String("err", line))
		}
		return 1
	}
	trace, err := openTrace(p.tracePath, cfg, p.log)
	if err != nil {
		p.log.Error("cannot write the trace", slog.Any("err", err))
		return 1
	}
	defer trace.close()

	sdkLog := slog.New(slog.DiscardHandler)
	if p.sdkLog {
		sdkLog = p.log.With(slog.String("component", "sdk"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The servers start at the host's initialize, once its capabilities
	// are known (see front); the answer waits for their first connections
	// up to initWait, later servers join with list_changed.
	impl := p.impl
	if impl == nil {
		impl = &mcp.Implementation{Name: "mcpkeep", Version: resolveVersion()}
	}
	f := newFront(p.log, sdkLog, impl,
		mcpkeep.PoolOptions{Logger: p.log, Observer: observers(trace.observer(), p.ops.observer()), Namer: p.namer},
		func(ctx context.Context, pool *mcpkeep.Pool) error { return pool.Apply(ctx, cfg) }, cmp.Or(p.initWait, defaultInitWait))
	f.ctx, f.patch, f.ops, f.up.ops, f.cat.ops = ctx, p.patch, p.ops, p.ops, p.ops
	p.ops.expect(serverNames(cfg))

	var served chan error
	if p.listen.addr == "" || p.listen.stdio {
		served = make(chan error, 1)
		go func() { served <- f.srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out}) }()
	}
	var hf *httpFront
	if p.listen.addr != "" {
		f.startServing() // many hosts: the servers start now
		if hf, err = p.listen.serve(f, sdkLog, p.ops.handler(f.getPool)); err != nil {
			p.log.Error("cannot serve", slog.Any("err", err))
			cancel()
			<-f.applied
			return p.shutdown(f.getPool(), 1)
		}
		p.log.Info("listening", slog.String("addr", hf.Addr()), slog.String("mcp", "http://"+hf.Addr()+"/mcp"),
			slog.Bool("auth", p.listen.token != ""))
	}
	var opsSrv *http.Server
	if p.listen.metrics != "" {
		ln, err := net.Listen("tcp", p.listen.metrics)
		if err != nil {
			p.log.Error("cannot serve health and metrics", slog.Any("err", fmt.Errorf("--metrics-listen: %w", err)))
			cancel()
			if pool, ok := f.Pool(); ok {
				return p.shutdown(pool, 1)
			}
			return 1
		}
		opsSrv = &http.Server{Handler: p.ops.handler(f.getPool), ReadHeaderTimeout: 10 * time.Second}
		go opsSrv.Serve(ln)
		p.log.Info("serving health and metrics", slog.String("addr", ln.Addr().String()))
	}

	reloads := make(chan struct{}, 1)
	reloaded := make(chan struct{})
	started, applied := f.started, f.applied
	code, running, reloading := 0, true, false
	for running {
		select {
		case <-started:
			started = nil
			go func() {
				defer close(reloaded)
				pool := f.getPool()
				for {
					select {
					case <-reloads:
						p.reload(ctx, pool)
					case <-ctx.Done():
						return
					}
				}
			}()
			reloading = true
		case <-applied:
			applied = nil
			f.mu.Lock()
			err := f.applyErr
			f.mu.Unlock()
			pool := f.getPool()
			if err != nil {
				p.logErrors("startup", err)
				if missing := strictMissing(cfg, pool); len(missing) > 0 {
					p.log.Error("strict startup failed", slog.Any("servers", missing))
					code, running = 1, false
					continue
				}
			}
			p.log.Info("serving", slog.Int("servers", len(cfg.Servers)), slog.Int("tools", len(f.set.List())))
		case err := <-served:
			p.log.Info("host disconnected", slog.Any("err", err))
			served = nil
			running = false
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				select {
				case reloads <- struct{}{}:
				default: // one is pending: it will read the newest file
				}
				continue
			}
			p.log.Info("stopping", slog.String("signal", sig.String()))
			running = false
		}
	}
	p.ops.stop() // readiness says so at once
	if hf != nil {
		sctx, scancel := context.WithTimeout(context.Background(), httpShutdownBound)
		if err := hf.shutdown(sctx, f, httpGrace); err != nil {
			p.log.Warn("http shutdown", slog.Any("err", err))
		}
		scancel()
	}
	cancel()
	if reloading {
		<-reloaded
	}
	if pool, ok := f.Pool(); ok {
		code = p.shutdown(pool, code)
		if applied != nil {
			<-applied // Dispose cancelled it
		}
	}
	if served != nil {
		<-served // Run returns once ctx is cancelled
	}
	if opsSrv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		_ = opsSrv.Shutdown(sctx)
		scancel()
	}
	return code
}

// httpGrace is how long requests in flight may finish at SIGTERM before
// the host sessions are closed; httpShutdownBound bounds the whole.
const (
	httpGrace         = 2 * time.Second
	httpShutdownBound = 10 * time.Second
)

// defaultInitWait bounds how long the host's initialize waits for the
// servers' first connections, so a host's own startup timeout is never hit.
const defaultInitWait = 10 * time.Second

// shutdown disposes every server and reports code, or 1 when some
// server's shutdown did not complete.
func (p *proxy) shutdown(pool *mcpkeep.Pool, code int) int {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	start := time.Now()
	if err := pool.Dispose(ctx); err != nil {
		p.logErrors("incomplete shutdown", err)
		return 1
	}
	p.log.Info("stopped", slog.Duration("took", time.Since(start)))
	return code
}

// reload re-reads the config and applies it by difference: unchanged
// servers keep running untouched. It also gives every server that gave up
// a fresh budget: SIGHUP is the proxy's manual reconnect.
func (p *proxy) reload(ctx context.Context, pool *mcpkeep.Pool) {
	cfg, warns, err := p.load()
	p.warn(warns)
	if err != nil {
		p.logErrors("reload failed, config unchanged", err)
		return
	}
	p.ops.expect(serverNames(cfg))
	if err := pool.Apply(ctx, cfg); err != nil {
		p.logErrors("reload", err)
	}
	for _, s := range pool.States() {
		if s.State != fsm.Exhausted {
			continue
		}
		if sup, ok := pool.Supervisor(s.Server); ok {
			if err := sup.Reconnect(); err == nil {
				p.log.Info("manual reconnect", slog.String("server", s.Server))
			}
		}
	}
	p.log.Info("reloaded", slog.Int("servers", len(cfg.Servers)))
}

func (p *proxy) warn(warns []config.Warning) {
	for _, w := range warns {
		p.log.Warn("config", slog.String("path", w.Path), slog.String("warning", w.Message))
	}
}

// logErrors logs each error of a join on its own line.
func (p *proxy) logErrors(msg string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		p.log.Error(msg, slog.String("err", line))
	}
}

// strictMissing names the servers with failOnStartupError that did not
// start.
func strictMissing(cfg *config.Config, pool *mcpkeep.Pool) []string {
	var out []string
	for _, sc := range cfg.Servers {
		if _, ok := pool.Supervisor(sc.Name); sc.FailOnStartupError && !ok {
			out = append(out, sc.Name)
		}
	}
	return out
}

// writeCloser lets the SDK close stdout at the end without closing a
// writer that is not ours to close.
func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
