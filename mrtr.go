package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi round trip of protocol 2026-07-28 (SEP-2322): a server that
// needs the host (sampling, elicitation, roots) answers tools/call,
// prompts/get or resources/read with input requests; the client fulfils
// them and sends the request again with the answers. The SDK's client does
// this itself, but answers a roots request from its own list only; the
// supervisor does it instead, so every input request reaches the host's
// handlers as a legacy server's request would (HostHandlers.ListRoots, or
// the roots of Options.Roots and SetRoots), with the same stale-generation
// and panic rules.

// maxRounds bounds one request's rounds, as the SDK does.
const maxRounds = 10

// multiRoundTrip is generation g's client sending middleware.
func (s *Supervisor) multiRoundTrip(g *generation) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" && method != "prompts/get" && method != "resources/read" {
				return next(ctx, method, req)
			}
			rs := rounds{server: s.opts.Name, method: method}
			for {
				res, err := next(ctx, method, req)
				if err = rs.answered(err); err != nil {
					return res, err
				}
				reqs, state, ok := inputRequests(res)
				if !ok {
					return res, nil
				}
				if err := rs.more(reqs); err != nil {
					return nil, err
				}
				answers, err := s.fulfil(ctx, g, reqs)
				if err != nil {
					return nil, &afterInput{err} // the host was being asked: never replayed
				}
				if req, err = withAnswers(req, answers, state); err != nil {
					return nil, err
				}
			}
		}
	}
}

// rounds counts one request's rounds and keeps their bounds, for both
// multi round trips: the SDK client's (multiRoundTrip) and CallRaw's.
type rounds struct {
	server, method string
	n, shed        int
}

// answered takes the outcome of the next round. A round after the first
// follows one the server answered and may have acted on (the person was
// asked): whatever ends it, the call is a sent failure, never replayed
// (docs/design.md §19), even of a tool that declares it safe to repeat.
// A round that could not be sent reads as the loss it is.
func (r *rounds) answered(err error) error {
	r.n++
	if err == nil || r.n == 1 {
		return err
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		err = fmt.Errorf("mcpkeep: server %q: %s: round %d could not be sent after round 1 was answered: %w: %w",
			r.server, r.method, r.n, ErrConnectionLost, err)
	}
	return &afterInput{err}
}

// errAfterInput matches the failure of a call after its first round was
// answered (afterInput), or while the host was asked for a round's input
// (fulfil): mayReplay never repeats one. A task's call lost so fails,
// outcome unknown, even for a replay-safe tool: no round goes to the next
// generation, neither with the server's requestState nor from round 1
// (docs/design.md §25).
var errAfterInput = errors.New("the host was asked for input in an earlier round")

// afterInput is a failure in a round after the first: err itself to
// every errors.Is and As, and errAfterInput.
type afterInput struct{ err error }

func (a *afterInput) Error() string   { return a.err.Error() }
func (a *afterInput) Unwrap() []error { return []error{a.err, errAfterInput} }

// more says whether another round may answer reqs: a server that sheds
// load (asks for no input) is asked again a few times, and no request
// goes past maxRounds.
func (r *rounds) more(reqs mcp.InputRequestMap) error {
	if len(reqs) == 0 {
		if r.shed++; r.shed >= 3 {
			return fmt.Errorf("mcpkeep: server %q: %s: the server asked for no input %d times: %w", r.server, r.method, r.shed, ErrInputRounds)
		}
	}
	if r.n >= maxRounds {
		return fmt.Errorf("mcpkeep: server %q: %s: still asking for input after %d rounds: %w", r.server, r.method, r.n, ErrInputRounds)
	}
	return nil
}

// inputRequests returns what a result asks for, if it asks for anything.
func inputRequests(res mcp.Result) (mcp.InputRequestMap, string, bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	case *mcp.ReadResourceResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	}
	return nil, "", false
}

// withAnswers is the next round's request: a copy of the params (the
// caller's are never changed) with the answers and the state to echo.
func withAnswers(req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &q}, nil
	case *mcp.GetPromptParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &q}, nil
	case *mcp.ReadResourceParams:
		q := *p
		q.InputResponses, q.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &q}, nil
	}
	return nil, fmt.Errorf("mcpkeep: no multi round trip for %T", req.GetParams())
}

// inputKey marks a host handler's context with the input request it
// answers (InputRequestOf).
type inputKey struct{}

type inputOf struct {
	id  string
	all mcp.InputRequestMap
}

