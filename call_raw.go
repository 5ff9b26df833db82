package mcpkeep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The relay's call (docs/design.md §24). A proxy that hands a host's
// tools/call to a server has the arguments as JSON and wants the result as
// JSON; Call would decode the result into the SDK's types only for the
// proxy's own server to encode it again. CallRaw sends the call as a
// request of its own beside the SDK's session (transport.RawConn) on
// generations whose connection allows it (stdio, in memory), with the
// params the SDK's client would send (the name, the arguments, the
// progress token, and on 2026-07-28 the session's _meta fields and the
// log level), and returns the server's result as it came. Everything else
// is Call's: outages, loss, replay, the multi round trip of 2026-07-28.

// CallRaw is Call for a relay: args are the call's arguments as JSON (nil
// for none), and the result is the server's, as JSON. Where the
// generation's connection carries raw requests the result is never
// decoded (input requests of a 2026-07-28 server aside); elsewhere, and
// for the replay of a lost call, it is Call's result encoded. Outages,
// loss and replay are Call's.
func (s *Supervisor) CallRaw(ctx context.Context, tool string, args json.RawMessage, opts *CallOptions) (json.RawMessage, error) {
	level, done, err := s.beginCall(tool, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	w := readyWait{hb: newHeartbeat(opts)}
	defer w.stop()
	var typedArgs any
	if len(args) > 0 {
		typedArgs = args
	}
	for {
		g := s.live.Load()
		if g == nil {
			// An outage, or an idle server started for this request: wait
			// as Call waits, then go raw on the generation that serves.
			if err := s.awaitReady(ctx, opts, &w); err != nil {
				return nil, err
			}
			continue
		}
		if g.raw == nil || (hasHostCaps(ctx) && relayOf(opts) == nil) {
			// A host's own capabilities (WithHostCapabilities) are told
			// the server by the SDK client's sending middleware
			// (hostcaps.go), which the raw request does not pass; a
			// relay's raw call puts them in its own _meta (relayMeta,
			// task_relay.go), and must stay raw to read a task.
			break
		}
		res, sent, possible, err := s.callRawOn(ctx, g, tool, args, w.hb.progress(), level, relayOf(opts))
		if !possible {
			break
		}
		if sent || ctx.Err() != nil {
			if s.mayReplay(ctx, g, tool, err) {
				if tr := relayOf(opts); tr != nil {
					tr.Generation = 0 // the replay goes the typed way, without the extension
				}
				return encodeResult(s.callLoop(ctx, tool, typedArgs, opts, level, &w, err, g))
			}
			return res, err
		}
		// Not sent: the connection had just ended; wait for the loop to
		// end g, then go round again (as Call does).
		select {
		case <-g.ctx.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// Not on g's connection (HTTP), or not yet (a 2026-07-28 session the
	// SDK has not sent a request on): Call's way.
	return encodeResult(s.callLoop(ctx, tool, typedArgs, opts, level, &w, nil, nil))
}

// encodeResult is a typed result as the raw one a server would have sent.
func encodeResult(res *mcp.CallToolResult, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: encoding a tool's result: %w", err)
	}
	return data, nil
}

// callRawOn is generation.call for a raw call: sent as Call's; possible
// is false (nothing sent) when g cannot carry it yet.
func (s *Supervisor) callRawOn(ctx context.Context, g *generation, tool string, args json.RawMessage,
	progress func(*mcp.ProgressNotificationParams), level mcp.LoggingLevel, tr *TaskRelay) (_ json.RawMessage, sent, possible bool, _ error) {
	var meta []byte // the session's _meta fields, on 2026-07-28
	if g.modern {
		if meta = g.raw.SessionMeta(); meta == nil {
			return nil, false, false, nil
		}
	} else {
		level = "" // a legacy server takes its level from logging/setLevel
	}
	declared := false // the tasks extension, for a relay (task_relay.go)
	if tr != nil {
		// The server may answer with a task of its own. Session _meta
		// that does not decode (never: RawConn wrote it) leaves the call
		// a call.
		if m, err := relayMeta(meta, hostCapsOf(ctx), tr.Extension); err == nil {
			meta, declared = m, true
		}
	}
	sc, ok := g.begin(ctx)
	if !ok {
		return nil, false, true, nil
	}
	defer g.end(sc)
	var onProgress func(json.RawMessage)
	if progress != nil {
		onProgress = func(params json.RawMessage) {
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(params, &p) == nil {
				progress(&p)
			}
		}
	}
	call := rawToolCall{name: tool, args: args, meta: meta, level: level}
	var endTrace func(error)
	if ct := traceOf(ctx); ct != nil { // docs/design.md §27
		call.trace, endTrace = ct.attempt(s.opts.Name, g.n, "tools/call")
	}
	var res json.RawMessage
	var err error
	rs := rounds{server: s.opts.Name, method: "tools/call"}
	for {
		res, err = g.raw.Call(sc.ctx, "tools/call", call.params, onProgress)
		if err = rs.answered(serverAnswer(err)); err != nil {
			break
		}
		reqs, state, asks, derr := rawInputRequests(res)
		if derr != nil || !asks {
			err = derr
			break
		}
		if err = rs.more(reqs); err != nil {
			break
		}
		// The host's handlers get the request's context, as on Call's
		// way (the caller's values route it to the host that made the call).
		answers, ferr := s.fulfil(sc.ctx, g, reqs)
		if ferr != nil {
			err = &afterInput{ferr} // the host was being asked: never replayed (mrtr.go)
			break
		}
		if call.answers, err = json.Marshal(answers); err != nil {
			break
		}
		call.state = state
	}
	sent, err = g.settle(ctx, s.opts.Name, err)
	if endTrace != nil {
		endTrace(err)
	}
	if !sent {
		return nil, false, true, err
	}
	if declared {
		tr.Generation = g.n
	}
	return res, true, true, err
}

// relayOf is opts' TaskRelay, if any.
func relayOf(opts *CallOptions) *TaskRelay {
	if opts == nil {
		return nil
	}
	return opts.TaskRelay
}

// serverAnswer words a server's JSON-RPC error as the SDK's client does
// ("calling ...: "), and keeps one with the SDK's closing codes from
// reading as a connection that closed (see peerConn).
func serverAnswer(err error) error {
	if errors.Is(err, transport.ErrMalformedAnswer) {
		return fmt.Errorf("calling %q: %w", "tools/call", err) // as the SDK's client words it
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je == nil {
		return err
	}
	if je.Code == codeClientClosing || je.Code == codeServerClosing {
		err = &peerError{je}
	}
	return fmt.Errorf("calling %q: %w", "tools/call", err)
}

// rawToolCall builds the params of each round of a raw tools/call: what
// the SDK's client sends (CallToolParams).
type rawToolCall struct {
	name    string
	args    json.RawMessage
	meta    []byte           // the session's _meta fields (2026-07-28), or nil
	level   mcp.LoggingLevel // the request's log level (2026-07-28), or ""
	answers json.RawMessage  // the last round's input responses
	state   string
	trace   TraceContext // the caller's trace context (docs/design.md §27)
}

func (c *rawToolCall) params(token string) (json.RawMessage, error) {
	b := make([]byte, 0, 64+len(c.name)+len(c.args)+len(c.meta)+len(c.answers))
	b = append(b, `{"name":`...)
	b = transport.AppendJSONString(b, c.name)
	if len(c.args) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, c.args...)
	}
	if len(c.answers) > 0 {
		b = append(b, `,"inputResponses":`...)
		b = append(b, c.answers...)
		b = append(b, `,"requestState":`...)
		b = transport.AppendJSONString(b, c.state)
	}
	if token != "" || c.level != "" || len(c.meta) > 0 || !c.trace.IsZero() {
		b = append(b, `,"_meta":{`...)
		n := len(b)
		if token != "" {
			b = append(b, `"progressToken":`...)
			b = transport.AppendJSONString(b, token)
		}
		if c.level != "" {
			if len(b) > n {
				b = append(b, ',')
			}
			b = transport.AppendJSONString(b, mcp.MetaKeyLogLevel)
			b = append(b, ':')
			b = transport.AppendJSONString(b, string(c.level))
		}
		if len(c.meta) > 0 {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, c.meta...)
		}
		b = c.trace.appendJSON(b, len(b) > n)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// rawInputRequests reads what a raw result asks for, if it asks for
// anything (2026-07-28: "resultType": "input_required"). A result that
// asks for nothing is not decoded beyond its top level.
func rawInputRequests(res json.RawMessage) (mcp.InputRequestMap, string, bool, error) {
	if !bytes.Contains(res, []byte(`"inputRequests"`)) {
		return nil, "", false, nil
	}
	var top struct {
		InputRequests json.RawMessage `json:"inputRequests"`
	}
	if _, err := segjson.Parse(res, &top, segjson.DontMatchCaseInsensitiveStructFields|segjson.DontCopyRawMessage); err != nil {
		return nil, "", false, fmt.Errorf("mcpkeep: tools/call: the server's result: %w", err)
	}
	if len(top.InputRequests) == 0 || string(top.InputRequests) == "null" {
		return nil, "", false, nil
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, "", false, fmt.Errorf("mcpkeep: tools/call: the server's input requests: %w", err)
	}
	if r.InputRequests == nil {
		return nil, "", false, nil
	}
	return r.InputRequests, r.RequestState, true, nil
}
