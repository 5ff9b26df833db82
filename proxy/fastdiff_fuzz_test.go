package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path agrees with the typed path (docs/design.md §19, §24):
// whatever a server answers a tools/call with (valid, truncated, without
// a result, of the wrong types, invalid UTF-8, huge), a host gets the
// same verdict through the fast path (the result relayed as sent) as
// through the SDK's typed path (TypedRelay): the same result, or an error
// of the same class, on both protocol eras.

// diffMark is the echo that the server's answer is replaced for.
const diffMark = "fuzz-answer-here"

// diffEnv is one proxy (fast or typed) on one era, its server's answer
// to a call of files__echo carrying diffMark replaced by *answer.
type diffEnv struct {
	name   string
	srv    *Server
	cs     *mcp.ClientSession
	answer *atomic.Pointer[jsonrpc.Response]
	// invalid counts the answers written to the host that hold invalid
	// UTF-8 (a host's decoder may refuse them; the SDK's never writes one).
	invalid atomic.Int64
}

// wireCheck is the host's transport, checking what the proxy writes.
type wireCheck struct {
	mcp.Transport
	e *diffEnv
}

func (w wireCheck) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return wireCheckConn{c, w.e}, nil
}

type wireCheckConn struct {
	mcp.Connection
	e *diffEnv
}

func (c wireCheckConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok && !utf8.Valid(r.Result) {
		c.e.invalid.Add(1)
	}
	return c.Connection.Write(ctx, m)
}

func newDiffEnv(tb testing.TB, era string, typed bool, answer *atomic.Pointer[jsonrpc.Response]) *diffEnv {
	tb.Helper()
	return newDiffEnvOn(tb, era, typed, false, answer)
}

// newDiffEnvOn is newDiffEnv with the host over Streamable HTTP when
// overHTTP (the front's stateless handler, or its fast path over HTTP:
// httpfast.go); the server then speaks 2026-07-28 as a stateless HTTP
// server does, and the wire is not checked for invalid UTF-8 (the SDK's
// client transport is the host's).
func newDiffEnvOn(tb testing.TB, era string, typed, overHTTP bool, answer *atomic.Pointer[jsonrpc.Response]) *diffEnv {
	tb.Helper()
	e := &diffEnv{name: fmt.Sprintf("%s typed=%v http=%v", era, typed, overHTTP), answer: answer}
	m := transport.NewMemory("echo")
	m.Fault = func(uint64) transport.Fault {
		return transport.Fault{Rewrite: func(msg jsonrpc.Message) jsonrpc.Message {
			r, ok := msg.(*jsonrpc.Response)
			if !ok || !bytes.Contains(r.Result, []byte(diffMark)) {
				return msg
			}
			a := *answer.Load()
			a.ID = r.ID
			return &a
		}}
	}
	cfg, _, err := config.Parse(mustJSON(map[string]any{"mcpServers": map[string]any{"files": map[string]any{"command": "mem"}}}), nil)
	if err != nil {
		tb.Fatal(err)
	}
	opts := Options{TypedRelay: typed}
	opts.Pool.Opener = func(config.Server) (transport.Opener, error) { return pinned{m, era}, nil }
	e.srv = New(cfg, opts)
	var st, ct mcp.Transport = mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	if overHTTP {
		h, err := e.srv.Handler(HTTPOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		hs := httptest.NewServer(h)
		tb.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
		})
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1}
		served <- nil
	} else {
		go func() { served <- e.srv.Serve(ctx, wireCheck{st, e}) }()
	}
	tb.Cleanup(func() {
		if e.cs != nil {
			_ = e.cs.Close()
		}
		cancel()
		<-served
		sctx, stop := context.WithTimeout(context.Background(), testDeadline)
		defer stop()
		if err := e.srv.Shutdown(sctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
	})
	cctx, stop := context.WithTimeout(ctx, testDeadline)
	defer stop()
	if e.cs, err = mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).
		Connect(cctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: era}); err != nil {
		tb.Fatalf("%s: host connect: %v", e.name, err)
	}
	select {
	case <-e.srv.Applied():
	case <-cctx.Done():
		tb.Fatalf("%s: the server never started", e.name)
	}
	// A request the SDK serves first (on 2026-07-28 the fast path takes
	// a call only with the _meta fields of one).
	if _, err := e.cs.ListTools(cctx, nil); err != nil {
		tb.Fatalf("%s: tools/list: %v", e.name, err)
	}
	return e
}

// verdict is what a host makes of one call: the result as JSON, the
// tool's error as JSON, or the class of the request's failure.
func (e *diffEnv) verdict(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	res, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]any{"text": diffMark}})
	if ctx.Err() != nil {
		tb.Fatalf("%s: the call never returned", e.name)
	}
	if n := e.invalid.Swap(0); n > 0 {
		tb.Fatalf("%s: %d answers with invalid UTF-8 written to the host", e.name, n)
	}
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &wire):
		return fmt.Sprintf("JSON-RPC error %d: %s", wire.Code, wire.Message)
	case err != nil:
		return "failed: " + err.Error()
	}
	data, merr := json.Marshal(res)
	if merr != nil {
		tb.Fatalf("%s: encoding the host's result: %v", e.name, merr)
	}
	if res.IsError {
		return "tool error: " + string(data)
	}
	return "result: " + string(data)
}

