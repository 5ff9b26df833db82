//go:build linux

package faultsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// ttyConnectTimeout is the connect timeout of the host under a terminal:
// a server stopped by SIGTTIN hangs until it.
const ttyConnectTimeout = 4 * time.Second

// ttyResult is what the tty-host role reports on its stdout.
type ttyResult struct {
	Elapsed time.Duration
	Err     string
	Tail    string
	Gone    bool
}

var (
	_ = role("tty-server", ttyServer)
	_ = role("tty-host", ttyHost)
)

// ttyServer is a stdio server that asks for a password on /dev/tty first,
// as ssh, sudo and pinentry do.
func ttyServer() {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tty-server: %v\n", err)
		os.Exit(1)
	}
	tty.WriteString("password: ")
	bufio.NewReader(tty).ReadString('\n')
	os.Exit(1)
}

// ttyHost runs with a pty as its controlling terminal, in its terminal's
// foreground group, as mcpkeep does when started from a shell: it starts
// the tty-server through transport.Stdio and connects to it.
func ttyHost() {
	s := &transport.Stdio{
		Command:    testExe(),
		Args:       []string{"-test.run=^$"},
		Env:        roleEnv("tty-server"),
		StdinGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond, KillGrace: 200 * time.Millisecond,
	}
	var res ttyResult
	start := time.Now()
	g, err := s.Open(context.Background(), 1)
	if err != nil {
		res.Err = err.Error()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), ttyConnectTimeout)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "tty-host", Version: "1"}, nil).Connect(ctx, g.Transport(), nil)
		cancel()
		res.Elapsed = time.Since(start)
		if err == nil {
			cs.Close()
			res.Err = "connected"
		} else {
			res.Err = err.Error()
		}
		g.Terminate()
		select {
		case <-g.Gone():
			res.Gone = true
		case <-time.After(s.TerminationWindow()):
		}
		res.Tail = g.Exit().StderrTail
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

// openPty opens a pseudo-terminal pair.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open /dev/pts/%d: %v", n, err)
	}
	return m, s
}

// TestFaultTTYServerFailsFast (docs/design.md §8): under a terminal, a
// stdio server that reads /dev/tty fails at once, with its stderr naming
// the tty, instead of being stopped by SIGTTIN until the connect timeout:
// servers run in a session of their own, without a controlling terminal.
func TestFaultTTYServerFailsFast(t *testing.T) {
	master, slave := openPty(t)
	defer master.Close()
	// The master must be drained, or a server writing to the terminal
	// could block on a full buffer.
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()

	cmd := exec.Command(testExe(), "-test.run=^$")
	cmd.Env = roleEnviron("tty-host")
	cmd.Stdin = slave
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tty-host: %v; stderr:\n%s", err, errb.String())
		}
	case <-time.After(ttyConnectTimeout + 10*time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("tty-host did not finish; stderr:\n%s", errb.String())
	}
	var res ttyResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("tty-host's report %q: %v; stderr:\n%s", out.String(), err, errb.String())
	}
	t.Logf("connect failed after %v: %s; stderr tail %q", res.Elapsed, res.Err, res.Tail)
	if res.Err == "connected" || res.Err == "" {
		t.Fatalf("connect succeeded with a server that exits")
	}
	if res.Elapsed > ttyConnectTimeout/4 {
		t.Errorf("connect failed after %v, want well under the connect timeout %v (the server was stopped on the tty?)", res.Elapsed, ttyConnectTimeout)
	}
	if !strings.Contains(res.Tail, "/dev/tty") || !strings.Contains(res.Tail, "no such device or address") {
		t.Errorf("stderr tail %q does not name the tty error", res.Tail)
	}
	if !res.Gone {
		t.Errorf("the server's generation did not end within its termination window")
	}
}
