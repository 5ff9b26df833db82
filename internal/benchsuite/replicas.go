package benchsuite

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Calls/s through 1 and through 3 replicas (docs/design.md §26), one
// run side by side: redis-server, three `mcpkeep proxy --listen --store`
// replicas of the fixture, and two haproxy frontends, round robin with no
// affinity, one in front of replica 0 alone and one in front of all
// three. The same hosts call echo back to back through each, alternating.

const (
	replicaHosts  = 8               // concurrent hosts per measurement
	replicaWindow = 3 * time.Second // one measurement
	replicaRounds = 2               // per frontend and era, alternating
)

type replicasResult struct {
	missing string                // why not measured ("" : measured)
	rate    map[string][2]float64 // era → calls/s through [1, 3] replicas
	failed  map[string][2]int64
}

// runReplicasBench measures; a missing redis-server or haproxy is no
// error: the rows say they were not measured.
func runReplicasBench(ctx context.Context, cfg Config, b *proxyBuild) (*replicasResult, error) {
	res := &replicasResult{rate: map[string][2]float64{}, failed: map[string][2]int64{}}
	dir, err := os.MkdirTemp(b.dir, "replicas-")
	if err != nil {
		return nil, err
	}
	rs, err := replicatest.LaunchRedis(dir)
	if errors.Is(err, replicatest.ErrMissing) {
		res.missing = err.Error()
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	defer rs.Kill()
	cfgPath, keyPath := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "state.key")
	if err := writeConfig(cfgPath, map[string]any{"fx": fixtureServer("")}); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	key[0] = 1
	if err := os.WriteFile(keyPath, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return nil, err
	}
	var addrs []string
	for i := range 3 {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, b.bin, "proxy", "--config", cfgPath, "--listen", addr, "--store", rs.URL(),
			"--replica-id", fmt.Sprintf("r%d", i), "--state-key-file", keyPath, "--no-cache", "--log-format", "json")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p, err := replicatest.Launch(cmd, `"msg":"serving"`, 60*time.Second, nil)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		defer func() {
			_ = p.Cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.Done():
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
				<-p.Done()
			}
		}()
		addrs = append(addrs, addr)
	}
	one, err := replicatest.LaunchHAProxy(dir, addrs[:1])
	if errors.Is(err, replicatest.ErrMissing) {
		res.missing = err.Error()
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	defer one.Kill()
	dir3 := filepath.Join(dir, "three")
	if err := os.Mkdir(dir3, 0o700); err != nil {
		return nil, err
	}
	three, err := replicatest.LaunchHAProxy(dir3, addrs)
	if err != nil {
		return nil, err
	}
	defer three.Kill()
	fronts := [2]string{"http://" + one.Addr + "/mcp", "http://" + three.Addr + "/mcp"}
	for _, era := range []string{"2026-07-28", legacyProtocol} {
		var calls, fails [2]int64
		var took [2]time.Duration
		for round := range replicaRounds {
			for k := range 2 {
				i := k
				if round%2 == 1 {
					i = 1 - k // ABBA
				}
				cfg.progress("section 7: replicas, %s hosts through %d replica(s), round %d", era, []int{1, 3}[i], round+1)
				n, f, d, err := callsThrough(ctx, fronts[i], era)
				if err != nil {
					return nil, err
				}
				calls[i] += n
				fails[i] += f
				took[i] += d
			}
		}
		res.rate[era] = [2]float64{float64(calls[0]) / took[0].Seconds(), float64(calls[1]) / took[1].Seconds()}
		res.failed[era] = fails
	}
	return res, nil
}

// callsThrough has replicaHosts hosts of era call echo back to back
// through front for replicaWindow: the calls answered, the failures and
// the time measured.
func callsThrough(ctx context.Context, front, era string) (int64, int64, time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: replicaHosts}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	sessions := make([]*mcp.ClientSession, replicaHosts)
	for i := range sessions {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).
			Connect(cctx, &mcp.StreamableClientTransport{Endpoint: front, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		cancel()
		if err != nil {
			return 0, 0, 0, fmt.Errorf("host through %s: %w", front, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	var ok, failed atomic.Int64
	wctx, cancel := context.WithTimeout(ctx, replicaWindow)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Go(func() {
			for wctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "x"}})
				ccancel()
				switch {
				case err == nil && !res.IsError:
					ok.Add(1)
				case wctx.Err() == nil:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load(), failed.Load(), time.Since(start), nil
}

func replicaRows(rep *Report, r *replicasResult) {
	if r.missing != "" {
		rep.add(Row{Section: secProxy, Metric: "echo calls/s through haproxy: 1 replica vs 3 (docs/design.md §26)",
			Mcpkeep: "not measured: " + r.missing, Target: "—", Verdict: Info})
		return
	}
	for _, era := range []string{"2026-07-28", legacyProtocol} {
		v, f := r.rate[era], r.failed[era]
		rep.add(Row{Section: secProxy,
			Metric:     fmt.Sprintf("echo calls/s through haproxy, %d %s hosts: 3 replicas (round robin, no affinity; failed %d)", replicaHosts, era, f[1]),
			Mcpkeep:    fmt.Sprintf("%.0f /s", v[1]),
			Comparison: fmt.Sprintf("1 replica %.0f /s (failed %d)", v[0], f[0]),
			Ratio:      fmtRatio(v[1], v[0]), Target: "—", Verdict: Info})
	}
	rep.note(secProxy, "Replicas: redis-server and three `mcpkeep proxy --listen --store` replicas (the build above, one fixture "+
		"server each), two haproxy frontends (round robin per request, no affinity): one in front of replica 0 alone, one in "+
		"front of all three. %d go-sdk hosts call `echo` back to back through one frontend for %v, then the other, %d rounds "+
		"each alternating (ABBA), per protocol; a legacy host's requests that land on another replica than its session's are "+
		"forwarded to it. On a machine with fewer cores than processes the replicas share the same CPUs: the ratio is the "+
		"cost of the extra hop and processes, not the gain on separate nodes.", replicaHosts, replicaWindow, replicaRounds)
}
