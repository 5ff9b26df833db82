package proxy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The routing of a server's requests to the host that caused them
// (docs/design.md §19, §16).

// samplingHost answers sampling with its name.
func samplingHost(name string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: name}}, nil
		},
	}
}

// httpHostNoGET is httpHost without the standalone event stream (the GET),
// as a host has it before its GET connected, or a host that never opens
// one (the MCP spec makes it optional).
func (r *rig) httpHostNoGET(url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		r.t.Fatalf("http host connect: %v", err)
	}
	r.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestServerRequestRidesTheCallStream is the overlap that lost a server's
// request through --listen (issue 43, the conformance suite): the suite
// opens a session per scenario, earlier ones still open, and calls a tool
// that samples before its own standalone GET stream is connected. The
// proxy sent the sampling out of band (on the session's GET stream, which
// was not there: "stream not connected or already closed"); it must go on
// the call's own stream, to the session that called.
func TestServerRequestRidesTheCallStream(t *testing.T) {
	r := newRig(t, Options{}, "a")
	hs := r.serveHTTP()
	r.waitApplied()
	earlier := r.httpHost(hs.URL, legacyVersion, samplingHost("an earlier scenario"))
	cs := r.httpHostNoGET(hs.URL, samplingHost("the caller"))
	if got, isErr := call(t, cs, "a__sample", nil); isErr || got != "sampled: the caller" {
		t.Errorf("sample with an earlier session open: %q (tool error %v)", got, isErr)
	}
	// The earlier session, calling in turn, gets its own.
	if got, isErr := call(t, earlier, "a__sample", nil); isErr || got != "sampled: an earlier scenario" {
		t.Errorf("the earlier session's sample: %q (tool error %v)", got, isErr)
	}
}

// TestServerRequestIdleSessionsNeverCount: over the stdio shape (a server
// request says nothing of its call), a request that arrives while exactly
// one call is in flight belongs to that call's session, however many
// other sessions are open.
func TestServerRequestIdleSessionsNeverCount(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion // a server's request of its own, not an input request of the call
	r.host(legacyVersion, samplingHost("idle one"))
	r.host(legacyVersion, samplingHost("idle two"))
	cs := r.host(legacyVersion, samplingHost("the caller"))
	r.waitApplied()
	if got, isErr := call(t, cs, "a__sample", nil); isErr || got != "sampled: the caller" {
		t.Errorf("sample beside idle sessions: %q (tool error %v)", got, isErr)
	}
}

// TestServerRequestTrueTieIsRefusedAndCounted: calls of two host sessions
// in flight to one server whose requests do not name their call: the
// server gets an error saying the host is ambiguous, and HostAmbiguous
// (mcpkeep_host_requests_ambiguous_total) counts it.
func TestServerRequestTrueTieIsRefusedAndCounted(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion
	other := r.host(legacyVersion, samplingHost("the other"))
	cs := r.host(legacyVersion, samplingHost("the caller"))
	r.waitApplied()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = other.CallTool(ctx, &mcp.CallToolParams{Name: "a__hang", Arguments: map[string]any{"text": "x"}})
	})
	waitFor(t, "the other session's call in flight", func() bool { return r.srv.calls.count() == 1 })
	got, isErr := call(t, cs, "a__sample", nil)
	if !isErr || !strings.Contains(got, "ambiguous") {
		t.Errorf("sample beside another session's call: %q (tool error %v), want an error saying ambiguous", got, isErr)
	}
	if n := r.srv.HostAmbiguous(); n != 1 {
		t.Errorf("HostAmbiguous = %d, want 1", n)
	}
	cancel()
	wg.Wait()
}

// TestServerRequestNeverToASessionThatCannotAnswer: the calling session
// declared no sampling: the server gets an error naming the capability,
// and no other session is asked in its place.
func TestServerRequestNeverToASessionThatCannotAnswer(t *testing.T) {
	r := newRig(t, Options{}, "a")
	hs := r.serveHTTP()
	r.waitApplied()
	asked := make(chan struct{}, 1)
	r.httpHost(hs.URL, legacyVersion, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked <- struct{}{}
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "wrong host"}}, nil
		},
	})
	cs := r.httpHost(hs.URL, legacyVersion, nil)
	got, isErr := call(t, cs, "a__sample", nil)
	if !isErr || !strings.Contains(got, "did not declare the capability: sampling") {
		t.Errorf("sample from a session without sampling: %q (tool error %v), want the capability named", got, isErr)
	}
	select {
	case <-asked:
		t.Error("another session was asked in the caller's place")
	default:
	}
}

// TestServerRequestTieWithASessionThatCannotAnswer: another session's
// call in flight still makes it a tie when that session declared no
// sampling (the request may be its call's): the caller is not asked in
// its place.
func TestServerRequestTieWithASessionThatCannotAnswer(t *testing.T) {
	r := newRig(t, Options{}, "a")
	r.downstream = legacyVersion
	cs := r.host(legacyVersion, samplingHost("the caller")) // the first host: the servers are told sampling
	other := r.host(legacyVersion, nil)
	r.waitApplied()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = other.CallTool(ctx, &mcp.CallToolParams{Name: "a__hang", Arguments: map[string]any{"text": "x"}})
	})
	waitFor(t, "the other session's call in flight", func() bool { return r.srv.calls.count() == 1 })
	if got, isErr := call(t, cs, "a__sample", nil); !isErr || !strings.Contains(got, "ambiguous") {
		t.Errorf("sample beside a call of a session without sampling: %q (tool error %v), want ambiguous", got, isErr)
	}
	cancel()
	wg.Wait()
}
