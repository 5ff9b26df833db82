package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Bounds of the harness's waits.
const (
	startWait = 15 * time.Second // a target's address appears (or accepts)
	stopGrace = 10 * time.Second // SIGTERM to exit, before SIGKILL
)

// A proc is a target process (a server, mcpkeep) whose output goes to a
// log file in the work directory.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the exit, after done
}

// start runs argv with stdout and stderr appended to logPath; each stderr
// line is also given to onLine (on one goroutine) until it returns true.
func start(name, logPath string, argv []string, onLine func(string) bool) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = f
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	// Its own process group: a child of the target (a stdio server under
	// mcpkeep) is the target's to end, and a Ctrl-C reaches the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			if onLine != nil && onLine(sc.Text()) {
				onLine = nil
			}
		}
		io.Copy(f, pr) // a line too long for the scanner: keep the rest
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-scanned
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL to its group after
// stopGrace. It returns once the process was reaped.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	// Whatever of its group outlived it (a stdio server mcpkeep did not
	// reap in time) goes too.
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// freePort is a loopback port nobody listens on now. The window until
// the target binds it is short, and the harness starts one server at a
// time (harness.bindMu); mcpkeep listens on port 0.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// waitAccept waits until addr accepts a TCP connection, the process
// exits, or ctx ends.
func waitAccept(ctx context.Context, p *proc, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it listened (%v); see %s", p.name, p.err, p.log)
		case <-ctx.Done():
			return fmt.Errorf("%s did not accept on %s within %v; see %s", p.name, addr, startWait, p.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listeningURL is the MCP URL of mcpkeep's "listening" log line (JSON).
func listeningURL(line string) (string, bool) {
	var rec struct {
		Msg string `json:"msg"`
		MCP string `json:"mcp"`
	}
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "listening" || rec.MCP == "" {
		return "", false
	}
	return rec.MCP, true
}

// startMcpkeep runs mcpkeep with args (which give --listen 127.0.0.1:0
// and --log-format json) and returns its MCP URL from its log.
func startMcpkeep(ctx context.Context, name, logPath string, argv []string) (*proc, string, error) {
	urls := make(chan string, 1)
	p, err := start(name, logPath, argv, func(line string) bool {
		u, ok := listeningURL(line)
		if ok {
			urls <- u
		}
		return ok
	})
	if err != nil {
		return nil, "", err
	}
	select {
	case u := <-urls:
		return p, u, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%s exited before it listened (%v); see %s", name, p.err, logPath)
	case <-time.After(startWait):
		p.stop()
		return nil, "", fmt.Errorf("%s logged no \"listening\" within %v; see %s", name, startWait, logPath)
	case <-ctx.Done():
		p.stop()
		return nil, "", errors.Join(ctx.Err(), fmt.Errorf("%s: stopped while starting", name))
	}
}
