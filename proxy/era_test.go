package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// docs/design.md §24: one endpoint serves both eras, each natively.

// A go-sdk host on 2026-07-28 and a legacy one, on one endpoint at once:
// the modern one is served statelessly (no session id, its own protocol
// version, no initialize), the legacy one keeps its session; both call,
// and a classic server's sampling during each one's call reaches that
// host (the legacy one as a request on its session, the modern one as an
// input request of its call).
func TestBothErasAtOneEndpoint(t *testing.T) {
	r := newRig(t, Options{}, "a")
	hs := r.serveHTTP()
	sampler := func(who string) *mcp.ClientOptions {
		return &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: who}}, nil
		}}
	}
	legacy := r.httpHost(hs.URL, "2025-11-25", sampler("the legacy host"))
	modern := r.httpHost(hs.URL, "2026-07-28", sampler("the modern host"))
	r.waitApplied()
	if got := legacy.InitializeResult().ProtocolVersion; got != "2025-11-25" || legacy.ID() == "" {
		t.Errorf("legacy host: protocol %q, session %q; want 2025-11-25 with a session", got, legacy.ID())
	}
	if got := modern.InitializeResult().ProtocolVersion; got != "2026-07-28" || modern.ID() != "" {
		t.Errorf("modern host: protocol %q, session %q; want 2026-07-28 without a session (served statelessly)", got, modern.ID())
	}
	var wg sync.WaitGroup
	for name, cs := range map[string]*mcp.ClientSession{"legacy": legacy, "modern": modern} {
		wg.Go(func() {
			waitTools(t, cs, []string{"a__echo", "a__flood", "a__hang", "a__rpcerr", "a__sample", "a__sleep"})
			if got, isErr := call(t, cs, "a__echo", map[string]any{"text": name}); got != name || isErr {
				t.Errorf("%s host: a__echo = %q (error %v)", name, got, isErr)
			}
		})
	}
	wg.Wait()
	// One at a time: with two calls to one server in flight the server's
	// request would be ambiguous (docs/design.md §16).
	for name, cs := range map[string]*mcp.ClientSession{"legacy": legacy, "modern": modern} {
		if got, isErr := call(t, cs, "a__sample", nil); got != "sampled: the "+name+" host" || isErr {
			t.Errorf("%s host: a__sample = %q (error %v)", name, got, isErr)
		}
	}
}

// post sends one JSON-RPC message to h's /mcp with the given headers and
// returns the status and the decoded JSON-RPC error code (0: none).
func post(t *testing.T, h http.Handler, body any, headers map[string]string) (int, int64, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(mustJSON(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	raw := w.Body.String()
	if i := strings.Index(raw, "data: "); i >= 0 { // an event stream: its first event
		raw = strings.SplitN(raw[i+len("data: "):], "\n", 2)[0]
	}
	var msg struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &msg)
	if msg.Error == nil {
		return w.Code, 0, raw
	}
	return w.Code, msg.Error.Code, raw
}

// modernCall is a 2026-07-28 tools/call of name, its _meta complete.
func modernCall(name string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name": name, "arguments": map[string]any{"text": "hi"},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:                   "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}}
}

// The spec's headers of a 2026-07-28 request are checked on the way in:
// Mcp-Method and Mcp-Name must match the body (else 400 and -32020,
// HeaderMismatch), and the protocol version in the header must match the
// body's. A request that matches is served without a session.
func TestModernHeadersValidated(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion
	h := r.handler()
	good := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "a__echo"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	if code, jcode, raw := post(t, h, modernCall("a__echo"), good); code != http.StatusOK || jcode != 0 || !strings.Contains(raw, `"hi"`) {
		t.Errorf("a well-formed 2026-07-28 call: %d, error %d: %s", code, jcode, raw)
	}
	for name, hdr := range map[string]map[string]string{
		"Mcp-Method mismatch":           with("Mcp-Method", "tools/list"),
		"Mcp-Method missing":            with("Mcp-Method", ""),
		"Mcp-Name mismatch":             with("Mcp-Name", "a__hang"),
		"Mcp-Name missing":              with("Mcp-Name", ""),
		"protocol version in body only": with("Mcp-Protocol-Version", ""),
	} {
		if code, jcode, raw := post(t, h, modernCall("a__echo"), hdr); code != http.StatusBadRequest || jcode != int64(mcp.CodeHeaderMismatch) {
			t.Errorf("%s: %d, error %d (%s); want 400 with %d", name, code, jcode, raw, mcp.CodeHeaderMismatch)
		}
	}
}

