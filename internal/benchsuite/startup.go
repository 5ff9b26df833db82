package benchsuite

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
)

// startupResult is section 9: a proxy of n fixture servers, from its start
// to every server's tools listed upstream, beside n direct cold connects
// of the same fixture started at once (the slowest of them), run by run.
type startupResult struct {
	n         int
	proxy     durations // spawn → every server's tools in the host's list
	initDone  durations // spawn → initialize answered
	firstList durations // spawn → the host's first tools/list answered
	firstAll  int       // runs whose first tools/list already had every server
	relists   []int     // tools/list after list_changed, per run
	direct    durations // the slowest of n cold connects started at once
	directMed durations // the median of them
	single    durations // one cold connect alone
	proxyCPU  durations // the proxy process's CPU time, start → all listed
	binStart  durations // `mcpkeep version`: the binary's own start and exit
	tools     int       // tools listed upstream at the end
	// warm is the same proxy with a warm catalog cache (docs/design.md
	// §20): every server listed from the cache while it connects.
	warm *startupResult
}

// coldHost is one direct cold connect of the fixture: spawn, initialize,
// tools/list, as the host would; returns its duration.
func coldHost(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	h, err := connectHost(ctx, fixtureCmd(), "")
	if err != nil {
		return 0, err
	}
	defer h.close()
	if _, err := listAll(ctx, h.cs); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// serversListed counts the servers with a tool in the host's list (public
// names are "<server>__<tool>") and the tools.
func serversListed(ctx context.Context, h *host) (servers, tools int, err error) {
	seen := map[string]bool{}
	for t, err := range h.cs.Tools(ctx, nil) {
		if err != nil {
			return 0, 0, err
		}
		tools++
		if s, _, ok := strings.Cut(t.Name, "__"); ok {
			seen[s] = true
		}
	}
	return len(seen), tools, nil
}

func runStartup(ctx context.Context, cfg Config, b *proxyBuild) (*startupResult, error) {
	n := cfg.StartupServers
	res := &startupResult{n: n}
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%02d", i+1)] = fixtureServer("")
	}
	cfgPath := filepath.Join(b.dir, "startup-config.json")
	if err := writeConfig(cfgPath, servers); err != nil {
		return nil, err
	}
	for run := range cfg.StartupRuns {
		// n direct cold connects at once: what a host that started every
		// server itself would wait for.
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			ds   durations
			errs []error
		)
		cctx, cancel := within(ctx)
		for range n {
			wg.Go(func() {
				d, err := coldHost(cctx)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				ds = append(ds, d)
			})
		}
		wg.Wait()
		cancel()
		if len(errs) > 0 {
			return nil, fmt.Errorf("direct cold connects: %w", errs[0])
		}
		res.direct = append(res.direct, ds.max())
		res.directMed = append(res.directMed, ds.pct(50))

		cctx, cancel = within(ctx)
		d, err := coldHost(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("single cold connect: %w", err)
		}
		res.single = append(res.single, d)

		if d, err := binaryStart(ctx, b); err == nil {
			res.binStart = append(res.binStart, d)
		} else {
			return nil, err
		}
		if err := proxyStartup(ctx, b, cfgPath, res, []string{"--no-cache"}); err != nil {
			return nil, fmt.Errorf("run %d: %w", run+1, err)
		}
		// The same proxy with a warm cache: one run fills it, the next is
		// measured.
		cache := filepath.Join(b.dir, fmt.Sprintf("startup-cache-%d", run))
		if res.warm == nil {
			res.warm = &startupResult{n: n}
		}
		fill := &startupResult{n: n}
		if err := proxyStartup(ctx, b, cfgPath, fill, []string{"--cache-dir", cache}); err != nil {
			return nil, fmt.Errorf("run %d, filling the cache: %w", run+1, err)
		}
		if err := proxyStartup(ctx, b, cfgPath, res.warm, []string{"--cache-dir", cache}); err != nil {
			return nil, fmt.Errorf("run %d, warm cache: %w", run+1, err)
		}
	}
	cfg.progress("  startup: %d runs of %d servers", cfg.StartupRuns, n)
	return res, nil
}

// proxyStartup is one cold start of the proxy of res.n servers: the host
// spawns it, initializes, lists the tools, and lists again at each
// tools/list_changed until every server's tools are there.
func proxyStartup(ctx context.Context, b *proxyBuild, cfgPath string, res *startupResult, args []string) error {
	cctx, cancel := within(ctx)
	defer cancel()
	pf := filepath.Join(b.dir, fmt.Sprintf("startup-%d-%d.addr", len(res.proxy), time.Now().UnixNano()))
	t0 := time.Now()
	h, err := connectHost(cctx, b.proxyCmdArgs(cfgPath, args, probe.Env+"="+pf), "")
	if err != nil {
		return err
	}
	defer h.close()
	defer func() {
		// The proxy's own CPU time from its start (through its probe).
		if p, err := waitProbe(cctx, pf); err == nil {
			if s, err := p.stats(); err == nil {
				res.proxyCPU = append(res.proxyCPU, s.cpu)
			}
			p.close()
		}
	}()
	res.initDone = append(res.initDone, time.Since(t0))
	relists := 0
	for {
		servers, tools, err := serversListed(cctx, h)
		if err != nil {
			return err
		}
		if relists == 0 {
			res.firstList = append(res.firstList, time.Since(t0))
			if servers == res.n {
				res.firstAll++
			}
		}
		if servers == res.n {
			res.proxy = append(res.proxy, time.Since(t0))
			res.relists = append(res.relists, relists)
			res.tools = tools
			return nil
		}
		select {
		case <-h.changed:
			relists++
		case <-cctx.Done():
			return fmt.Errorf("%d of %d servers listed after %s (stderr: %s)", servers, res.n, waitLimit, h.stderr)
		}
	}
}

// binaryStart times `mcpkeep version` from the spawn to its exit: what
// the binary's own start costs (exec, the runtime, the packages' init)
// before the proxy does anything.
func binaryStart(ctx context.Context, b *proxyBuild) (time.Duration, error) {
	cctx, cancel := within(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, b.bin, "version")
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("mcpkeep version: %w", err)
	}
	return time.Since(t0), nil
}
