package mcpkeep

import (
	"context"
	"fmt"

	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The goroutines of a generation. Each reports to the loop by message,
// tagged with the generation, and never touches the lifecycle.

// attempt runs on its own goroutine: open, handshake, initial tools/list.
// When the loop has ended before the attempt could report (a drain that
// timed out), the attempt ends what it opened itself (R26).
func (s *Supervisor) attempt(g *generation) {
	defer s.wg.Done()
	tg, err := s.opts.Opener.Open(g.ctx, g.n)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, err: fmt.Errorf("open: %w", err)})
		return
	}
	if !s.send(message{kind: mOpened, gen: g.n, tg: tg}) {
		abort(tg)
		<-tg.Gone() // the name's quarantine waits for this attempt
		return
	}

	client := mcp.NewClient(s.opts.Client, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			// The SDK runs this on the connection's notification queue:
			// hand it to the loop and return; never call back into the SDK.
			s.sendOrAbandon(g.ctx, message{kind: mToolsChanged, gen: g.n})
		},
	})
	var sopts *mcp.ClientSessionOptions
	if so, ok := s.opts.Opener.(transport.SessionOptioner); ok {
		sopts = so.SessionOptions()
	}
	cs, err := client.Connect(g.ctx, tg.Transport(), sopts)
	if err != nil {
		s.send(message{kind: mAttempt, gen: g.n, err: fmt.Errorf("handshake: %w", err)})
		return
	}
	m := message{kind: mAttempt, gen: g.n, cs: cs}
	if m.defs, err = s.listTools(g.ctx, cs); err != nil {
		m.defs, m.err = nil, fmt.Errorf("initial tools/list: %w", err)
	}
	if !s.send(m) {
		// Nobody will close this session or end the transport.
		_ = cs.Close()
		abort(tg)
		<-tg.Gone()
	}
}

// listTools fetches every page and builds the server's definitions.
func (s *Supervisor) listTools(ctx context.Context, cs *mcp.ClientSession) ([]tools.Tool, error) {
	var list []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return tools.Build(s.opts.Name, list, s.opts.Namer, s.opts.Limits)
}

// syncTools is one tools sync of an established generation.
func (s *Supervisor) syncTools(g *generation) {
	defer s.wg.Done()
	defs, err := s.listTools(g.ctx, g.cs)
	if h := s.testHooks; h != nil && h.syncDone != nil {
		h.syncDone(g.n)
	}
	s.send(message{kind: mSyncDone, gen: g.n, defs: defs, err: err})
}

// watchSession reports the end of an established generation's session.
func (s *Supervisor) watchSession(g *generation) {
	defer s.wg.Done()
	err := g.cs.Wait()
	if err == nil {
		// A clean end of the stream says nothing; the transport may know
		// why (the child's exit status, the HTTP failure).
		err = errSessionEnded
		if st := g.tg.Exit().Status; st != "" {
			err = fmt.Errorf("%w: %s", errSessionEnded, st)
		}
	}
	s.send(message{kind: mSessionEnded, gen: g.n, err: err})
}

// watchGone reports the transport's close signal, or gives up when the
// supervisor finishes (a drain that timed out must not leak watchers).
func (s *Supervisor) watchGone(g *generation) {
	defer s.wg.Done()
	select {
	case <-g.tg.Gone():
		s.send(message{kind: mGone, gen: g.n})
	case <-s.stop:
	}
}

// closeSession runs ClientSession.Close, which waits for in-flight calls;
// the generation's context was cancelled first, so it stays bounded.
func (s *Supervisor) closeSession(g *generation) {
	defer s.wg.Done()
	_ = g.cs.Close()
	s.send(message{kind: mCloseReturned, gen: g.n})
}

// testHooks are the race table's seams into goroutines the loop does not
// own; every field is optional.
type testHooks struct {
	// startWait runs in Start after the loop started, before Start waits
	// for the activation (R23).
	startWait func()
	// syncDone runs in a sync goroutine before it reports (R21).
	syncDone func(gen uint64)
}
