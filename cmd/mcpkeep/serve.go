package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/metrics"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shutdownBound caps the whole shutdown at exit. Each supervisor bounds
// its own drain by its termination window (about 5 s for stdio), so this
// is only the last resort against a transport that ignores its own bound.
const shutdownBound = 30 * time.Second

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
	trace, err := openTrace(sv.tracePath, cfg, sv.log)
	if err != nil {
		sv.log.Error("cannot write the trace", slog.Any("err", err))
		return 1
	}
	defer trace.close()

	m := metrics.New(sv.log)
	opts := sv.opts
	opts.Logger = sv.log
	if sv.sdkLog {
		opts.SDKLogger = sv.log.With(slog.String("component", "sdk"))
	}
	opts.Implementation = &mcp.Implementation{Name: "mcpkeep", Version: resolveVersion()}
	opts.Pool.Observer = mcpkeep.Observers(trace.observer(), m.Observer())
	opts.Metrics = m
	srv := proxy.New(cfg, opts)
	m.CountDropped(srv.HostDropped)
	poolOf := func() *mcpkeep.Pool { p, _ := srv.Pool(); return p }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var served chan error
	if sv.listen.addr == "" || sv.listen.stdio {
		served = make(chan error, 1)
		go func() { served <- srv.Serve(ctx, &mcp.IOTransport{Reader: in, Writer: out}) }()
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
					slog.Bool("auth", sv.listen.token != ""))
			}
		}
		if err != nil {
			sv.log.Error("cannot serve", slog.Any("err", fmt.Errorf("--listen: %w", err)))
			code = 1
		}
	}
	if sv.listen.metrics != "" && code == 0 {
		hs, err := listenAndServe(sv.listen.metrics, srv.OpsHandler(m.Handler(poolOf)))
		if err != nil {
			sv.log.Error("cannot serve health and metrics", slog.Any("err", fmt.Errorf("--metrics-listen: %w", err)))
			code = 1
		} else {
			servers = append(servers, hs)
			sv.log.Info("serving health and metrics", slog.String("addr", hs.Addr))
		}
	}

	reloads := make(chan struct{}, 1)
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
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
	return sv.shutdown(srv, servers, code, func() {
		cancel()
		<-reloaded
		if served != nil {
			<-served // Serve returns once ctx is cancelled
		}
	})
}

// shutdown stops the listeners and the proxy together (the listeners'
// Shutdown waits for the open streams that the proxy's Shutdown closes)
// and reports code, or 1 when some server's shutdown did not complete.
func (sv *serving) shutdown(srv *proxy.Server, servers []*http.Server, code int, stop func()) int {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	start := time.Now()
	listeners := make(chan struct{})
	go func() {
		defer close(listeners)
		for _, hs := range servers {
			_ = hs.Shutdown(ctx)
		}
	}()
	err := srv.Shutdown(ctx)
	stop()
	<-listeners
	if err != nil {
		sv.logErrors("incomplete shutdown", err)
		return 1
	}
	sv.log.Info("stopped", slog.Duration("took", time.Since(start)))
	return code
}

// listenAndServe binds addr and serves h on it; the returned server's
// Addr is the bound address.
func listenAndServe(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Addr: ln.Addr().String(), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return hs, nil
}

// reload re-reads the config and applies it; a config that does not load
// leaves everything as it was.
func (sv *serving) reload(ctx context.Context, srv *proxy.Server) {
	cfg, warns, err := sv.load()
	sv.warn(warns)
	if err != nil {
		sv.logErrors("reload failed, config unchanged", err)
		return
	}
	if err := srv.Reload(ctx, cfg); err != nil {
		sv.logErrors("reload", err)
	}
}

func (sv *serving) warn(warns []config.Warning) {
	for _, w := range warns {
		sv.log.Warn("config", slog.String("path", w.Path), slog.String("warning", w.Message))
	}
}

// logErrors logs each error of a join on its own line.
func (sv *serving) logErrors(msg string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		sv.log.Error(msg, slog.String("err", line))
	}
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
