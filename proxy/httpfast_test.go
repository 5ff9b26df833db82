package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpCase is one raw 2026-07-28 POST.
type httpCase struct {
	name   string
	body   []byte
	header map[string]string
	fast   bool // the fast path answers it itself
}

// modernBody is a 2026-07-28 tools/call with params edited by edit.
func modernBody(tool string, args any, edit func(params, meta map[string]any)) []byte {
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:                   "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"roots": map[string]any{"listChanged": true}},
	}
	params := map[string]any{"name": tool, "arguments": args, "_meta": meta}
	if edit != nil {
		edit(params, meta)
	}
	return mustJSON(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

func modernHeaders(tool string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

// httpAnswer is what a host sees of an answer: the status, and the
// JSON-RPC message (from a JSON body or the event stream's first event)
// with the one-time request state blanked, or else the text and its
// Content-Type.
type httpAnswer struct {
	status int
	msg    any
	text   string
}

func sendRaw(h http.Handler, c httpCase) httpAnswer {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	raw := w.Body.String()
	ct := w.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		if i := strings.Index(raw, "data: "); i >= 0 {
			raw = strings.SplitN(raw[i+len("data: "):], "\n", 2)[0]
		}
	case strings.HasPrefix(ct, "application/json"):
	default:
		return httpAnswer{status: w.Code, text: ct + ": " + raw}
	}
	var msg any
	if err := json.Unmarshal([]byte(raw), &msg); err != nil {
		return httpAnswer{status: w.Code, text: ct + ": " + raw}
	}
	if m, ok := msg.(map[string]any); ok {
		if res, ok := m["result"].(map[string]any); ok && res["requestState"] != nil {
			res["requestState"] = "<one-time>"
		}
	}
	return httpAnswer{status: w.Code, msg: msg}
}

// The HTTP fast path (httpfast.go) answers what the typed path (the
// SDK's stateless handler) would: the same status and JSON-RPC message for
// plain calls, the server's errors, isError results, trace _meta, calls
// it leaves to the SDK (unknown tool, progress token, log level, header
// mismatch, bad JSON, a body over the limit), and a server asking the
// host for input during the call, declared or not.
//
// Behind a legacy server (whose results the SDK completes) the fast path
// takes nothing.
func TestHTTPFastPathMatchesTypedPath(t *testing.T) {
	for _, downstream := range []string{modernVersion, legacyVersion} {
		t.Run(downstream, func(t *testing.T) { httpFastMatchesTyped(t, downstream) })
	}
}

func httpFastMatchesTyped(t *testing.T, downstream string) {
	handler := func(opts Options) (*rig, http.Handler) {
		r := newRig(t, opts, "a")
		r.downstream = downstream
		r.serveHTTP()
		r.waitApplied()
		return r, r.h
	}
	fr, fast := handler(Options{})
	_, typed := handler(Options{TypedRelay: true})
	echo := map[string]any{"text": "hi"}
	withSampling := func(_, meta map[string]any) {
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"sampling": map[string]any{}}
	}
	cases := []httpCase{
		{name: "plain echo", body: modernBody("a__echo", echo, nil), header: modernHeaders("a__echo"), fast: true},
		{name: "string id", body: bytes.Replace(modernBody("a__echo", echo, nil), []byte(`"id":7`), []byte(`"id":"x7"`), 1), header: modernHeaders("a__echo"), fast: true},
		{name: "trace _meta", body: modernBody("a__echo", echo, func(_, meta map[string]any) {
			meta["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}), header: modernHeaders("a__echo"), fast: true},
		{name: "no client info", body: modernBody("a__echo", echo, func(_, meta map[string]any) {
			delete(meta, "io.modelcontextprotocol/clientInfo")
		}), header: modernHeaders("a__echo"), fast: true},
		{name: "bad arguments (the server's error)", body: modernBody("a__sleep", map[string]any{"ms": "x"}, nil), header: modernHeaders("a__sleep"), fast: true},
		{name: "unknown tool", body: modernBody("a__nope", echo, nil), header: modernHeaders("a__nope")},
		// The server's JSON-RPC errors keep the status the SDK gives them
		// on 2026-07-28 (404, 400; else 200).
		{name: "server error -32601", body: modernBody("a__rpcerr", map[string]any{"code": -32601}, nil), header: modernHeaders("a__rpcerr"), fast: true},
		{name: "server error -32602", body: modernBody("a__rpcerr", map[string]any{"code": -32602}, nil), header: modernHeaders("a__rpcerr"), fast: true},
		{name: "server error -32021", body: modernBody("a__rpcerr", map[string]any{"code": -32021}, nil), header: modernHeaders("a__rpcerr"), fast: true},
		{name: "server error -32022", body: modernBody("a__rpcerr", map[string]any{"code": -32022}, nil), header: modernHeaders("a__rpcerr"), fast: true},
		{name: "server error -32000", body: modernBody("a__rpcerr", map[string]any{"code": -32000}, nil), header: modernHeaders("a__rpcerr"), fast: true},
		{name: "progress token", body: modernBody("a__echo", echo, func(_, meta map[string]any) { meta["progressToken"] = "p1" }), header: modernHeaders("a__echo")},
		{name: "log level", body: modernBody("a__echo", echo, func(_, meta map[string]any) { meta["io.modelcontextprotocol/logLevel"] = "debug" }), header: modernHeaders("a__echo")},
		{name: "capabilities missing", body: modernBody("a__echo", echo, func(_, meta map[string]any) {
			delete(meta, "io.modelcontextprotocol/clientCapabilities")
		}), header: modernHeaders("a__echo")},
		{name: "client info not an object", body: modernBody("a__echo", echo, func(_, meta map[string]any) {
			meta["io.modelcontextprotocol/clientInfo"] = "me"
		}), header: modernHeaders("a__echo")},
		{name: "body version differs", body: modernBody("a__echo", echo, func(_, meta map[string]any) {
			meta[mcp.MetaKeyProtocolVersion] = "2026-07-29"
		}), header: modernHeaders("a__echo")},
		{name: "Mcp-Name mismatch", body: modernBody("a__echo", echo, nil), header: modernHeaders("a__hang")},
		{name: "Mcp-Name missing", body: modernBody("a__echo", echo, nil), header: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}},
		{name: "unknown param", body: modernBody("a__echo", echo, func(p, _ map[string]any) { p["task"] = map[string]any{} }), header: modernHeaders("a__echo")},
		{name: "bad JSON", body: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo"`), header: modernHeaders("a__echo")},
		{name: "body over the limit", body: modernBody("a__echo", map[string]any{"text": strings.Repeat("x", int(mcp.DefaultMaxRequestBodyBytes))}, nil), header: modernHeaders("a__echo")},
		{name: "input request, not declared", body: modernBody("a__sample", map[string]any{}, nil), header: modernHeaders("a__sample"), fast: true},
		{name: "input request, sampling declared", body: modernBody("a__sample", map[string]any{}, withSampling), header: modernHeaders("a__sample"), fast: true},
	}
	for _, c := range cases {
		before := fr.srv.fast.served.Load()
		got, want := sendRaw(fast, c), sendRaw(typed, c)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast path %+v\ntyped path %+v", c.name, got, want)
		}
		if took := fr.srv.fast.served.Load() > before; took != (c.fast && downstream == modernVersion) {
			t.Errorf("%s: the fast path took it: %v, want %v", c.name, took, !took)
		}
	}
}

// A host that goes away during a fast call over HTTP ends the server's
// call: the request is handed to the SDK's handler with the call in
// flight, and whichever way that ends (its session adopts the bridge, or
// it answers without the handler) the bridge closes and cancels the call.
func TestHTTPFastCallEndsWithItsHost(t *testing.T) {
	for _, typed := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "typed"}[typed], func(t *testing.T) { testHTTPCallEndsWithItsHost(t, typed) })
	}
}

