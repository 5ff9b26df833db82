package benchsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"
	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proxy sections (7 proxy hop, 8 relay, 9 startup) run `mcpkeep
// proxy` as a real process between a go-sdk host (this process, over
// stdio: mcp.CommandTransport) and the fixture, beside the same host
// calling the fixture directly.

// legacyProtocol is the protocol before 2026-07-28 the relay rows also
// pin (a server's request to the host is then a request of its own; from
// 2026-07-28 on it rides on the tool call as an input request).
const legacyProtocol = "2025-11-25"

// proxyBuild is the mcpkeep binary the suite built for its proxy rows.
type proxyBuild struct {
	root string // the module's root directory
	dir  string // a temporary directory of the run (configs, probes)
	bin  string // mcpkeep with the probe (see package probe)
	took time.Duration
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the mcpkeep module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// probeOverlay is the file the build adds to cmd/mcpkeep's package main.
const probeOverlay = `package main

import "github.com/mcpkeep/mcpkeep/internal/benchsuite/probe"

func init() { probe.Start() }
`

// buildProxy builds ./cmd/mcpkeep once for the run, with the probe added
// through go build -overlay (the sources on disk are untouched; without
// the probe's environment variable the binary behaves as mcpkeep does).
func buildProxy(ctx context.Context, dir string) (*proxyBuild, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "probe_overlay.go")
	if err := os.WriteFile(src, []byte(probeOverlay), 0o644); err != nil {
		return nil, err
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(root, "cmd", "mcpkeep", "zz_benchprobe.go"): src}})
	if err != nil {
		return nil, err
	}
	ovPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return nil, err
	}
	b := &proxyBuild{root: root, dir: dir, bin: filepath.Join(dir, "mcpkeep-probe")}
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", ovPath, "-o", b.bin, "./cmd/mcpkeep")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/mcpkeep: %w\n%s", err, out)
	}
	b.took = time.Since(t0)
	return b, nil
}

// fixtureServer is a config entry running this program as the fixture;
// a probe file, when not empty, makes the fixture serve its probe.
func fixtureServer(probeFile string) map[string]any {
	path, args, env := fixture.CommandEnv("normal")
	// Set even when empty: the proxy's own probe variable must not reach
	// its servers.
	env[probe.Env] = probeFile
	return map[string]any{"command": path, "args": args, "env": env}
}

// writeConfig writes a proxy config of servers (name → entry).
func writeConfig(path string, servers map[string]any) error {
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// tail keeps the last bytes written to it (a child's stderr, for errors).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > 4096 {
		t.buf = append(t.buf[:0], t.buf[n-4096:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// host is the go-sdk host's side of one session: its client handlers
// record what the servers sent.
type host struct {
	cs      *mcp.ClientSession
	stderr  *tail
	changed chan struct{} // a tools/list_changed arrived (coalesced)

	mu       sync.Mutex
	progress map[string][]arrival // progress token → what arrived
	samples  int                  // sampling requests answered
}

// hostClient is the host's client: sampling, progress and list_changed
// handlers, the same for the direct and the proxied path.
func (h *host) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			h.mu.Lock()
			h.samples++
			h.mu.Unlock()
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "ok"}, Model: "bench", Role: "assistant"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			a := arrival{at: time.Now(), step: req.Params.Progress}
			tok, _ := req.Params.ProgressToken.(string)
			h.mu.Lock()
			h.progress[tok] = append(h.progress[tok], a)
			h.mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
	})
}

// connectHost starts cmd (the fixture, or the proxy) over stdio and
// initializes a session with the host's client, pinning protocol when set.
func connectHost(ctx context.Context, cmd *exec.Cmd, protocol string) (*host, error) {
	h := &host{stderr: &tail{}, changed: make(chan struct{}, 1), progress: map[string][]arrival{}}
	cmd.Stderr = h.stderr
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := h.client().Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, opts)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("connect %s: %w (stderr: %s)", filepath.Base(cmd.Path), err, h.stderr)
	}
	h.cs = cs
	return h, nil
}

func (h *host) close() { h.cs.Close() }

// arrival is a progress notification the host received.
type arrival struct {
	at   time.Time
	step float64 // its progress value: the fixture's step, 1..steps
}

// progressOf returns and forgets what arrived for token.
func (h *host) progressOf(token string) []arrival {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.progress[token]
	delete(h.progress, token)
	return t
}

