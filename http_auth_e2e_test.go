package mcpkeep

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/trace"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of signing in (docs/design.md §22): a Supervisor over
// transport.HTTP with the oauth package's Handler, against the
// authorization-server fixture guarding a Streamable HTTP server on
// loopback, in both protocol eras. The person is played by the test:
// the headless way (the printed URL opened elsewhere, the redirected
// address pasted) and the loopback way (a browser on this machine).

// authRig is one supervised OAuth server and everything it said.
type authRig struct {
	t      *testing.T
	as     *authfixture.Listening
	store  *oauth.Store
	target oauth.Target
	sup    *Supervisor
	trans  *webFeed[Transition]
	logs   *webFeed[webLog]
	// said is every log record, trace line, error and printed line, for
	// the check that no token is among them.
	said *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fanout sends each record to every handler.
type fanout []slog.Handler

func (f fanout) Enabled(context.Context, slog.Level) bool { return true }
func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range f {
		_ = h.Handle(ctx, r.Clone())
	}
	return nil
}
func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(as)
	}
	return out
}
func (f fanout) WithGroup(g string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(g)
	}
	return out
}

func newAuthRig(t *testing.T, stateless bool, o authfixture.Options) *authRig {
	t.Helper()
	as, err := authfixture.Listen(authfixture.EchoServer(), stateless, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	r := &authRig{t: t, as: as, store: &oauth.Store{Dir: t.TempDir()},
		target: oauth.Target{Server: "remote", URL: as.URL},
		trans:  newWebFeed[Transition](), logs: newWebFeed[webLog](), said: &lockedBuffer{}}
	logger := slog.New(fanout{&webLogHandler{feed: r.logs},
		slog.NewJSONHandler(r.said, &slog.HandlerOptions{Level: slog.LevelDebug})})
	sup, err := New(Options{
		Name: "remote",
		Opener: &transport.HTTP{URL: as.URL, Server: "remote", ProbeInterval: webProbe, Logger: logger,
			OAuth: oauth.NewHandler(oauth.HandlerOptions{Target: r.target, Store: r.store})},
		Policy:         webPolicy,
		ConnectTimeout: 5 * time.Second,
		Logger:         logger,
		Sink:           tools.NewSet(tools.Limits{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.sup = sup
	tw := trace.NewWriter(r.said, TraceHeader(time.Now(), sup))
	sup.Subscribe(TraceObserver(tw))
	sup.Subscribe(r.trans.add)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), webWait)
		defer cancel()
		if err := sup.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
		_ = tw.Close()
	})
	return r
}

func (r *authRig) start() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	if err := r.sup.Start(ctx); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
}

// call calls echo and records what came back.
func (r *authRig) call(text string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	res, err := r.sup.Call(ctx, "echo", map[string]any{"text": text}, nil)
	if err != nil {
		r.said.Write([]byte("call error: " + err.Error() + "\n"))
		return "", err
	}
	return webText(res)
}

func (r *authRig) mustCall(text string) {
	r.t.Helper()
	if got, err := r.call(text); err != nil || got != "echo:"+text {
		r.t.Fatalf("echo(%q) = %q, %v", text, got, err)
	}
}

// signedOut waits until the supervisor stopped for a sign-in (from
// lost, as the released guard decided), and checks that it spent no
// retry and says what to run, in its snapshot and in a call's error.
func (r *authRig) signedOut(gen uint64) {
	r.t.Helper()
	tr := r.transition(gen, fsm.Lost, fsm.Exhausted)
	if tr.Guard != fsm.SignIn.Name {
		r.t.Fatalf("lost → exhausted under %q, want %q", tr.Guard, fsm.SignIn.Name)
	}
	snap := r.sup.State()
	if snap.Attempt != 0 || !errors.Is(snap.LastErr, ErrSignInRequired) {
		r.t.Fatalf("snapshot: attempt %d, last error %v; want 0 and sign-in required", snap.Attempt, snap.LastErr)
	}
	_, err := r.call("signed out")
	if !errors.Is(err, ErrSignInRequired) || !strings.Contains(err.Error(), "run: mcpkeep auth login remote") {
		r.t.Fatalf("call while signed out = %v", err)
	}
	r.logs.wait(r.t, "sign-in required logged", func(l webLog) bool {
		return l.Msg == "sign-in required" && strings.Contains(l.Attrs["err"], "run: mcpkeep auth login remote")
	})
	for _, x := range r.trans.all() {
		if x.To == fsm.BackingOff {
			r.t.Fatalf("a retry was spent: %+v", x)
		}
	}
}

func (r *authRig) transition(gen uint64, from, to fsm.State) Transition {
	r.t.Helper()
	return r.trans.wait(r.t, from.String()+" → "+to.String(), func(tr Transition) bool {
		return tr.Gen == gen && tr.From == from && tr.To == to
	})
}

// loginPasted signs in the headless way.
func (r *authRig) loginPasted() {
	r.t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := oauth.Login(ctx, oauth.LoginOptions{Target: r.target, Store: r.store, Out: outW, In: inR})
		outW.Close()
		errc <- err
	}()
	var pasting sync.WaitGroup
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		line := sc.Text()
		r.said.Write([]byte(line + "\n"))
		if u := strings.TrimSpace(line); strings.Contains(u, "/authorize?") {
			to, err := authfixture.Redirected(u)
			if err != nil {
				r.t.Errorf("authorize: %v", err)
			}
			pasting.Add(1)
			go func() { defer pasting.Done(); _, _ = io.WriteString(inW, to+"\n") }()
		}
	}
	err := <-errc
	inW.Close()
	pasting.Wait()
	if err != nil {
		r.t.Fatalf("Login (pasted): %v", err)
	}
}