// InputRequestOf tells a host handler called for a server's input request
// (a server on protocol 2026-07-28 asking by multi round trip) the
// request's key and the whole round's input requests, of which the
// handlers are called one by one. A host that is itself asked by multi
// round trip (the proxy's bridge, docs/design.md §24) can then ask all of
// them at once, under the server's own keys; ok is false for a legacy
// server's request. The map must not be changed.
func InputRequestOf(ctx context.Context) (key string, all mcp.InputRequestMap, ok bool) {
	v, ok := ctx.Value(inputKey{}).(inputOf)
	return v.id, v.all, ok
}

// ErrNotOffered: a server asked by input request for a capability the
// host does not have (a server that honours the capabilities it was told
// never does).
var ErrNotOffered = errors.New("the host does not offer this")

var errNotOffered = ErrNotOffered

// ErrInputRounds: a request's multi round trip went past its bound (the
// server kept asking, or asked for nothing, too often). A task whose call
// ends so fails (docs/design.md §25).
var ErrInputRounds = errors.New("too many rounds of input requests")

// fulfil answers each input request with the host's handlers.
func (s *Supervisor) fulfil(ctx context.Context, g *generation, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	h := &s.opts.Host
	out := make(mcp.InputResponseMap, len(reqs))
	for _, id := range sortedKeys(reqs) {
		var res mcp.InputResponse
		var err error
		ctx := context.WithValue(ctx, inputKey{}, inputOf{id: id, all: reqs})
		switch p := reqs[id].(type) {
		case *mcp.ElicitParams:
			if h.Elicit == nil {
				return nil, fmt.Errorf("mcpkeep: elicitation: %w", errNotOffered)
			}
			res, err = hostRequest(s, g, func() (*mcp.ElicitResult, error) { return h.Elicit(ctx, s.opts.Name, p) })
		case *mcp.CreateMessageParams:
			res, err = s.sample(ctx, g, withTools(p))
		case *mcp.CreateMessageWithToolsParams:
			res, err = s.sample(ctx, g, p)
		case *mcp.ListRootsParams:
			res, err = s.listRoots(ctx, g)
		default:
			return nil, fmt.Errorf("mcpkeep: unknown input request %T", p)
		}
		if err != nil {
			return nil, err
		}
		out[id] = res
	}
	return out, nil
}

func (s *Supervisor) sample(ctx context.Context, g *generation, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	h := &s.opts.Host
	switch {
	case h.CreateMessageWithTools != nil:
		return hostRequest(s, g, func() (*mcp.CreateMessageWithToolsResult, error) {
			return h.CreateMessageWithTools(ctx, s.opts.Name, p)
		})
	case h.CreateMessage != nil:
		base, err := withoutTools(p)
		if err != nil {
			return nil, err
		}
		res, err := hostRequest(s, g, func() (*mcp.CreateMessageResult, error) { return h.CreateMessage(ctx, s.opts.Name, base) })
		if err != nil {
			return nil, err
		}
		var content []mcp.Content
		if res.Content != nil {
			content = []mcp.Content{res.Content}
		}
		return &mcp.CreateMessageWithToolsResult{Meta: res.Meta, Content: content, Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil
	}
	return nil, fmt.Errorf("mcpkeep: sampling: %w", errNotOffered)
}

func (s *Supervisor) listRoots(ctx context.Context, g *generation) (*mcp.ListRootsResult, error) {
	if h := s.opts.Host.ListRoots; h != nil {
		return hostRequest(s, g, func() (*mcp.ListRootsResult, error) { return h(ctx, s.opts.Name) })
	}
	roots, have := s.stickyRoots()
	if !have {
		return nil, fmt.Errorf("mcpkeep: roots: %w", errNotOffered)
	}
	if roots == nil {
		roots = []*mcp.Root{}
	}
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// withTools and withoutTools convert between the two shapes of a sampling
// request (the host may offer either handler).
func withTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, &mcp.SamplingMessageV2{Content: []mcp.Content{m.Content}, Role: m.Role})
	}
	return &mcp.CreateMessageWithToolsParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens,
		Messages: msgs, Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}
}

func withoutTools(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, error) {
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, fmt.Errorf("mcpkeep: sampling with tools: %w (the host's handler takes no tools)", errNotOffered)
	}
	msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
	for _, m := range p.Messages {
		if len(m.Content) > 1 {
			return nil, fmt.Errorf("mcpkeep: sampling: a message of %d content blocks: %w (the host's handler takes one)", len(m.Content), errNotOffered)
		}
		var c mcp.Content
		if len(m.Content) == 1 {
			c = m.Content[0]
		}
		msgs = append(msgs, &mcp.SamplingMessage{Content: c, Role: m.Role})
	}
	return &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens,
		Messages: msgs, Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}, nil
}

func sortedKeys(m mcp.InputRequestMap) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
