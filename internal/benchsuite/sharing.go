package benchsuite

import (
	"context"
	"encoding/json"
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

// EnvEverything names a directory where `npm install --prefix DIR
// @modelcontextprotocol/server-everything` was run (make bench does it
// when node and npm are on PATH): the sharing rows are then measured with
// that real server too, which the target is stated for.
const EnvEverything = "MCPKEEP_BENCH_EVERYTHING_DIR"

// shareServer is what each of the M servers runs, and the tool the hosts
// call.
type shareServer struct {
	about    string // for the rows
	command  string
	args     []string
	env      map[string]string
	tool     string
	toolArgs map[string]any
}

func fixtureShare() shareServer {
	path, args, env := fixture.CommandEnv("normal")
	return shareServer{about: "fixture servers", command: path, args: args, env: env,
		tool: "echo", toolArgs: map[string]any{"text": "x"}}
}

// everythingShare is server-everything from EnvEverything, or why not.
func everythingShare() (shareServer, string) {
	dir := os.Getenv(EnvEverything)
	if dir == "" {
		return shareServer{}, EnvEverything + " is not set (make bench sets it when node and npm are on PATH)"
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return shareServer{}, "node is not on PATH"
	}
	pkgDir := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything")
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return shareServer{}, err.Error()
	}
	var pkg struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return shareServer{}, err.Error()
	}
	var bin string
	if json.Unmarshal(pkg.Bin, &bin) != nil {
		var bins map[string]string
		_ = json.Unmarshal(pkg.Bin, &bins)
		bin = bins["mcp-server-everything"]
	}
	if bin == "" {
		return shareServer{}, "server-everything's package.json names no bin"
	}
	return shareServer{about: "server-everything " + pkg.Version + " (Node) servers", command: node,
		args: []string{filepath.Join(pkgDir, filepath.FromSlash(bin)), "stdio"},
		tool: "echo", toolArgs: map[string]any{"message": "x"}}, ""
}

// sharingCols are the three columns of one kind of server.
type sharingCols struct {
	about                string
	direct, shared, lazy uint64 // bytes, summed over the processes
	procs                [3]int // processes counted per column
}

type sharingResult struct {
	fixture sharingCols
	real    *sharingCols // nil: not measured (realWhy says why)
	realWhy string
}

func runSharing(ctx context.Context, cfg Config, b *proxyBuild) (*sharingResult, error) {
	res := &sharingResult{}
	cols, err := sharingOf(ctx, cfg, b, fixtureShare(), "fixture")
	if err != nil {
		return nil, err
	}
	res.fixture = *cols
	sv, why := everythingShare()
	if why != "" {
		res.realWhy = why
		return res, nil
	}
	if res.real, err = sharingOf(ctx, cfg, b, sv, "everything"); err != nil {
		return nil, fmt.Errorf("%s: %w", sv.about, err)
	}
	return res, nil
}

func sharingOf(ctx context.Context, cfg Config, b *proxyBuild, sv shareServer, key string) (*sharingCols, error) {
	res := &sharingCols{about: sv.about}
	var err error
	if res.direct, res.procs[0], err = sharingDirect(ctx, sv); err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	cfg.progress("  sharing (%s): direct done", sv.about)
	cacheDir := filepath.Join(b.dir, "sharing-cache-"+key)
	if res.shared, res.procs[1], err = sharingProxy(ctx, b, cacheDir, false, sv, key); err != nil {
		return nil, fmt.Errorf("through the proxy: %w", err)
	}
	// The eager run above warmed the cache the lazy run starts from.
	if res.lazy, res.procs[2], err = sharingProxy(ctx, b, cacheDir, true, sv, key); err != nil {
		return nil, fmt.Errorf("lazy: %w", err)
	}
	cfg.progress("  sharing (%s): proxy and lazy done", sv.about)
	return res, nil
}

