package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relaying a server's own tasks (docs/design.md §25). A server that has
// the tasks extension itself keeps its tasks; the proxy only hands their
// ids to the host and the host's tasks/* back to the server. The library's
// part: a raw call that declares the extension (CallOptions.TaskRelay)
// and reports which generation answered it, and TaskRequest, which sends
// a tasks/* request to that generation and to no other: a later
// generation is another run of the server, which never heard of the task.

// TaskRelay, in CallOptions, asks CallRaw to declare an extension (the
// tasks extension) in the call's clientCapabilities, with the host's
// capabilities of the request (WithHostCapabilities), so the server may
// answer with a task of its own. It is declared only where the answer is
// read raw (stdio, in memory): the SDK's typed result would drop a task's
// fields, so a call that goes the typed way (HTTP, a replay) is sent
// without it and the server answers it as a call.
type TaskRelay struct {
	// Extension is the name declared in clientCapabilities.extensions.
	Extension string
	// Generation is set by CallRaw to the generation that answered a call
	// sent with the extension; 0 when the call was sent without it.
	Generation uint64
}

// ErrGenerationGone: the generation a request was meant for has ended
// (the server restarted, or was stopped), so whatever it held is gone.
var ErrGenerationGone = errors.New("the server's generation has ended")

// GenerationGoneError names the server and generation; it matches
// ErrGenerationGone.
type GenerationGoneError struct {
	Server     string
	Generation uint64
}

func (e *GenerationGoneError) Error() string {
	return fmt.Sprintf("mcpkeep: server %q: generation %d: %v", e.Server, e.Generation, ErrGenerationGone)
}

func (e *GenerationGoneError) Unwrap() error { return ErrGenerationGone }

// TaskRequest sends method (tasks/get, tasks/update, tasks/cancel) with
// params (without _meta: the session's are added, declaring ext) to
// generation gen of server, and returns its result as JSON. A server's
// JSON-RPC error is returned as a *jsonrpc.Error; a generation that is no
// longer the server's live one, or ends before it answers, is a
// *GenerationGoneError: the request is never sent to another generation.
func (p *Pool) TaskRequest(ctx context.Context, server string, gen uint64, method string, params json.RawMessage, ext string) (json.RawMessage, error) {
	sup, ok := p.Supervisor(server)
	if !ok {
		return nil, &GenerationGoneError{Server: server, Generation: gen}
	}
	return sup.TaskRequest(ctx, gen, method, params, ext)
}

// TaskRequest is Pool.TaskRequest for this supervisor's server.
func (s *Supervisor) TaskRequest(ctx context.Context, gen uint64, method string, params json.RawMessage, ext string) (json.RawMessage, error) {
	gone := &GenerationGoneError{Server: s.opts.Name, Generation: gen}
	g := s.live.Load()
	if g == nil || g.n != gen || g.raw == nil {
		// No raw connection: the task cannot have come from g (TaskRelay
		// declares the extension only on raw calls).
		return nil, gone
	}
	s.useBegin()
	defer s.endUse()
	var meta []byte
	if g.modern {
		meta = g.raw.SessionMeta()
	}
	meta, err := relayMeta(meta, nil, ext)
	if err != nil {
		return nil, err
	}
	body, err := withMetaMembers(params, meta)
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: %s: params: %w", method, err)
	}
	sc, ok := g.begin(ctx)
	if !ok {
		return nil, gone
	}
	defer g.end(sc)
	res, err := g.raw.Call(sc.ctx, method, func(string) (json.RawMessage, error) { return body, nil }, nil)
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &je):
		return nil, je
	case ctx.Err() != nil || errors.Is(err, transport.ErrMalformedAnswer):
		return nil, err // the caller's end, or the server's bad answer
	}
	// The connection failed under the request (written or not): g is
	// ending, and its tasks with it.
	return nil, gone
}

// HoldUse counts work that generation gen of the server does after the
// request that started it returned (a relayed task, docs/design.md §25)
// as a request in flight: an idle stop waits for it (§20) and
// Snapshot.InFlight shows it, until release is called or the generation
// ends, whichever comes first. release may be called more than once; a
// generation that is not the live one holds nothing.
func (s *Supervisor) HoldUse(gen uint64) (release func()) {
	g := s.live.Load()
	if g == nil || g.n != gen {
		return func() {}
	}
	s.useBegin()
	end := sync.OnceFunc(s.endUse)
	stop := context.AfterFunc(g.ctx, end)
	return func() {
		stop()
		end()
	}
}

// GenerationLive reports whether generation gen is the server's live one
// (a relayed task's handle counts as failed once it is not, docs/design.md
// §25: the next generation never heard of the task).
func (s *Supervisor) GenerationLive(gen uint64) bool {
	g := s.live.Load()
	return g != nil && g.n == gen && g.ctx.Err() == nil
}

// relayMeta is a request's _meta members (session, the members of a
// JSON object, or nil) with clientCapabilities declaring ext: the
// session's own narrowed to host's (docs/design.md §24), or host's where
// the session declares none (a legacy session: a 2026-aware server reads
// the key before its session's).
func relayMeta(session []byte, host *mcp.ClientCapabilities, ext string) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if len(session) > 0 {
		obj := make([]byte, 0, len(session)+2)
		obj = append(append(append(obj, '{'), session...), '}')
		if err := json.Unmarshal(obj, &m); err != nil {
			return nil, fmt.Errorf("mcpkeep: the session's _meta: %w", err)
		}
	}
	caps := map[string]any{}
	if own, ok := m[mcp.MetaKeyClientCapabilities]; ok {
		if err := json.Unmarshal(own, &caps); err != nil || caps == nil {
			caps = map[string]any{}
		}
		if host != nil {
			if n, ok := narrowCaps(caps, host).(map[string]any); ok {
				caps = n
			}
		}
	} else if host != nil {
		if b, err := json.Marshal(host); err == nil {
			_ = json.Unmarshal(b, &caps)
		}
	}
	exts, _ := caps["extensions"].(map[string]any)
	if exts == nil {
		exts = map[string]any{}
	}
	exts[ext] = map[string]any{}
	caps["extensions"] = exts
	b, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	m[mcp.MetaKeyClientCapabilities] = b
	obj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return obj[1 : len(obj)-1], nil
}

// withMetaMembers is params (a JSON object, or empty) with _meta set to
// the object of members meta.
func withMetaMembers(params json.RawMessage, meta []byte) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, err
		}
	}
	obj := make([]byte, 0, len(meta)+2)
	m["_meta"] = append(append(append(obj, '{'), meta...), '}')
	return json.Marshal(m)
}

// hostCapsOf is the host's capabilities on ctx (WithHostCapabilities).
func hostCapsOf(ctx context.Context) *mcp.ClientCapabilities {
	c, _ := ctx.Value(hostCapsKey{}).(*mcp.ClientCapabilities)
	return c
}
