package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// rawPair is a RawConn (the client's side) and the server's side of an
// in-memory connection, with a reader standing in for the SDK's that
// records what it is handed.
type rawPair struct {
	raw    *transport.RawConn
	server mcp.Connection
	mu     sync.Mutex
	sdk    []jsonrpc.Message
	done   chan error
}

func newRawPair(t *testing.T) *rawPair {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	cc, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPair{raw: transport.NewRawConn(cc), server: sc, done: make(chan error, 1)}
	go func() {
		for {
			m, err := p.raw.Read(context.Background())
			if err != nil {
				p.done <- err
				return
			}
			p.mu.Lock()
			p.sdk = append(p.sdk, m)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		p.raw.Close()
		sc.Close()
		<-p.done
	})
	return p
}

func (p *rawPair) seen() []jsonrpc.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]jsonrpc.Message(nil), p.sdk...)
}

// serverRead reads the next message the server side gets.
func (p *rawPair) serverRead(t *testing.T) jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := p.server.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (p *rawPair) serverWrite(t *testing.T, raw string) {
	t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.server.Write(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

type callOut struct {
	res json.RawMessage
	err error
}

func (p *rawPair) call(ctx context.Context, params string, progress func(json.RawMessage)) (<-chan callOut, <-chan string) {
	out, tokens := make(chan callOut, 1), make(chan string, 1)
	go func() {
		res, err := p.raw.Call(ctx, "tools/call", func(token string) (json.RawMessage, error) {
			tokens <- token
			return json.RawMessage(params), nil
		}, progress)
		out <- callOut{res, err}
	}()
	return out, tokens
}

// TestRawCallAnsweredBesideTheSDK: a raw request's answer and progress go
// to it, in order; the SDK's reader gets everything else, and none of it.
func TestRawCallAnsweredBesideTheSDK(t *testing.T) {
	p := newRawPair(t)
	var got []string
	out, tokens := p.call(context.Background(), `{"name":"echo","arguments":{"text":"hi"}}`, func(params json.RawMessage) {
		got = append(got, string(params))
	})
	tok := <-tokens
	req, ok := p.serverRead(t).(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || string(req.Params) != `{"name":"echo","arguments":{"text":"hi"}}` {
		t.Fatalf("server got %+v", req)
	}
	id, _ := req.ID.Raw().(string)
	if id != tok || !strings.HasPrefix(id, "mcpkeep-raw-") {
		t.Fatalf("id %v, token %q", req.ID.Raw(), tok)
	}
	// Another client's progress and an SDK request's answer pass through.
	p.serverWrite(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpkeep-1-1","progress":1}}`)
	p.serverWrite(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"`+tok+`","progress":1,"total":2}}`)
	p.serverWrite(t, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	p.serverWrite(t, `{"jsonrpc":"2.0","id":"`+tok+`","result":{"content":[{"type":"text","text":"hi"}]}}`)
	o := <-out
	if o.err != nil || string(o.res) != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Fatalf("call = %s, %v", o.res, o.err)
	}
	if len(got) != 1 || !strings.Contains(got[0], `"total":2`) {
		t.Fatalf("progress = %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(p.seen()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	seen := p.seen()
	if len(seen) != 2 {
		t.Fatalf("the SDK's reader got %d messages, want the other progress and the SDK's answer", len(seen))
	}
	if r, ok := seen[0].(*jsonrpc.Request); !ok || !strings.Contains(string(r.Params), "mcpkeep-1-1") {
		t.Fatalf("first passed through: %+v", seen[0])
	}
	if r, ok := seen[1].(*jsonrpc.Response); !ok || r.ID.Raw() != int64(7) {
		t.Fatalf("second passed through: %+v", seen[1])
	}
}

func TestRawCallServerError(t *testing.T) {
	p := newRawPair(t)
	out, tokens := p.call(context.Background(), `{}`, nil)
	if tok := <-tokens; tok != "" {
		t.Fatalf("a token without progress: %q", tok)
	}
	req := p.serverRead(t).(*jsonrpc.Request)
	id, _ := req.ID.Raw().(string)
	p.serverWrite(t, `{"jsonrpc":"2.0","id":"`+id+`","error":{"code":-32602,"message":"unknown tool"}}`)
	o := <-out
	var je *jsonrpc.Error
	if !errors.As(o.err, &je) || je.Code != -32602 {
		t.Fatalf("err = %v", o.err)
	}
}

// TestRawCallCancelled: the server is told, and a late answer reaches
// nobody (not the SDK either).
func TestRawCallCancelled(t *testing.T) {
	p := newRawPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, _ := p.call(ctx, `{}`, nil)
	req := p.serverRead(t).(*jsonrpc.Request)
	cancel()
	o := <-out
	if !errors.Is(o.err, context.Canceled) {
		t.Fatalf("err = %v", o.err)
	}
	n, ok := p.serverRead(t).(*jsonrpc.Request)
	if !ok || n.Method != "notifications/cancelled" {
		t.Fatalf("server got %+v", n)
	}
	var cp mcp.CancelledParams
	if err := json.Unmarshal(n.Params, &cp); err != nil || cp.RequestID != req.ID.Raw() {
		t.Fatalf("cancelled %s (%v), want requestId %v", n.Params, err, req.ID.Raw())
	}
	id, _ := req.ID.Raw().(string)
	p.serverWrite(t, `{"jsonrpc":"2.0","id":"`+id+`","result":{}}`)
	p.serverWrite(t, `{"jsonrpc":"2.0","id":8,"result":{}}`)
	deadline := time.Now().Add(5 * time.Second)
	for len(p.seen()) < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if seen := p.seen(); len(seen) != 1 || seen[0].(*jsonrpc.Response).ID.Raw() != int64(8) {
		t.Fatalf("the SDK's reader got %+v", seen)
	}
}

// TestRawCallConnectionEnds: a call in flight fails with the end (io.EOF
// in its chain); a call after it is refused as never sent.
func TestRawCallConnectionEnds(t *testing.T) {
	p := newRawPair(t)
	out, _ := p.call(context.Background(), `{}`, nil)
	p.serverRead(t)
	p.server.Close()
	o := <-out
	if o.err == nil || errors.Is(o.err, mcp.ErrConnectionClosed) {
		t.Fatalf("in flight: err = %v, want the connection's end", o.err)
	}
	if err := <-p.done; !errors.Is(err, io.EOF) && !errors.Is(o.err, err) {
		t.Logf("reader ended with %v; call with %v", err, o.err)
	}
	p.done <- nil // for the cleanup
	_, err := p.raw.Call(context.Background(), "tools/call", func(string) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }, nil)
	if !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("after the end: err = %v, want mcp.ErrConnectionClosed", err)
	}
}

// TestRawConnCapturesSessionMeta: the SDK client's 2026-07-28 _meta fields,
// from its first request.
func TestRawConnCapturesSessionMeta(t *testing.T) {
	p := newRawPair(t)
	if p.raw.SessionMeta() != nil {
		t.Fatal("meta before any request")
	}
	id, _ := jsonrpc.MakeID(float64(1))
	req := &jsonrpc.Request{ID: id, Method: "tools/list", Params: json.RawMessage(`{"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` +
		mcp.MetaKeyClientCapabilities + `":{"roots":{}},"other":1}}`)}
	if err := p.raw.Write(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	p.serverRead(t)
	want := `"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientCapabilities + `":{"roots":{}}`
	if got := string(p.raw.SessionMeta()); got != want {
		t.Fatalf("meta = %s, want %s", got, want)
	}
}