// diffSeeds are server answers: what follows `"id":N` in the message.
func diffSeeds() []string {
	const meta = `"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memory","version":"1"}}`
	text := func(s string) string {
		return `,"result":{"content":[{"type":"text","text":"` + s + `"}],` + meta + `}}`
	}
	return []string{
		text("plain"),
		`,"result":{"content":[{"type":"text","text":"legacy"}]}}`,
		text("x <y> & \u00e9 \\ud83d\\ude00"),
		`}`,               // no result
		`,"result":null}`, // null
		`,"result":"x"}`,  // a string
		`,"result":[]}`,   // an array
		`,"result":{}}`,   // no content
		`,"result":{"content":[{"type":"text","text":"trunc`, // truncated: the connection's
		`,"result":{"content":"x"}}`,                         // wrong types
		`,"result":{"content":[null]}}`,
		`,"result":{"content":[{"type":"text","text":5}]}}`,
		`,"result":{"content":[{"type":"nope"}]}}`,
		`,"result":{"content":[{"type":"image","data":"!!","mimeType":"image/png"}]}}`,
		`,"result":{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}}`,
		`,"result":{"content":[{"type":"audio","data":"aGl=","mimeType":"audio/wav","_meta":{"k":1}}]}}`, // non-zero padding bits
		`,"result":{"content":[{"type":"image","data":"aG\r\nk=","mimeType":"image/png"}]}}`,             // escapes: the SDK skips CR LF
		`,"result":{"content":[{"type":"image","data":"aGk","mimeType":"image/png"}]}}`,
		`,"result":{"content":[{"type":"image","data":"","mimeType":"image/png"}]}}`,
		`,"result":{"content":[{"type":"image","data":[1,2,3],"mimeType":"image/png"}]}}`,
		`,"result":{"content":[{"type":"image","data":"aGk=","mimeType":5}]}}`,
		`,"result":{"content":[{"type":"image","data":"aGk=","text":"x","mimeType":"image/png"}]}}`,
		`,"result":{"content":[],"isError":"yes"}}`,
		`,"result":{"content":[{"type":"text","text":"t"}],"isError":true}}`,
		`,"result":{"content":[],"structuredContent":{"n":1e400}}}`,
		`,"result":{"content":[],"structuredContent":{"n":[1,2.5,"s",null,true]}}}`,
		`,"result":{"content":[{"type":"text","text":"m"}],"_meta":"x"}}`,
		`,"result":{"content":[{"type":"text","text":"m","annotations":{"priority":"high"}}]}}`,
		",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf-8\"}]}}", // invalid UTF-8
		",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xc3\"}]," + meta + "}}",
		`,"result":{"content":[{"type":"text","text":"lone \udc00 surrogate"}]}}`,
		`,"result":{"content":[{"type":"text","text":"t"}],"resultType":"input_required"}}`,
		`,"result":{"content":[{"type":"text","text":"t"}],"resultType":5}}`,
		`,"error":{"code":-32000,"message":"the server's own error"}}`,
		`,"error":{"code":"x","message":5}}`,
		`,"result":{"content":[{"type":"text","text":"` + strings.Repeat("huge ", 200_000) + `"}]}}`,
	}
}

// FuzzFastPathAgreesWithTypedPath: see above. Its seeds run in make test.
func FuzzFastPathAgreesWithTypedPath(f *testing.F) {
	for _, s := range diffSeeds() {
		f.Add([]byte(s))
	}
	var answer atomic.Pointer[jsonrpc.Response]
	type pair struct{ fast, typed *diffEnv }
	var pairs []pair
	for _, era := range []string{legacyVersion, modernVersion} {
		pairs = append(pairs, pair{newDiffEnv(f, era, false, &answer), newDiffEnv(f, era, true, &answer)})
	}
	// A 2026-07-28 host over HTTP, in front of a server of that era
	// (httpfast.go).
	pairs = append(pairs, pair{newDiffEnvOn(f, modernVersion, false, true, &answer), newDiffEnvOn(f, modernVersion, true, true, &answer)})
	f.Fuzz(func(t *testing.T, tail []byte) {
		// The message as the server's side of the connection decodes it;
		// one that does not decode ends the connection before either path
		// sees it (the same for both), and one that is no answer to the
		// call (another id, a request) would leave it waiting.
		msg, err := transport.DecodeEnvelope(append([]byte(`{"jsonrpc":"2.0","id":1`), tail...))
		if err != nil {
			return
		}
		r, ok := msg.(*jsonrpc.Response)
		if !ok || r.ID.Raw() != int64(1) {
			return
		}
		answer.Store(r)
		for _, p := range pairs {
			served := p.fast.srv.fast.served.Load()
			fast, typed := p.fast.verdict(t), p.typed.verdict(t)
			if fast != typed {
				t.Fatalf("%s: the fast path's verdict\n%.2000s\nthe typed path's\n%.2000s", p.fast.name, fast, typed)
			}
			if p.fast.srv.fast.served.Load() != served+1 {
				t.Fatalf("%s: the call did not take the fast path", p.fast.name)
			}
		}
	})
}

// TestFastPathRelaysNoInvalidUTF8: a server's text with invalid UTF-8
// reaches the host as the typed path sends it (each bad byte U+FFFD),
// never as the server's bytes (a host's decoder may refuse them).
func TestFastPathRelaysNoInvalidUTF8(t *testing.T) {
	var answer atomic.Pointer[jsonrpc.Response]
	for _, era := range []string{legacyVersion, modernVersion} {
		e := newDiffEnv(t, era, false, &answer)
		result := "{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf-8\"}]"
		if era == modernVersion {
			result += `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"memory","version":"1"}}`
		}
		answer.Store(&jsonrpc.Response{Result: json.RawMessage(result + "}")})
		served := e.srv.fast.served.Load()
		got := e.verdict(t) // fails on an answer with invalid UTF-8
		if want := `"text":"bad ` + "\ufffd" + ` utf-8"`; !strings.Contains(got, want) {
			t.Fatalf("%s: the host got %s, want %s", era, got, want)
		}
		if e.srv.fast.served.Load() != served+1 {
			t.Fatalf("%s: the call did not take the fast path", era)
		}
	}
}
