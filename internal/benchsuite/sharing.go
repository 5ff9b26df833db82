package benchsuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What sharing saves (issue 22 item 7, issue 25 item 4): N host sessions
// that each use M servers. Directly, every session spawns its own M
// server processes; through one `mcpkeep proxy --listen` the N sessions
// share M; with lazy servers and a warm catalog cache only the one server
// the sessions call runs. The figure is the resident set of every process
// involved (mcpkeep's and the servers'), each after its tools were listed
// and one tool called.
const shareSessions, shareServers = 5, 2

type sharingResult struct {
	direct, shared, lazy uint64 // bytes, summed over the processes
	procs                [3]int // processes counted per column
}

func runSharing(ctx context.Context, cfg Config, b *proxyBuild) (*sharingResult, error) {
	res := &sharingResult{}
	var err error
	if res.direct, res.procs[0], err = sharingDirect(ctx); err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	cfg.progress("  sharing: direct done")
	cacheDir := filepath.Join(b.dir, "sharing-cache")
	if res.shared, res.procs[1], err = sharingProxy(ctx, b, cacheDir, false); err != nil {
		return nil, fmt.Errorf("through the proxy: %w", err)
	}
	// The eager run above warmed the cache the lazy run starts from.
	if res.lazy, res.procs[2], err = sharingProxy(ctx, b, cacheDir, true); err != nil {
		return nil, fmt.Errorf("lazy: %w", err)
	}
	cfg.progress("  sharing: proxy and lazy done")
	return res, nil
}

// sharingDirect spawns N×M fixture processes as N hosts would, each
// listed and called once, and sums their RSS.
func sharingDirect(ctx context.Context) (uint64, int, error) {
	path, args, env := fixture.Command("normal")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1.0.0"}, nil)
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	var pids []int
	for range shareSessions * shareServers {
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), env...)
		cctx, cancel := within(ctx)
		cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			return 0, 0, err
		}
		sessions = append(sessions, cs)
		err = listAndCall(cctx, cs, "echo")
		cancel()
		if err != nil {
			return 0, 0, err
		}
		pids = append(pids, cmd.Process.Pid)
	}
	total, err := rssSum(pids)
	return total, len(pids), err
}

// sharingProxy runs one --listen proxy of M servers (lazy or eager, with
// cacheDir), connects N hosts that list the tools and call s0's echo, and
// sums the RSS of the proxy and of its servers.
func sharingProxy(ctx context.Context, b *proxyBuild, cacheDir string, lazy bool) (uint64, int, error) {
	servers := map[string]any{}
	for i := range shareServers {
		s := fixtureServer("")
		if lazy {
			s["start"] = "lazy"
		}
		servers[fmt.Sprintf("s%d", i)] = s
	}
	cfgPath := filepath.Join(b.dir, fmt.Sprintf("sharing-lazy-%v.json", lazy))
	if err := writeConfig(cfgPath, servers); err != nil {
		return 0, 0, err
	}
	lp, err := startListening(ctx, b, cfgPath, fmt.Sprintf("sharing-lazy-%v", lazy), "--cache-dir", cacheDir)
	if err != nil {
		return 0, 0, err
	}
	defer lp.stop()
	addr, pc, stderr, cmd := lp.addr, lp.pc, lp.stderr, lp.cmd
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1.0.0"}, nil)
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	deadline := time.Now().Add(waitLimit)
	for len(sessions) < shareSessions {
		cctx, cancel := within(ctx)
		cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
		if err == nil {
			sessions = append(sessions, cs)
			err = listAndCall(cctx, cs, "s0__echo")
		}
		cancel()
		if err != nil {
			if len(sessions) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond) // the proxy may still be binding its port
				continue
			}
			return 0, 0, fmt.Errorf("host session %d: %w (stderr: %s)", len(sessions)+1, err, stderr)
		}
	}
	if _, err := pc.get("/gc"); err != nil {
		return 0, 0, err
	}
	pids := append([]int{cmd.Process.Pid}, childrenOf(cmd.Process.Pid)...)
	total, err := rssSum(pids)
	return total, len(pids), err
}

// listAndCall lists the tools (every server's, through the proxy: until
// the list has the tool) and calls tool once.
func listAndCall(ctx context.Context, cs *mcp.ClientSession, tool string) error {
	for {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		found := false
		for _, t := range lt.Tools {
			found = found || t.Name == tool
		}
		if found {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no tool %s listed", tool)
		case <-time.After(10 * time.Millisecond):
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error", tool)
	}
	return err
}

// childrenOf lists the processes whose parent is pid (Linux /proc).
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent is the second field after the command's closing ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func rssSum(pids []int) (uint64, error) {
	var total uint64
	for _, pid := range pids {
		rss, err := rssOf(pid)
		if err != nil {
			return 0, err
		}
		total += rss
	}
	return total, nil
}

func sharingRows(rep *Report, sr *sharingResult) {
	cmp := fmt.Sprintf("directly: %s (%d server processes, each session its own)", fmtBytes(float64(sr.direct)), sr.procs[0])
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("memory of %d host sessions × %d servers through one --listen proxy (RSS of every process)", shareSessions, shareServers),
		Mcpkeep: fmt.Sprintf("%s (%d processes)", fmtBytes(float64(sr.shared)), sr.procs[1]), Comparison: cmp,
		Ratio: fmt.Sprintf("%.3f", float64(sr.shared)/float64(sr.direct)), Target: "—", Verdict: Info})
	row := Row{Section: secProxy, Metric: fmt.Sprintf("the same with lazy servers and a warm cache, one of the %d used", shareServers),
		Mcpkeep: fmt.Sprintf("%s (%d processes)", fmtBytes(float64(sr.lazy)), sr.procs[2]), Comparison: cmp,
		Ratio: fmt.Sprintf("%.3f", float64(sr.lazy)/float64(sr.direct)), Target: "ratio ≤ 0.15"}
	row.Verdict, row.Reason = verdict(float64(sr.lazy) <= 0.15*float64(sr.direct),
		"the proxy's own resident set (a Go process with the SDK, the Prometheus client and the served sessions) "+
			"is several fixture servers' worth: the fixture is a small Go server too, so sharing saves less than with "+
			"real servers (npx and uvx ones weigh tens of MiB each)")
	rep.add(row)
	rep.note(secProxy, "Sharing: %d go-sdk hosts that each use %d fixture servers. Directly, each host spawns its own "+
		"servers (CommandTransport); through one `mcpkeep proxy --listen` all share them; lazily (\"start\": \"lazy\", "+
		"after an eager run warmed the catalog cache), only the server the hosts call runs. Each host lists the tools and "+
		"calls one; the figure sums VmRSS over mcpkeep and every server process, after the proxy returned freed memory "+
		"to the OS.", shareSessions, shareServers)
}
