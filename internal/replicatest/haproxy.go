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
// a request whose connection to a server failed redispatched to
// another (it never reached the first), and http-no-delay: without it
// haproxy holds a streamed response's partial frames (MSG_MORE) and an
// event of a legacy host's stream (a server's request to the host)
// arrives some 200 ms late. It is stopped when t ends.
func StartHAProxy(t testing.TB, backends []string) *HAProxy {
	t.Helper()
	Need(t, "haproxy", "haproxy")
	h, err := LaunchHAProxy(t.TempDir(), backends)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Kill)
	return h
}

// LaunchHAProxy is StartHAProxy without a test (its config written in
// dir); the caller kills it.
func LaunchHAProxy(dir string, backends []string) (*HAProxy, error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return nil, fmt.Errorf("haproxy %w (apt-get install -y haproxy)", ErrMissing)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
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
    option http-no-delay
frontend mcp
    bind 127.0.0.1:%d
    default_backend replicas
backend replicas
    balance roundrobin
`, port)
	for i, addr := range backends {
		fmt.Fprintf(&b, "    server r%d %s check inter 300ms fall 1 rise 2\n", i, addr)
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start haproxy: %w", err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// haproxy says nothing when it listens: dial until it answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return &HAProxy{Proc: p, Addr: addr}, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("haproxy exited: %v", cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("haproxy does not listen on %s within 10s", addr)
		}
	}
}