// fixtureCmd runs the fixture directly, with env added.
func fixtureCmd(env ...string) *exec.Cmd {
	path, args, fenv := fixture.Command("normal")
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), fenv...), env...)
	return cmd
}

// proxyCmd runs the built proxy on cfg, with env added.
func (b *proxyBuild) proxyCmd(cfg string, env ...string) *exec.Cmd {
	return b.proxyCmdArgs(cfg, []string{"--no-cache"}, env...)
}

// proxyCmdArgs is proxyCmd with its own flags after the config (the
// catalog cache's: proxyCmd runs without one, so every row is a cold
// start unless it says otherwise).
func (b *proxyBuild) proxyCmdArgs(cfg string, args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(b.bin, append([]string{"proxy", "--config", cfg, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// probeClient reads a process's probe (see package probe).
type probeClient struct {
	addr string
	hc   *http.Client
}

// waitProbe waits for the probe's address file.
func waitProbe(ctx context.Context, file string) (*probeClient, error) {
	deadline := time.Now().Add(waitLimit)
	for {
		b, err := os.ReadFile(file)
		if err == nil && len(b) > 0 {
			return &probeClient{addr: string(b), hc: &http.Client{Timeout: waitLimit}}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no probe address in %s", file)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// close drops the probe's idle connections (and their goroutines).
func (p *probeClient) close() {
	if p != nil {
		p.hc.CloseIdleConnections()
	}
}

func (p *probeClient) get(path string) ([]byte, error) {
	resp, err := p.hc.Get("http://" + p.addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("probe %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// procStats are a process's counters, as its probe reports them.
type procStats struct {
	mallocs, bytes uint64
	cpu            time.Duration
}

func (p *probeClient) stats() (s procStats, err error) {
	b, err := p.get("/stats")
	if err != nil {
		return s, err
	}
	var ns int64
	_, err = fmt.Sscan(string(b), &s.mallocs, &s.bytes, &ns)
	s.cpu = time.Duration(ns)
	return s, err
}

// perCall is what a process spends per call: allocations, bytes, CPU.
type perCall struct {
	allocs, bytes float64
	cpu           time.Duration
}

// measurePer runs f n times and returns what each probed process spent
// per call. Each probe is read twice before (back to back: the cost of a
// read itself, taken off) and once after.
func measurePer(n int, f func() error, ps ...*probeClient) ([]perCall, error) {
	read := func() ([]procStats, error) {
		out := make([]procStats, len(ps))
		for i, p := range ps {
			s, err := p.stats()
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	s0, err := read()
	if err != nil {
		return nil, err
	}
	s1, err := read()
	if err != nil {
		return nil, err
	}
	for range n {
		if err := f(); err != nil {
			return nil, err
		}
	}
	s2, err := read()
	if err != nil {
		return nil, err
	}
	out := make([]perCall, len(ps))
	for i := range ps {
		out[i] = perCall{
			allocs: (float64(s2[i].mallocs-s1[i].mallocs) - float64(s1[i].mallocs-s0[i].mallocs)) / float64(n),
			bytes:  (float64(s2[i].bytes-s1[i].bytes) - float64(s1[i].bytes-s0[i].bytes)) / float64(n),
			cpu:    ((s2[i].cpu - s1[i].cpu) - (s1[i].cpu - s0[i].cpu)) / time.Duration(n),
		}
	}
	return out, nil
}

// path is one way of reaching the fixture: directly or through the proxy.
type path struct {
	name   string
	h      *host
	prefix string       // the fixture's tools are named prefix+tool here
	self   *probeClient // the proxy's probe (nil on the direct path)
	server *probeClient // the fixture's probe
}

// close ends the host's session (and so its processes) and the probes'
// connections.
func (p *path) close() {
	p.h.close()
	p.self.close()
	p.server.close()
}

func (p *path) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := p.h.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.prefix + tool, Arguments: args})
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error: %s", tool, resultText(res))
	}
	return res, err
}

func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// openPaths starts the direct path and the proxied one (each with the
// fixture's probe, the proxy with its own), with the host pinning
// protocol when set.
func openPaths(ctx context.Context, b *proxyBuild, tag, protocol string) (direct, proxied *path, err error) {
	dprobe := filepath.Join(b.dir, tag+"-direct-fixture.addr")
	pprobe := filepath.Join(b.dir, tag+"-proxy.addr")
	sprobe := filepath.Join(b.dir, tag+"-proxy-fixture.addr")
	for _, f := range []string{dprobe, pprobe, sprobe} {
		_ = os.Remove(f)
	}
	cfg := filepath.Join(b.dir, tag+"-config.json")
	if err := writeConfig(cfg, map[string]any{"fx": fixtureServer(sprobe)}); err != nil {
		return nil, nil, err
	}
	cctx, cancel := within(ctx)
	defer cancel()
	dh, err := connectHost(cctx, fixtureCmd(probe.Env+"="+dprobe), protocol)
	if err != nil {
		return nil, nil, err
	}
	direct = &path{name: "direct", h: dh}
	ph, err := connectHost(cctx, b.proxyCmd(cfg, probe.Env+"="+pprobe), protocol)
	if err != nil {
		dh.close()
		return nil, nil, err
	}
	proxied = &path{name: "proxy", h: ph, prefix: "fx__"}
	fail := func(err error) (*path, *path, error) {
		direct.close()
		proxied.close()
		return nil, nil, err
	}
	for _, p := range []*path{direct, proxied} {
		if _, err := listAll(cctx, p.h.cs); err != nil {
			return fail(fmt.Errorf("%s: tools/list: %w", p.name, err))
		}
	}
	if direct.server, err = waitProbe(cctx, dprobe); err != nil {
		return fail(err)
	}
	if proxied.self, err = waitProbe(cctx, pprobe); err != nil {
		return fail(err)
	}
	if proxied.server, err = waitProbe(cctx, sprobe); err != nil {
		return fail(err)
	}
	return direct, proxied, nil
}

// interleave runs f for each path in blocks of k, ABBA, until each ran n
// times, and returns each path's durations.
func interleave(paths [2]*path, n, k int, f func(*path, int) (time.Duration, error)) ([2]durations, error) {
	out, err := interleaveN(paths[:], n, k, f)
	if err != nil {
		return [2]durations{}, err
	}
	return [2]durations{out[0], out[1]}, nil
}

// interleaveN is interleave for any number of paths: in blocks of k, the
// paths in order on even blocks and in reverse on odd ones (ABC CBA), so
// no path always runs first or last; sample i of every path belongs to
// block i/k.
func interleaveN(paths []*path, n, k int, f func(*path, int) (time.Duration, error)) ([]durations, error) {
	out := make([]durations, len(paths))
	order := make([]int, len(paths))
	for blk := 0; len(out[0]) < n; blk++ {
		for j := range order {
			order[j] = j
			if blk%2 == 1 {
				order[j] = len(paths) - 1 - j
			}
		}
		for _, i := range order {
			for j := 0; j < k && len(out[i]) < n; j++ {
				d, err := f(paths[i], len(out[i]))
				if err != nil {
					return out, fmt.Errorf("%s: %w", paths[i].name, err)
				}
				out[i] = append(out[i], d)
			}
		}
	}
	return out, nil
}

// blockDiffs are the blocks' own differences of p50, a's less b's, for
// samples taken by interleaveN in blocks of k: each block's halves ran
// within a second of each other, so a load that drifts over the minutes
// of all blocks moves both alike.
func blockDiffs(a, b durations, k int) durations {
	var out durations
	for i := 0; i+k <= min(len(a), len(b)); i += k {
		out = append(out, a[i:i+k].pct(50)-b[i:i+k].pct(50))
	}
	return out
}

// hopResult is section 7: echo calls through the proxy beside the direct
// ones, and what each process spends per call.
type hopResult struct {
	protocol       string // negotiated with the host
	legacyProtocol string // ... by the hosts that pinned legacyProtocol
	calls          [2]durations
	legacyCalls    [2]durations
	bareCalls      [2]durations // direct (calls[0]), and through the bare relay (bare.go), in the same blocks
	legacyProxy    perCall      // in the proxy, per relayed call of a legacy host
	measured       int          // calls of the per-process figures
	proxy          perCall      // in the proxy, per relayed call
	directServer   perCall      // in the fixture, called directly
	proxiedServer  perCall      // in the fixture, behind the proxy
	build          time.Duration
	profile        []profileShare // the proxy's CPU profile under load, summed up
	profileSecs    int
	profilePath    string // kept there (Config.ProfileDir)
}

// relayResult is section 8.
type relayResult struct {
	progressSteps  int
	progress       map[string]*progressRelay // by protocol
	sample         map[string][2]durations
	protos         []string // protocols measured, in order
	sampleAnswered [2]int
}

// progressRelay is one protocol's progress figures, direct and proxied.
type progressRelay struct {
	first [2]durations // call sent → step 1's notification
	call  [2]durations // call sent → result
	sent  [2]int       // notifications the fixture sent
	got   [2]int       // ... the host received (by 100 ms after the last call)
	lost  [2][]int     // per step: notifications that never arrived
}

var echoCall = map[string]any{"text": "x"}

// runProxyHop is section 7 (and, on the same processes, section 8 when
// relay is set).
func runProxyHop(ctx context.Context, cfg Config, b *proxyBuild, relay bool) (*hopResult, *relayResult, error) {
	direct, proxied, err := openPaths(ctx, b, "hop", "")
	if err != nil {
		return nil, nil, err
	}
	defer func() { direct.close(); proxied.close() }()
	// The legacy protocol: a host session of its own on each path.
	ld, lp, err := openPaths(ctx, b, "legacy", legacyProtocol)
	if err != nil {
		return nil, nil, err
	}
	defer func() { ld.close(); lp.close() }()
	res := &hopResult{protocol: proxied.h.cs.InitializeResult().ProtocolVersion, legacyProtocol: lp.h.cs.InitializeResult().ProtocolVersion, build: b.took}
	paths, legacy := [2]*path{direct, proxied}, [2]*path{ld, lp}

	// Warm the paths up, then the timed calls.
	for _, p := range []*path{direct, proxied, ld, lp} {
		for range 50 {
			if _, err := p.call(ctx, "echo", echoCall); err != nil {
				return nil, nil, fmt.Errorf("%s warm-up: %w", p.name, err)
			}
		}
	}
	timed := func(p *path, _ int) (time.Duration, error) {
		t0 := time.Now()
		_, err := p.call(ctx, "echo", echoCall)
		return time.Since(t0), err
	}
	// The bare relay (bare.go) in the same blocks as the proxy and the
	// direct calls: the proxy's own share is then its p50 less the bare
	// relay's, both beside the same direct calls.
	bare, err := openBare(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("bare relay: %w", err)
	}
	defer bare.h.close()
	three, err := interleaveN([]*path{direct, proxied, bare}, cfg.ProxyCalls, hopBlock, timed)
	if err != nil {
		return nil, nil, err
	}
	res.calls, res.bareCalls = [2]durations{three[0], three[1]}, [2]durations{three[0], three[2]}
	if res.legacyCalls, err = interleave(legacy, max(cfg.ProxyCalls/2, 1), hopBlock, timed); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", legacyProtocol, err)
	}
	cfg.progress("  proxy hop: %d + %d echo calls (%s), %d + %d (%s)", len(res.calls[0]), len(res.calls[1]), res.protocol,
		len(res.legacyCalls[0]), len(res.legacyCalls[1]), res.legacyProtocol)

	// Allocations and CPU per call in each process.
	res.measured = max(cfg.ProxyCalls/4, 100)
	echo := func(p *path) func() error {
		return func() error { _, err := p.call(ctx, "echo", echoCall); return err }
	}
	d, err := measurePer(res.measured, echo(direct), direct.server)
	if err != nil {
		return nil, nil, fmt.Errorf("direct: %w", err)
	}
	px, err := measurePer(res.measured, echo(proxied), proxied.self, proxied.server)
	if err != nil {
		return nil, nil, fmt.Errorf("proxied: %w", err)
	}
	res.directServer, res.proxy, res.proxiedServer = d[0], px[0], px[1]
	lx, err := measurePer(res.measured, echo(lp), lp.self)
	if err != nil {
		return nil, nil, fmt.Errorf("proxied, %s: %w", legacyProtocol, err)
	}
	res.legacyProxy = lx[0]

	if err := profileProxy(ctx, cfg, b, proxied, res); err != nil {
		return nil, nil, fmt.Errorf("proxy profile: %w", err)
	}
	if !relay {
		return res, nil, nil
	}
	rr, err := runRelay(ctx, cfg, paths, legacy)
	if err != nil {
		return nil, nil, err
	}
	return res, rr, nil
}

// profileProxy takes a CPU profile of the proxy while the host calls echo
// through it back to back, and sums it up (profileShares); with
// cfg.ProfileDir the profile, the binary and `go tool pprof -top -cum`
// are kept there.
func profileProxy(ctx context.Context, cfg Config, b *proxyBuild, p *path, res *hopResult) error {
	dir := cfg.ProfileDir
	if dir == "" {
		dir = b.dir
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	res.profileSecs = 3
	type got struct {
		b   []byte
		err error
	}
	done := make(chan got, 1)
	go func() {
		b, err := p.self.get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", res.profileSecs))
		done <- got{b, err}
	}()
	for {
		select {
		case g := <-done:
			if g.err != nil {
				return g.err
			}
			prof := filepath.Join(dir, "proxy.cpu.pprof")
			if err := os.WriteFile(prof, g.b, 0o644); err != nil {
				return err
			}
			bin := b.bin
			if cfg.ProfileDir != "" {
				bin = filepath.Join(dir, "mcpkeep-probe")
				if err := copyFile(b.bin, bin); err != nil {
					return err
				}
				res.profilePath = prof
			}
			out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=2000", bin, prof).CombinedOutput()
			if err != nil {
				return fmt.Errorf("go tool pprof: %w\n%s", err, out)
			}
			res.profile = profileShares(string(out))
			if cfg.ProfileDir != "" {
				return os.WriteFile(filepath.Join(dir, "proxy.top.txt"), out, 0o644)
			}
			return nil
		default:
		}
		if _, err := p.call(ctx, "echo", echoCall); err != nil {
			return err
		}
	}
}

// profileShare is one cost in the proxy's CPU profile: the share of the
// samples with what in their stack (cum%).
type profileShare struct {
	what  string
	share float64
}

// profileCosts are the costs the proxy's profile is summed up by: the
// function whose cumulative share stands for each.
var profileCosts = []struct{ what, fn string }{
	{"reading the host's stream (HostStdio: the SDK's framing, json.Decoder)", "github.com/mcpkeep/mcpkeep/transport.(*frameReader).next"},
	{"taking the call off it (fastConn.divert: the checks, the params)", "github.com/mcpkeep/mcpkeep/proxy.(*fastConn).divert"},
	{"handing the host's stream on to a standby reader (a wake-up)", "runtime.selectnbsend"},
	{"the fast path's call (proxy.fastConn.call: the relay, the answer)", "github.com/mcpkeep/mcpkeep/proxy.(*fastConn).call"},
	{"of which the relay to the server (Supervisor.CallRaw: the request's write, the wait)", "github.com/mcpkeep/mcpkeep.(*Supervisor).CallRaw"},
	{"of which the answer's check and write to the host (fastConn.answer)", "github.com/mcpkeep/mcpkeep/proxy.(*fastConn).answer"},
	{"reading the server's stream (Lines; RawConn picks the answer out)", "github.com/mcpkeep/mcpkeep/transport.(*lineConn).Read"},
	{"envelope decoding (DecodeEnvelope, both streams)", "github.com/mcpkeep/mcpkeep/transport.DecodeEnvelope"},
	{"the SDK's server (requests the fast path left to it)", "github.com/modelcontextprotocol/go-sdk/mcp.(*ServerSession).handle"},
	{"go-sdk internal/json.Unmarshal (a fresh 32 KiB decoder each)", "github.com/modelcontextprotocol/go-sdk/internal/json.Unmarshal"},
	{"contexts (context.(*cancelCtx).propagateCancel)", "context.(*cancelCtx).propagateCancel"},
	{"GC (background mark workers)", "runtime.gcBgMarkWorker"},
	{"system calls", "syscall.Syscall"},
	{"thread wake-ups (runtime.futex)", "runtime.futex"},
	{"the scheduler (findRunnable: goroutine hand-offs)", "runtime.findRunnable"},
}

// profileShares reads `go tool pprof -top -cum` output: the share of each
// of profileCosts, and (what "mcpkeep's own code") the flat share of
// mcpkeep's packages and the proxy's package main.
func profileShares(top string) []profileShare {
	cum := map[string]float64{}
	own := 0.0
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasSuffix(f[4], "%") {
			continue
		}
		var flat, c float64
		if _, err := fmt.Sscanf(f[1], "%f%%", &flat); err != nil {
			continue
		}
		if _, err := fmt.Sscanf(f[4], "%f%%", &c); err != nil {
			continue
		}
		name := strings.Join(f[5:], " ")
		cum[name] = c
		if strings.HasPrefix(name, "github.com/mcpkeep/") || strings.HasPrefix(name, "main.") {
			own += flat
		}
	}
	var out []profileShare
	for _, pc := range profileCosts {
		if c, ok := cum[pc.fn]; ok {
			out = append(out, profileShare{pc.what, c})
		}
	}
	return append(out, profileShare{"mcpkeep's own code (flat)", own})
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// runRelay is section 8 on the hop's processes: progress notifications
// server → host (tool slow), and a sampling round trip server → host →
// server (tool sample) on the negotiated protocol and on the legacy one.
func runRelay(ctx context.Context, cfg Config, paths, legacy [2]*path) (*relayResult, error) {
	rr := &relayResult{progressSteps: 3, progress: map[string]*progressRelay{}, sample: map[string][2]durations{}}
	slowArgs := map[string]any{"steps": rr.progressSteps, "ms": 1}
	progress := func(ps [2]*path, proto string) error {
		type sent struct {
			p     int
			token string
			at    time.Time
		}
		var calls []sent
		pr := &progressRelay{}
		for i := range pr.lost {
			pr.lost[i] = make([]int, rr.progressSteps)
		}
		var err error
		pr.call, err = interleave(ps, cfg.RelayCalls, 25, func(p *path, _ int) (time.Duration, error) {
			i := 0
			if p == ps[1] {
				i = 1
			}
			token := fmt.Sprintf("bench-%s-%d", proto, len(calls))
			params := &mcp.CallToolParams{Name: p.prefix + "slow", Arguments: slowArgs}
			params.SetProgressToken(token)
			t0 := time.Now()
			calls = append(calls, sent{i, token, t0})
			res, err := p.h.cs.CallTool(ctx, params)
			d := time.Since(t0)
			if err == nil && res.IsError {
				err = errors.New(resultText(res))
			}
			return d, err
		})
		if err != nil {
			return fmt.Errorf("progress (%s): %w", proto, err)
		}
		// The SDK hands notifications to their handler on a queue of
		// their own, so a call's last ones may arrive just after its
		// result.
		time.Sleep(100 * time.Millisecond)
		for _, c := range calls {
			got := ps[c.p].h.progressOf(c.token)
			pr.got[c.p] += len(got)
			pr.sent[c.p] += rr.progressSteps
			seen := make([]bool, rr.progressSteps)
			for _, a := range got {
				if k := int(a.step) - 1; k >= 0 && k < len(seen) {
					seen[k] = true
					if k == 0 {
						pr.first[c.p] = append(pr.first[c.p], a.at.Sub(c.at))
					}
				}
			}
			for k, ok := range seen {
				if !ok {
					pr.lost[c.p][k]++
				}
			}
		}
		rr.progress[proto] = pr
		return nil
	}
	sample := func(ps [2]*path, proto string) error {
		before := [2]int{}
		for i, p := range ps {
			p.h.mu.Lock()
			before[i] = p.h.samples
			p.h.mu.Unlock()
		}
		d, err := interleave(ps, cfg.RelayCalls, 25, func(p *path, _ int) (time.Duration, error) {
			t0 := time.Now()
			res, err := p.call(ctx, "sample", map[string]any{"prompt": "hi"})
			if err == nil && resultText(res) != "ok" {
				err = fmt.Errorf("sample answered %q", resultText(res))
			}
			return time.Since(t0), err
		})
		if err != nil {
			return fmt.Errorf("sampling (%s): %w", proto, err)
		}
		for i, p := range ps {
			p.h.mu.Lock()
			rr.sampleAnswered[i] += p.h.samples - before[i]
			p.h.mu.Unlock()
		}
		rr.sample[proto] = d
		return nil
	}
	run := func(ps [2]*path) error {
		proto := ps[1].h.cs.InitializeResult().ProtocolVersion
		rr.protos = append(rr.protos, proto)
		if err := progress(ps, proto); err != nil {
			return err
		}
		return sample(ps, proto)
	}
	if err := run(paths); err != nil {
		return nil, err
	}
	if err := run(legacy); err != nil {
		return nil, err
	}
	cfg.progress("  relay: progress and sampling on %s", strings.Join(rr.protos, " and "))
	return rr, nil
}
