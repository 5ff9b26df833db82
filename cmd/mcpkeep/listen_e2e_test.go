package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenRun is one `mcpkeep proxy --listen` process.
type listenRun struct {
	t      *testing.T
	addr   string
	stderr *notifyingBuffer
	done   chan error
	cmd    interface{ Signal(os.Signal) error }
}

var listeningRE = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

func startListen(t *testing.T, cfg map[string]any, env []string, extra ...string) *listenRun {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"proxy", "--config", path, "--log-format", "json", "--log-level", "debug", "--listen", "127.0.0.1:0"}, extra...)
	if !slices.Contains(extra, "--cache-dir") && !slices.Contains(extra, "--no-cache") {
		// Each run its own catalog cache, as startProxy: with the test
		// binary's shared one a rerun (-count) or another test with the
		// same server config starts listed from the cache, and Start then
		// does not wait for the server's connect (docs/design.md §20).
		args = append(args, "--cache-dir", t.TempDir())
	}
	cmd := cliCommand(t, args...)
	cmd.Env = append(cmd.Env, env...)
	r := &listenRun{t: t, stderr: newNotifyingBuffer(), done: make(chan error, 1)}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd = cmd.Process
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM: requests in flight finish, the sessions close, every
		// server is disposed, and the process exits 0 with no child left.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("proxy exit after SIGTERM: %v, want 0", err)
			}
		case <-time.After(e2eDeadline):
			_ = cmd.Process.Kill()
			t.Errorf("proxy did not exit after SIGTERM")
		}
		pids := pidRE.FindAllStringSubmatch(r.stderr.String(), -1)
		if len(pids) == 0 {
			t.Errorf("no fixture process logged its start: nothing to check")
		}
		for _, m := range pids {
			if pid, _ := strconv.Atoi(m[1]); fixture.Alive(pid) {
				t.Errorf("fixture process %d outlived the proxy", pid)
			}
		}
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", r.stderr)
		}
	})
	r.stderr.waitFor(t, `"msg":"listening"`)
	m := listeningRE.FindStringSubmatch(r.stderr.String())
	if m == nil {
		t.Fatalf("no address in %s", r.stderr)
	}
	r.addr = m[1]
	return r
}

func (r *listenRun) connect(header http.Header) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "0"}, nil)
	hc := &http.Client{Transport: headerRT{header}}
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.addr + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
}

type headerRT struct{ h http.Header }

func (rt headerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.h {
		req.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestListenServesManyHosts: two host sessions at once over Streamable
// HTTP share the supervised servers; a token is required when set, and a
// cross-origin browser request is refused.
func TestListenServesManyHosts(t *testing.T) {
	t.Parallel()
	r := startListen(t, map[string]any{"mcpServers": map[string]any{"a": fixtureServer(t, "normal")}},
		[]string{"MCPKEEP_TEST_TOKEN=s3cret"}, "--auth-token-env", "MCPKEEP_TEST_TOKEN")
	auth := http.Header{"Authorization": {"Bearer s3cret"}}

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := r.connect(auth)
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "host" + string(rune('0'+i))}})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "host"+string(rune('0'+i)) {
				errs <- &mismatch{got}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("session: %v", err)
	}

	// No token, a wrong token: 401 with no detail.
	for _, h := range []http.Header{{}, {"Authorization": {"Bearer nope"}}} {
		req, _ := http.NewRequest("POST", "http://"+r.addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v: status %d, want 401", h, resp.StatusCode)
		}
	}
	if strings.Contains(r.stderr.String(), "s3cret") {
		t.Error("the token appears in the logs")
	}
	// Health and readiness beside /mcp, without the token; metrics with it.
	for _, c := range []struct {
		path string
		auth bool
		want int
	}{{"/healthz", false, 200}, {"/readyz", false, 200}, {"/metrics", false, 401}, {"/metrics", true, 200}} {
		req, _ := http.NewRequest("GET", "http://"+r.addr+c.path, nil)
		if c.auth {
			req.Header.Set("Authorization", "Bearer s3cret")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s (auth %v): %d %s, want %d", c.path, c.auth, resp.StatusCode, body, c.want)
		}
		if c.path == "/metrics" && c.auth && !strings.Contains(string(body), `mcpkeep_requests_total{method="tools/call",result="ok",server="a"} 2`) {
			t.Errorf("metrics do not count the two calls:\n%s", body)
		}
	}
	// A browser page of another origin: refused.
	req, _ := http.NewRequest("POST", "http://"+r.addr+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin request: status %d, want 403", resp.StatusCode)
	}
}

type mismatch struct{ got string }

func (m *mismatch) Error() string { return "echo returned " + m.got }

// TestListenFlagsChecked: off loopback a token is required; the flags
// that need --listen say so.
func TestListenFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "--listen"},
		{[]string{"--stdio"}, "--stdio"},
		{[]string{"--auth-token-env", "X"}, "--auth-token-env"},
		{[]string{"--listen", "127.0.0.1:0", "--auth-token-env", "MCPKEEP_SURELY_UNSET"}, "MCPKEEP_SURELY_UNSET"},
		{[]string{"--listen", "nonsense"}, "--listen"},
	} {
		code, _, errOut := runCLI(append([]string{"proxy", "--config", "x.json"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: code %d, stderr %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}