// loginLoopback signs in with a browser on this machine.
func (r *authRig) loginLoopback() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	if _, err := oauth.Login(ctx, oauth.LoginOptions{Target: r.target, Store: r.store, Out: r.said,
		OpenBrowser: authfixture.Browse}); err != nil {
		r.t.Fatalf("Login (loopback): %v", err)
	}
}

// watch reconnects the supervisor whenever a sign-in stores a token, as
// the proxy does (oauth.Watch).
func (r *authRig) watch() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		oauth.Watch(ctx, oauth.WatchOptions{Dir: r.store.Dir, Interval: 10 * time.Millisecond}, func(url, _ string) {
			if url == r.target.URL {
				_ = r.sup.Reconnect()
			}
		})
	}()
	r.t.Cleanup(func() { cancel(); <-done })
}

// TestHTTPSignIn is the whole story, in both eras: a server that needs a
// sign-in stops at once (no retry spent) and says what to run; a headless
// sign-in reconnects it without a restart; an access token the server
// stops accepting is refreshed silently; a refresh the authorization
// server refuses stops it again, and a loopback sign-in brings it back.
// Nothing any of it logged, traced, printed or returned holds a token.
func TestHTTPSignIn(t *testing.T) {
	for _, era := range webEras {
		t.Run(era.name, func(t *testing.T) {
			r := newAuthRig(t, era.stateless, authfixture.Options{})
			r.watch()
			r.start()
			r.signedOut(1)

			r.loginPasted()
			gen := r.trans.wait(t, "reconnected after the sign-in", func(tr Transition) bool {
				return tr.From == fsm.Connecting && tr.To == fsm.Established
			}).Gen
			r.mustCall("signed in")

			before := r.as.Counts()
			r.as.ExpireAccess()
			r.mustCall("after expiry")
			if c := r.as.Counts(); c.Refreshes <= before.Refreshes || c.Unauthorized <= before.Unauthorized {
				t.Fatalf("counts %+v after expiry (before %+v): want a 401 and a refresh", c, before)
			}
			if s := r.sup.State(); s.State != fsm.Established || s.Gen != gen {
				t.Fatalf("after a silent refresh: %s gen %d, want established gen %d", s.State, s.Gen, gen)
			}

			r.as.RevokeRefresh()
			r.as.ExpireAccess()
			// The 401 that the refresh cannot answer: the call says what to do,
			// whether it failed on the 401 or as lost with its generation.
			if _, err := r.call("revoked"); !errors.Is(err, ErrSignInRequired) {
				t.Errorf("the call that met the refused refresh: %v, want the sign-in error", err)
			}
			r.signedOut(gen)
			if _, err := r.store.Load(r.target.URL, ""); !errors.Is(err, oauth.ErrNotSignedIn) {
				t.Fatalf("the refused token is still stored: %v", err)
			}

			r.loginLoopback()
			r.trans.wait(t, "reconnected after the second sign-in", func(tr Transition) bool {
				return tr.Gen > gen && tr.From == fsm.Connecting && tr.To == fsm.Established
			})
			r.mustCall("signed in again")

			said := r.said.String()
			if !strings.Contains(said, `"msg":"sign-in required"`) || !strings.Contains(said, "Sign in to remote") {
				t.Fatalf("the capture missed the logs or the prompt:\n%s", said)
			}
			for _, tr := range r.trans.all() {
				if tr.Err != nil {
					said += tr.Err.Error() + "\n"
				}
			}
			for _, tok := range r.as.Issued() {
				if strings.Contains(said, tok) {
					t.Fatalf("an issued token or client secret appears in the logs, trace, prompts or errors")
				}
			}
		})
	}
}

// all returns a copy of every item so far.
func (f *webFeed[T]) all() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]T(nil), f.items...)
}

func webText(res *mcp.CallToolResult) (string, error) {
	if len(res.Content) == 0 {
		return "", errors.New("empty result")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", errors.New("not a text result")
	}
	return tc.Text, nil
}

// TestHTTPSignInStrictStart: a strict Start of a server that needs a
// sign-in returns the sign-in error, naming the command to run, not the
// closed connection the SDK saw.
func TestHTTPSignInStrictStart(t *testing.T) {
	for _, era := range webEras {
		t.Run(era.name, func(t *testing.T) {
			as, err := authfixture.Listen(authfixture.EchoServer(), era.stateless, authfixture.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer as.Close()
			target := oauth.Target{Server: "remote", URL: as.URL}
			sup, err := New(Options{
				Name: "remote",
				Opener: &transport.HTTP{URL: as.URL, Server: "remote", ProbeInterval: webProbe,
					OAuth: oauth.NewHandler(oauth.HandlerOptions{Target: target, Store: &oauth.Store{Dir: t.TempDir()}})},
				Policy: webPolicy, ConnectTimeout: 5 * time.Second, FailOnStartupError: true,
				Sink: tools.NewSet(tools.Limits{}),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), webWait)
			defer cancel()
			err = sup.Start(ctx)
			if !errors.Is(err, ErrSignInRequired) || !strings.Contains(err.Error(), "mcpkeep auth login remote") {
				t.Errorf("strict Start: %v, want the sign-in error", err)
			}
			_ = sup.Dispose(ctx)
		})
	}
}
