//go:build replicas

package replicase2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/replicatest"
)

// servers is how many ledger servers each replica runs: one per host,
// so no server's request to a host is ambiguous (docs/design.md §16).
const servers = 6

// buildOnce builds the mcpkeep binary once per test process.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

func mcpkeepBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildOnce.err = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "mcpkeep-replicas-bin")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "mcpkeep")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "./cmd/mcpkeep")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// syncBuf is a log buffer written by a process's reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type replicaProc struct {
	id, addr string
	proc     *replicatest.Proc
	log      *syncBuf
}

// cluster is redis, N replicas and haproxy in front of them.
type cluster struct {
	t      *testing.T
	redis  *replicatest.Redis
	ledger string
	reps   []*replicaProc
	front  string // http://haproxy/mcp
}

// startCluster starts redis, n replicas (the built binary, one config,
// one key) and haproxy round robin in front of them.
func startCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	bin := mcpkeepBinary(t)
	rs := replicatest.StartRedis(t)
	dir := t.TempDir()
	c := &cluster{t: t, redis: rs, ledger: filepath.Join(dir, "ledger")}
	if err := os.Mkdir(c.ledger, 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srvs := map[string]any{}
	for i := range servers + taskServers {
		srvs[fmt.Sprintf("led%d", i)] = map[string]any{"command": self, "env": map[string]string{envLedger: c.ledger},
			"tasks": map[string]any{"mode": "always"}} // for hosts that opt in (tasks_test.go)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": srvs})
	cfgPath := filepath.Join(dir, "mcp.json")
	keyPath := filepath.Join(dir, "state.key")
	key := make([]byte, 32)
	key[0] = 42
	_ = os.WriteFile(cfgPath, cfg, 0o600)
	_ = os.WriteFile(keyPath, []byte(hex.EncodeToString(key)), 0o600)

	var backends []string
	for i := range n {
		r := &replicaProc{id: fmt.Sprintf("r%d", i), addr: "127.0.0.1:" + strconv.Itoa(replicatest.FreePort(t)), log: &syncBuf{}}
		args := append([]string{"proxy", "--config", cfgPath, "--listen", r.addr, "--store", rs.URL(),
			"--replica-id", r.id, "--state-key-file", keyPath, "--no-cache", "--log-format", "json"}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		r.proc = replicatest.Start(t, cmd, `"msg":"replica joined"`, 60*time.Second, r.log)
		t.Cleanup(func() { stopReplica(t, r) })
		c.reps = append(c.reps, r)
		backends = append(backends, r.addr)
	}
	lb := replicatest.StartHAProxy(t, backends)
	c.front = "http://" + lb.Addr + "/mcp"
	return c
}

// stopReplica SIGTERMs r (it leaves the set, disposes its servers and
// exits), SIGKILLing its process group after 15 s.
func stopReplica(t *testing.T, r *replicaProc) {
	select {
	case <-r.proc.Done():
		return // stopped by the test
	default:
	}
	p := r.proc.Cmd.Process
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-r.proc.Done():
	case <-time.After(15 * time.Second):
		t.Errorf("replica %s did not stop within 15 s of SIGTERM; log:\n%s", r.id, tail(r.log.String(), 2000))
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		<-r.proc.Done()
	}
}

// kill SIGKILLs replica i and its servers (a node lost).
func (c *cluster) kill(i int) {
	p := c.reps[i].proc.Cmd.Process
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	<-c.reps[i].proc.Done()
}

// doubleRuns counts the ids written to the ledger more than once.
func (c *cluster) doubleRuns() (runs, double int) {
	seen := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(c.ledger, "ledger-*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, id := range strings.Fields(string(data)) {
			seen[id]++
		}
	}
	for _, n := range seen {
		runs++
		if n > 1 {
			double++
		}
	}
	return runs, double
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