// The checks in front of /mcp hold for both eras: a 2026-07-28 request
// without the token gets 401, one from a foreign browser origin 403.
func TestModernRequestsPassTheSameGuards(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion
	h, err := r.srv.Handler(HTTPOptions{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitApplied()
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "a__echo"}
	if code, _, _ := post(t, h, modernCall("a__echo"), hdr); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	hdr["Authorization"] = "Bearer s3cret"
	hdr["Origin"] = "https://evil.example"
	hdr["Sec-Fetch-Site"] = "cross-site"
	if code, _, _ := post(t, h, modernCall("a__echo"), hdr); code != http.StatusForbidden {
		t.Errorf("foreign origin: %d, want 403", code)
	}
	delete(hdr, "Origin")
	delete(hdr, "Sec-Fetch-Site")
	if code, jcode, raw := post(t, h, modernCall("a__echo"), hdr); code != http.StatusOK || jcode != 0 {
		t.Errorf("with the token: %d, error %d: %s", code, jcode, raw)
	}
}

// modernRequest picks the era from the headers, else from the body's
// _meta, and leaves the body as it was.
func TestModernRequestPeeksTheBody(t *testing.T) {
	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25"}}
	legacyCall := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": map[string]any{}}
	for _, c := range []struct {
		name    string
		body    any
		headers map[string]string
		want    bool
	}{
		{"modern header", legacyCall, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, true},
		{"modern body, no header", modernCall("x"), nil, true},
		{"modern body, legacy header", modernCall("x"), map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, true},
		{"initialize", initialize, nil, false},
		{"legacy header", legacyCall, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, false},
		{"a session's request", modernCall("x"), map[string]string{"Mcp-Session-Id": "abc", "Mcp-Protocol-Version": "2026-07-28"}, false},
		{"a batch", []any{legacyCall}, nil, false},
	} {
		b := mustJSON(c.body)
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(b))
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		if got := modernRequest(req); got != c.want {
			t.Errorf("%s: modern = %v, want %v", c.name, got, c.want)
		}
		if rest, _ := io.ReadAll(req.Body); !bytes.Equal(rest, b) {
			t.Errorf("%s: body after the peek = %q, want %q", c.name, rest, b)
		}
	}
}

// The servers' protocol version: a stdio server is asked for the host's
// era (legacy with many hosts); an HTTP server is pinned only to a
// legacy host's version, and with many hosts (Start) the SDK negotiates,
// so a stateless server speaks 2026-07-28 and can ask a host for input
// (pinned to the legacy era it could ask nobody anything).
func TestDownstreamVersions(t *testing.T) {
	web := mustConfig(t, map[string]any{"mcpServers": map[string]any{"w": map[string]any{"url": "http://127.0.0.1:1/mcp"}}}).Servers[0]
	cmd := mustConfig(t, map[string]any{"mcpServers": map[string]any{"c": map[string]any{"command": "srv"}}}).Servers[0]
	for _, c := range []struct{ host, stdio, http string }{
		{"", legacyVersion, ""},
		{"2025-06-18", "2025-06-18", "2025-06-18"},
		{"2026-07-28", "2026-07-28", ""},
	} {
		open := downstreamOpener(c.host, nil)
		o, err := open(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.(*transport.Stdio).ProtocolVersion; got != c.stdio {
			t.Errorf("host %q: stdio server asked for %q, want %q", c.host, got, c.stdio)
		}
		if o, err = open(web); err != nil {
			t.Fatal(err)
		}
		if got := o.(*transport.HTTP).ProtocolVersion; got != c.http {
			t.Errorf("host %q: HTTP server pinned to %q, want %q", c.host, got, c.http)
		}
	}
}
