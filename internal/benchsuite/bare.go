package benchsuite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// The floor of a hop (section 7): a process that only copies bytes
// between the host and the fixture, as fast as Go's io.Copy does it, with
// no JSON-RPC at all. What it adds to a call is what any relay process
// pays on this machine (two more pipe crossings, the wake-ups of a third
// process), before it does any work: the part of the proxy's hop no code
// of mcpkeep's can remove.

// envBareRelay makes the suite's binary the bare relay (bareRelayCmd).
const envBareRelay = "MCPKEEP_BENCH_BARE_RELAY"

func init() {
	if os.Getenv(envBareRelay) == "" {
		return
	}
	os.Exit(bareRelay())
}

// bareRelay runs this binary again without envBareRelay (so as the
// fixture its environment asks for) and copies stdin to the child's
// stdin and the child's stdout to stdout until the child exits.
func bareRelay() int {
	os.Unsetenv(envBareRelay)
	return relayToSelf(nil, os.Stderr)
}

// relayToSelf runs this binary again with its arguments (its environment
// now asks for the fixture; its stderr to stderr, nil: none), hands it
// first, then copies stdin to the child's stdin and the child's stdout to
// stdout until the child exits: the bare and the lazy relays' whole work.
func relayToSelf(first []byte, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		if _, err := in.Write(first); err == nil {
			_, _ = io.Copy(in, os.Stdin)
		}
		in.Close() // the host hung up: so does the fixture's stdin
	}()
	_, _ = io.Copy(os.Stdout, out)
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// bareRelayCmd runs the fixture behind the bare relay, with env added.
func bareRelayCmd(env ...string) *exec.Cmd {
	cmd := fixtureCmd(env...)
	cmd.Env = append(cmd.Env, envBareRelay+"=1")
	return cmd
}

// hopBlock is how many calls each path makes in one block of the hop's
// interleaved runs.
const hopBlock = 100

// openBare connects a host of its own to the fixture through the bare
// relay and warms it up as the other paths are.
func openBare(ctx context.Context) (*path, error) {
	cctx, cancel := within(ctx)
	defer cancel()
	h, err := connectHost(cctx, bareRelayCmd(), "")
	if err != nil {
		return nil, err
	}
	bare := &path{name: "bare relay", h: h}
	for range 50 {
		if _, err := bare.call(ctx, "echo", echoCall); err != nil {
			h.close()
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return bare, nil
}