// testHTTPCallEndsWithItsHost: typed, every call takes the SDK's handler
// (Options.TypedRelay), whose context must end with the host's request.
func testHTTPCallEndsWithItsHost(t *testing.T, typed bool) {
	rec := &recTracer{}
	r := newRig(t, Options{TypedRelay: typed, Tracer: rec}, "a")
	r.downstream = "2026-07-28"
	r.serveHTTP()
	r.waitApplied()
	// The first request starts the front; the fast path takes calls once
	// the server's session and catalog are in place (until then a call
	// goes the typed way, correctly but not what this test is about):
	// warm up until it took one.
	deadline := time.Now().Add(testDeadline)
	for warm := r.srv.fast.served.Load(); !typed && r.srv.fast.served.Load() == warm; {
		if time.Now().After(deadline) {
			t.Fatal("the fast path took no echo call")
		}
		sendRaw(r.h, httpCase{body: modernBody("a__echo", map[string]any{"text": "hi"}, nil), header: modernHeaders("a__echo")})
	}
	// The warm-up's call leaves the count just after its answer went out
	// (serveFastHTTP): the count below must be the sleep's.
	for r.srv.calls.count() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the warm-up's call is still counted")
		}
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp",
		bytes.NewReader(modernBody("a__sleep", map[string]any{"ms": 600_000}, nil)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("a__sleep") {
		req.Header.Set(k, v)
	}
	served := make(chan struct{})
	before := r.srv.fast.served.Load()
	go func() {
		defer close(served)
		r.h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	for r.srv.calls.count() == 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if took := r.srv.fast.served.Load() != before; took == typed {
		t.Fatalf("the fast path took the call: %v, want %v", took, !typed)
	}
	cancel()
	select {
	case <-served:
	case <-time.After(testDeadline):
		t.Fatal("the handler did not return after its host went")
	}
	for r.srv.calls.count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server's call still runs after its host went (%d in flight)", r.srv.calls.count())
		}
		runtime.Gosched()
	}
	if typed {
		return
	}
	// The fast path's request span went on with the call it handed over
	// when its host went, and ended with it, cancelled (docs/design.md
	// §27): one span, ended once, not ended as a success at the hand-over.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var span []string
	for i, e := range rec.events {
		if strings.HasPrefix(e, "request tools/call a__sleep") {
			span = rec.events[i:]
		}
	}
	ends := 0
	for _, e := range span {
		if strings.HasPrefix(e, "request end") {
			ends++
			if !strings.Contains(e, "context canceled") {
				t.Errorf("the sleep's span ended with %q, want the cancellation", e)
			}
		}
		if strings.HasPrefix(e, "request tools/call") && e != span[0] {
			t.Errorf("a second request span for the sleep: %q", span)
		}
	}
	if ends != 1 {
		t.Errorf("the sleep's span ended %d times, want once: %q", ends, span)
	}
}
