package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default grace periods of a stdio generation's teardown.
const (
	DefaultStdinGrace = 2 * time.Second
	DefaultTermGrace  = 2 * time.Second
	DefaultKillGrace  = 1 * time.Second
)

// stdioSlack is what TerminationWindow adds to the graces: the bounded
// stderr drain after the group is gone, the group poll's granularity and
// scheduling noise.
const stdioSlack = 500 * time.Millisecond

// ErrUnsupported is wrapped by Open's error on platforms where mcpkeep
// cannot own a process group (everything but Linux, macOS and other unix).
var ErrUnsupported = errors.New("stdio transport not supported on this platform")

// Stdio is the Opener of a stdio MCP server: every generation spawns a
// fresh process in its own process group, speaks newline-delimited JSON-RPC
// over its stdin and stdout, and proves its end by reaping it and seeing its
// group empty. The zero value of each optional field is usable; fields are
// read at each Open and must not change while a generation is open.
//
// The Generation returned by Open also has a method Pid() int, the child's
// process id, which is also its process group id.
type Stdio struct {
	// Command is the program to run. A name without a path separator is
	// looked up in mcpkeep's own PATH (as os/exec does), not in Env's.
	Command string
	Args    []string
	// Env is added to the child's environment (and wins over what it
	// inherits). Values expand ${VAR} and $VAR from mcpkeep's environment
	// at each Open (os.Expand semantics; unset variables expand to "").
	// Values never appear in logs or errors.
	Env map[string]string
	// InheritEnv gives the child all of mcpkeep's environment. Without it
	// the child inherits only the variables BaseEnv keeps (the user, home,
	// PATH, locale, temp dir, proxies), so another server's secrets never
	// reach it; Env adds the rest.
	InheritEnv bool
	// Dir is the child's working directory; empty means mcpkeep's.
	Dir string
	// Logger receives the child's stderr line by line at Debug, with
	// attributes server and gen, and the teardown steps; nil discards.
	Logger *slog.Logger
	// Server names the server in log attributes.
	Server string
	// ProtocolVersion, when set, is the protocol version every session
	// asks for (the proxy gives its host's); empty lets the SDK negotiate.
	ProtocolVersion string
	// StdinGrace is how long the child (and its group) may take to exit
	// after stdin is closed, TermGrace after SIGTERM to the group, and
	// KillGrace after SIGKILL to the group. Zero or negative means the
	// default (2 s, 2 s, 1 s).
	StdinGrace, TermGrace, KillGrace time.Duration
	// Clock drives the grace timers; nil means the real clock. (Polling
	// for an empty process group always uses real time: the OS gives no
	// event for it.)
	Clock clock.Clock

	// hooks replace the process-group probe and signaller, and observe
	// the leader's reap, in internal tests; nil means the real ones.
	hooks *stdioHooks
}

// TerminationWindow bounds a generation's teardown: once Terminate was
// called, or the child exited on its own, Gone closes within this window
// or never. It is the sum of the three graces plus a small slack.
func (s *Stdio) TerminationWindow() time.Duration {
	stdin, term, kill := s.graces()
	return stdin + term + kill + stdioSlack
}

func (s *Stdio) graces() (stdin, term, kill time.Duration) {
	pick := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	return pick(s.StdinGrace, DefaultStdinGrace), pick(s.TermGrace, DefaultTermGrace), pick(s.KillGrace, DefaultKillGrace)
}

func (s *Stdio) clock() clock.Clock {
	if s.Clock == nil {
		return clock.New()
	}
	return s.Clock
}

func (s *Stdio) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// environ is the child's environment (ChildEnv of mcpkeep's).
func (s *Stdio) environ() []string { return ChildEnv(os.Environ(), s.InheritEnv, s.Env) }

// ChildEnv is the environment a stdio child gets when mcpkeep's is
// environ ("KEY=value", as os.Environ gives it): all of environ with
// inherit, else what BaseEnv keeps, then env expanded from environ (see
// ExpandEnv), in key order (os/exec keeps the last value of a duplicate
// key). The catalog cache keys a server by it: what the child sees is
// what its catalog may depend on (docs/design.md §20).
func ChildEnv(environ []string, inherit bool, env map[string]string) []string {
	out := slices.Clone(environ)
	if !inherit {
		out = BaseEnv(out)
	}
	exp := ExpandEnv(env, LookupIn(environ))
	keys := make([]string, 0, len(exp))
	for k := range exp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+exp[k])
	}
	return out
}

// LookupIn looks a variable up in environ as os.LookupEnv does in the
// process's environment (the last entry of a repeated key wins): a lookup
// for ExpandEnv.
func LookupIn(environ []string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
}

// ExpandEnv returns a copy of m whose values have ${VAR} and $VAR expanded
// with lookup, and "$$" turned into "$" (see expandVars; a variable lookup
// does not find expands to ""). A nil lookup means os.LookupEnv. Values
// are not expanded recursively and do not see each other.
func ExpandEnv(m map[string]string, lookup func(string) (string, bool)) map[string]string {
	if m == nil {
		return nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	get := func(k string) string {
		v, _ := lookup(k)
		return v
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = expandVars(v, get)
	}
	return out
}

// A StartError is Open's error when the command could not be started;
// nothing of the generation is left running. It unwraps to the cause, so
// errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, ErrUnsupported) work.
type StartError struct {
	Command string
	Err     error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("stdio: start %q: %v", e.Command, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// SessionOptions asks for ProtocolVersion; nil when none is set.
func (s *Stdio) SessionOptions() *mcp.ClientSessionOptions {
	if s.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: s.ProtocolVersion}
}
