package replicatest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HAProxy is a started haproxy.
type HAProxy struct {
	*Proc
	Addr string // the frontend, 127.0.0.1:port
}

// StartHAProxy starts Debian's haproxy in front of backends (host:port
// each): HTTP, round robin per request, no affinity of any kind (no
// cookie, no hash, no prefer-last-server), health checks every 300 ms,
// and a request whose connection to a server failed redispatched to
// another (it never reached the first). It is stopped when t ends.
func StartHAProxy(t testing.TB, backends []string) *HAProxy {
	t.Helper()
	bin := Need(t, "haproxy", "haproxy")
	port := FreePort(t)
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
    timeout http-keep-alive 10s
    retries 2
    option redispatch
frontend mcp
    bind 127.0.0.1:%d
    default_backend replicas
backend replicas
    balance roundrobin
`, port)
	for i, addr := range backends {
		fmt.Fprintf(&b, "    server r%d %s check inter 300ms fall 1 rise 2\n", i, addr)
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Kill)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// haproxy says nothing when it listens: dial until it answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-p.done:
			t.Fatalf("haproxy exited: %v", cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not listen on %s within 10s", addr)
		}
	}
	return &HAProxy{Proc: p, Addr: addr}
}
