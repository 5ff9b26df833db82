package benchsuite

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Memory per host session (issue 25 item 4): one `mcpkeep proxy --listen`
// of M fixture servers, N go-sdk hosts connected to it over Streamable
// HTTP (each initialized, its tools listed, then idle with its standalone
// stream open), and the proxy's resident set (VmRSS) after a collection
// that returns freed memory to the OS (the probe's /gc).

// sessionCounts are the N of the table; the last is the per-session row's.
var sessionCounts = []int{1, 10, 100}

// sessionServers are the M of the table.
var sessionServers = []int{1, 10}

// sessionCell is the proxy's RSS with n host sessions and m servers.
type sessionCell struct {
	servers, sessions int
	rss               uint64 // bytes
}

type sessionsResult struct{ cells []sessionCell }

// rssOf is VmRSS of process pid in bytes (Linux /proc).
func rssOf(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for process %d", pid)
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func runSessions(ctx context.Context, cfg Config, b *proxyBuild) (*sessionsResult, error) {
	res := &sessionsResult{}
	for _, m := range sessionServers {
		cells, err := sessionsOf(ctx, b, m)
		if err != nil {
			return nil, fmt.Errorf("%d servers: %w", m, err)
		}
		res.cells = append(res.cells, cells...)
		cfg.progress("  sessions: %d servers done", m)
	}
	return res, nil
}

func sessionsOf(ctx context.Context, b *proxyBuild, m int) ([]sessionCell, error) {
	servers := map[string]any{}
	for i := range m {
		servers[fmt.Sprintf("s%d", i)] = fixtureServer("")
	}
	cfgPath := filepath.Join(b.dir, fmt.Sprintf("sessions-%d.json", m))
	if err := writeConfig(cfgPath, servers); err != nil {
		return nil, err
	}
	lp, err := startListening(ctx, b, cfgPath, fmt.Sprintf("sessions-%d", m))
	if err != nil {
		return nil, err
	}
	defer lp.stop()
	addr, pc, stderr, cmd := lp.addr, lp.pc, lp.stderr, lp.cmd

	endpoint := "http://" + addr + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1.0.0"}, nil)
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	// connect opens one host session and lists its tools; with all, it
	// waits until every server's tools are listed.
	connect := func(all bool) error {
		cctx, cancel := within(ctx)
		defer cancel()
		cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
		if err != nil {
			return err
		}
		sessions = append(sessions, cs)
		for {
			lt, err := cs.ListTools(cctx, nil)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, t := range lt.Tools {
				server, _, _ := strings.Cut(t.Name, "__")
				seen[server] = true
			}
			if !all || len(seen) >= m {
				return nil
			}
			select {
			case <-cctx.Done():
				return fmt.Errorf("%d of %d servers' tools listed", len(seen), m)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	// The first: the proxy may still be binding its port.
	deadline := time.Now().Add(waitLimit)
	for {
		err := connect(true)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("first host session: %w (stderr: %s)", err, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var cells []sessionCell
	for _, n := range sessionCounts {
		for len(sessions) < n {
			if err := connect(false); err != nil {
				return nil, fmt.Errorf("host session %d: %w", len(sessions)+1, err)
			}
		}
		if _, err := pc.get("/gc"); err != nil {
			return nil, err
		}
		rss, err := rssOf(cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		cells = append(cells, sessionCell{servers: m, sessions: n, rss: rss})
	}
	return cells, nil
}

func sessionRows(rep *Report, sr *sessionsResult) {
	cell := func(m, n int) (uint64, bool) {
		for _, c := range sr.cells {
			if c.servers == m && c.sessions == n {
				return c.rss, true
			}
		}
		return 0, false
	}
	lo, hi := sessionCounts[0], sessionCounts[len(sessionCounts)-1]
	if a, ok := cell(1, lo); ok {
		if z, ok := cell(1, hi); ok {
			per := (float64(z) - float64(a)) / float64(hi-lo)
			const target = 64 << 10
			row := Row{Section: secProxy, Metric: fmt.Sprintf("--listen: proxy RSS per additional idle host session (%d → %d sessions, 1 server)", lo, hi),
				Mcpkeep: fmtBytes(per), Comparison: fmt.Sprintf("RSS %s with %d, %s with %d", fmtBytes(float64(a)), lo, fmtBytes(float64(z)), hi),
				Target: "≤ 64.0 KiB"}
			row.Verdict, row.Reason = verdict(per <= target, "each session holds the SDK's server session (its "+
				"connection, its queues and the standalone stream's goroutines and buffers) and the proxy's own host "+
				"link; measured after a collection that returned freed memory to the OS")
			rep.add(row)
		}
	}
	for _, m := range sessionServers {
		var parts []string
		for _, n := range sessionCounts {
			if v, ok := cell(m, n); ok {
				parts = append(parts, fmt.Sprintf("%d: %s", n, fmtBytes(float64(v))))
			}
		}
		rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("--listen: proxy RSS by host sessions, %d server(s)", m),
			Mcpkeep: strings.Join(parts, "; "), Target: "—", Verdict: Info})
	}
	rep.note(secProxy, "Host sessions (--listen): one `mcpkeep proxy --listen` (section 7's build, not a race build) "+
		"of M fixture servers; N go-sdk hosts connect over Streamable HTTP, initialize and list the tools, then stay "+
		"idle with their standalone streams open; the proxy's VmRSS after it collected and returned freed memory to "+
		"the OS (debug.FreeOSMemory through the probe), for N = %v and M = %v.", sessionCounts, sessionServers)
}

// listening is a `mcpkeep proxy --listen` of the bench's build, with its
// probe.
type listening struct {
	addr   string
	cmd    *exec.Cmd
	pc     *probeClient
	stderr *tail
}

// startListening starts the proxy of cfgPath on a free loopback port
// (name names its probe file) and waits for its probe.
func startListening(ctx context.Context, b *proxyBuild, cfgPath, name string, extra ...string) (*listening, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probeFile := filepath.Join(b.dir, name+".probe")
	args := append([]string{"proxy", "--config", cfgPath, "--log-level", "warn", "--listen", addr}, extra...)
	cmd := exec.Command(b.bin, args...)
	lp := &listening{addr: addr, cmd: cmd, stderr: &tail{}}
	cmd.Env, cmd.Stderr = append(os.Environ(), probe.Env+"="+probeFile), lp.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if lp.pc, err = waitProbe(ctx, probeFile); err != nil {
		lp.stop()
		return nil, fmt.Errorf("%w (stderr: %s)", err, lp.stderr)
	}
	return lp, nil
}

// stop interrupts the proxy and waits for it, bounded.
func (lp *listening) stop() {
	if lp.pc != nil {
		lp.pc.close()
	}
	_ = lp.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = lp.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = lp.cmd.Process.Kill()
		<-done
	}
}
