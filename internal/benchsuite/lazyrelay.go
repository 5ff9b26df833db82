package benchsuite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The floor of a start on demand (section 9's idle row): a process that
// sits between the host and the fixture, as the proxy does, and starts
// the fixture only when the host's first bytes arrive, then only copies
// bytes both ways. The host's cold connect and first call through it pay
// what any relay that starts its server on demand pays on this machine
// (a third process to wake, a spawn from it, two more pipe crossings each
// way, for the handshake and the call alike) before it does any work.

// envLazyRelay makes the suite's binary the lazy relay (lazyRelayCall).
const envLazyRelay = "MCPKEEP_BENCH_LAZY_RELAY"

// lazyRelayReady is what the lazy relay writes to stderr once it waits.
const lazyRelayReady = "lazy relay ready"

func init() {
	if os.Getenv(envLazyRelay) == "" {
		return
	}
	os.Exit(lazyRelay())
}

// lazyRelay says it is ready on stderr, waits for the host's first bytes,
// then runs this binary again without envLazyRelay (so as the fixture its
// environment asks for), hands it those bytes, and copies stdin to the
// child's stdin and the child's stdout to stdout until the child exits.
func lazyRelay() int {
	os.Unsetenv(envLazyRelay)
	fmt.Fprintln(os.Stderr, lazyRelayReady)
	first := make([]byte, 64<<10)
	n, err := os.Stdin.Read(first)
	if err != nil {
		return 0 // the host went away before it said anything
	}
	return relayToSelf(first[:n], nil) // its stderr is the ready line's, read no further
}

// lazyRelayCall starts the lazy relay, waits until it is ready, and then
// times a host's connect and first echo call through it (the fixture
// starting on the way), as the direct host's cold connect and call are
// timed.
func lazyRelayCall(ctx context.Context) (time.Duration, error) {
	cmd := fixtureCmd(envLazyRelay + "=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stdin.Close()
			_ = cmd.Wait()
		}
	}
	defer stop()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stderr).ReadString('\n')
		if err == nil && !strings.Contains(line, lazyRelayReady) {
			err = fmt.Errorf("lazy relay said %q", line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, stderr) // until the relay exits
	}()
	select {
	case err := <-ready:
		if err != nil {
			return 0, fmt.Errorf("lazy relay: %w", err)
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return 0, ctx.Err()
	}
	h := &host{stderr: &tail{}, changed: make(chan struct{}, 1), progress: map[string][]arrival{}}
	t0 := time.Now()
	cs, err := h.client().Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("connect through the lazy relay: %w", err)
	}
	err = callEchoOnce(ctx, cs, "echo")
	d := time.Since(t0)
	cs.Close()
	stop()
	return d, err
}
