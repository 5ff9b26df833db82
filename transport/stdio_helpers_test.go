//go:build unix

package transport_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// stdioTimeout bounds every wait of the stdio tests.
const stdioTimeout = 10 * time.Second

// Short graces keep the escalation tests fast.
const (
	testStdinGrace = 200 * time.Millisecond
	testTermGrace  = 200 * time.Millisecond
	testKillGrace  = 200 * time.Millisecond
)

// fixtureStdio is a Stdio running the fixture in mode.
func fixtureStdio(t *testing.T, mode string) *transport.Stdio {
	path, args, m := fixture.CommandEnv(mode)
	return &transport.Stdio{
		Command:    path,
		Args:       args,
		Env:        m,
		Server:     "fixture",
		StdinGrace: testStdinGrace,
		TermGrace:  testTermGrace,
		KillGrace:  testKillGrace,
	}
}

type pider interface{ Pid() int }

// open opens generation 1 of s and registers a cleanup that terminates it,
// waits for Gone and checks that no process of its group survived.
func open(t *testing.T, s *transport.Stdio) (transport.Generation, int) {
	t.Helper()
	g, err := s.Open(context.Background(), 1)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	pid := g.(pider).Pid()
	t.Cleanup(func() {
		g.Terminate()
		waitGone(t, g, s.TerminationWindow()+stdioTimeout)
		assertGroupGone(t, pid)
	})
	return g, pid
}

func waitGone(t *testing.T, g transport.Generation, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-g.Gone():
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("Gone not closed within %v (exit %+v)", within, g.Exit())
		return 0
	}
}

func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if fixture.GroupAlive(pgid) {
		t.Errorf("process group %d has live members after Gone", pgid)
	}
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "0"}, nil)
}

func connect(t *testing.T, g transport.Generation) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stdioTimeout)
	defer cancel()
	cs, err := newClient().Connect(ctx, g.Transport(), nil)
	if err != nil {
		t.Fatalf("Connect: %v (exit %+v)", err, g.Exit())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("empty result")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || res.IsError {
		return "", errors.New("not a text result")
	}
	return tc.Text, nil
}

// waitSession waits for the session to see its connection end.
func waitSession(t *testing.T, cs *mcp.ClientSession) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { cs.Wait(); close(done) }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(stdioTimeout):
		t.Fatal("session did not end")
		return 0
	}
}

// lineLog is a slog.Handler that collects the forwarded stderr lines and
// lets a test wait for one.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	attrs map[string]string // of the last record
	added chan struct{}     // signalled on every line
}

func newLineLog() *lineLog { return &lineLog{added: make(chan struct{}, 1)} }

func (l *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *lineLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineLogWith{l: l, attrs: as}
}
func (l *lineLog) WithGroup(string) slog.Handler { return l }
func (l *lineLog) Handle(_ context.Context, r slog.Record) error {
	return l.handle(r, nil)
}

func (l *lineLog) handle(r slog.Record, with []slog.Attr) error {
	if r.Message != "stderr" {
		return nil
	}
	attrs := map[string]string{}
	for _, a := range with {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, attrs["line"])
	l.attrs = attrs
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return nil
}

// waitLine waits for a forwarded line containing sub and returns it.
func (l *lineLog) waitLine(t *testing.T, sub string) string {
	t.Helper()
	deadline := time.After(stdioTimeout)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, sub) {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("no stderr line containing %q", sub)
		}
	}
}

type lineLogWith struct {
	l     *lineLog
	attrs []slog.Attr
}

func (w *lineLogWith) Enabled(context.Context, slog.Level) bool { return true }
func (w *lineLogWith) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineLogWith{l: w.l, attrs: append(append([]slog.Attr(nil), w.attrs...), as...)}
}
func (w *lineLogWith) WithGroup(string) slog.Handler { return w }
func (w *lineLogWith) Handle(_ context.Context, r slog.Record) error {
	return w.l.handle(r, w.attrs)
}