// sharingDirect spawns N×M server processes as N hosts would, each
// listed and called once, and sums their RSS.
func sharingDirect(ctx context.Context, sv shareServer) (uint64, int, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1.0.0"}, nil)
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	var pids []int
	for range shareSessions * shareServers {
		cmd := exec.Command(sv.command, sv.args...)
		cmd.Env = os.Environ()
		for k, v := range sv.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cctx, cancel := within(ctx)
		cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			return 0, 0, err
		}
		sessions = append(sessions, cs)
		err = listAndCall(cctx, cs, sv.tool, sv.toolArgs)
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
func sharingProxy(ctx context.Context, b *proxyBuild, cacheDir string, lazy bool, sv shareServer, key string) (uint64, int, error) {
	servers := map[string]any{}
	for i := range shareServers {
		s := map[string]any{"command": sv.command, "args": sv.args, "env": sv.env}
		if lazy {
			s["start"] = "lazy"
		}
		servers[fmt.Sprintf("s%d", i)] = s
	}
	cfgPath := filepath.Join(b.dir, fmt.Sprintf("sharing-%s-lazy-%v.json", key, lazy))
	if err := writeConfig(cfgPath, servers); err != nil {
		return 0, 0, err
	}
	lp, err := startListening(ctx, b, cfgPath, fmt.Sprintf("sharing-%s-lazy-%v", key, lazy), "--cache-dir", cacheDir)
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
			err = listAndCall(cctx, cs, "s0__"+sv.tool, sv.toolArgs)
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
func listAndCall(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) error {
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
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
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
	sharingColsRows(rep, &sr.fixture, false)
	if sr.real != nil {
		sharingColsRows(rep, sr.real, true)
	} else {
		rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("the same with real servers (server-everything), lazy, one of the %d used", shareServers),
			Mcpkeep: "not measured", Comparison: "—", Target: "ratio ≤ 0.15", Verdict: Missed,
			Reason: "not measured: " + sr.realWhy})
	}
	rep.note(secProxy, "Sharing: %d go-sdk hosts that each use %d servers, the fixture and (where node and npm are) "+
		"the reference TypeScript server-everything. Directly, each host spawns its own "+
		"servers (CommandTransport); through one `mcpkeep proxy --listen` all share them; lazily (\"start\": \"lazy\", "+
		"after an eager run warmed the catalog cache), only the server the hosts call runs. Each host lists the tools and "+
		"calls one; the figure sums VmRSS over mcpkeep and every server process, after the proxy returned freed memory "+
		"to the OS. The target (≤ 0.15×) is stated for real servers.", shareSessions, shareServers)
}

// sharingColsRows adds one kind of server's rows; target: its lazy row
// carries the ≤ 0.15 target (real servers, or the fixture when no real
// server could be measured).
func sharingColsRows(rep *Report, c *sharingCols, target bool) {
	cmp := fmt.Sprintf("directly: %s (%d server processes, each session its own)", fmtBytes(float64(c.direct)), c.procs[0])
	rep.add(Row{Section: secProxy, Metric: fmt.Sprintf("memory of %d host sessions × %d %s through one --listen proxy (RSS of every process)", shareSessions, shareServers, c.about),
		Mcpkeep: fmt.Sprintf("%s (%d processes)", fmtBytes(float64(c.shared)), c.procs[1]), Comparison: cmp,
		Ratio: fmt.Sprintf("%.3f", float64(c.shared)/float64(c.direct)), Target: "—", Verdict: Info})
	row := Row{Section: secProxy, Metric: fmt.Sprintf("the same with lazy %s and a warm cache, one of the %d used", c.about, shareServers),
		Mcpkeep: fmt.Sprintf("%s (%d processes)", fmtBytes(float64(c.lazy)), c.procs[2]), Comparison: cmp,
		Ratio: fmt.Sprintf("%.3f", float64(c.lazy)/float64(c.direct)), Target: "—", Verdict: Info}
	if target {
		row.Target = "ratio ≤ 0.15"
		row.Verdict, row.Reason = verdict(float64(c.lazy) <= 0.15*float64(c.direct),
			"the proxy's own resident set (a Go process with the SDK, the Prometheus client and the served sessions) "+
				"is several of these servers' worth")
	}
	rep.add(row)
}
