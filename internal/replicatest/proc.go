package replicatest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FreePort returns a loopback port nobody listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a started helper process.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Kill SIGKILLs the process and waits for it.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Start starts cmd and waits (at most within) for a line of its output
// containing ready; its output is copied to log (nil: discarded). The
// process is killed when t ends.
func Start(t testing.TB, cmd *exec.Cmd, ready string, within time.Duration, log io.Writer) *Proc {
	t.Helper()
	p, err := Launch(cmd, ready, within, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Launch is Start for a caller without a test: the caller kills it.
func Launch(cmd *exec.Cmd, ready string, within time.Duration, log io.Writer) (*Proc, error) {
	if log == nil {
		log = io.Discard
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(p.done)
	}()
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			_, _ = log.Write(append(sc.Bytes(), '\n'))
			if !sent && seen.Len() < 8192 {
				seen.WriteString(sc.Text() + "\n")
			}
			if !sent && strings.Contains(sc.Text(), ready) {
				found <- ""
				sent = true
			}
		}
		if !sent {
			found <- seen.String()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case out := <-found:
		if out != "" {
			p.Kill()
			return nil, fmt.Errorf("%s exited before %q:\n%s", cmd.Path, ready, out)
		}
	case <-time.After(within):
		p.Kill()
		return nil, fmt.Errorf("%s: no %q within %v", cmd.Path, ready, within)
	}
	return p, nil
}

// Redis is a started redis-server.
type Redis struct {
	*Proc
	Addr string // 127.0.0.1:port
}

// URL is the store URL of r (database 0).
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// StartRedis starts Debian's redis-server on a free loopback port, with
// no persistence, stopped when t ends.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	Need(t, "redis-server", "redis-server")
	r, err := LaunchRedis(t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Kill)
	return r
}

// ErrMissing: a part is not installed.
var ErrMissing = errors.New("not on PATH")

// LaunchRedis is StartRedis without a test (dir: its working
// directory); the caller kills it.
func LaunchRedis(dir string, extra ...string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server %w (apt-get install -y redis-server)", ErrMissing)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--dir", dir}, extra...)
	p, err := Launch(exec.Command(bin, args...), "Ready to accept connections", 20*time.Second, nil)
	if err != nil {
		return nil, err
	}
	return &Redis{Proc: p, Addr: "127.0.0.1:" + strconv.Itoa(port)}, nil
}
