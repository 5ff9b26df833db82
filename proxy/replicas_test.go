package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// docs/design.md §26: replicas behind a balancer without affinity.

// peerMap is a membership snapshot for tests.
type peerMap struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *peerMap) Addr(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.m[id]
	return a, ok
}

func (p *peerMap) set(id, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[id] = addr
}

var replicaKey = &[32]byte{7, 7, 7}

// twoReplicas serves two rigs as replicas ra and rb (one key, one
// membership) behind a round-robin balancer with no affinity, and
// returns the balancer's URL.
func twoReplicas(t *testing.T, noForward bool) (front string, a, b *rig, peers *peerMap) {
	t.Helper()
	return twoReplicasWith(t, noForward, Options{}, nil)
}

// twoReplicasWith is twoReplicas with base options and more keys for
// server a.
func twoReplicasWith(t *testing.T, noForward bool, base Options, extra map[string]map[string]any) (front string, a, b *rig, peers *peerMap) {
	t.Helper()
	peers = &peerMap{}
	mk := func(id string) *rig {
		names, err := replica.NewNames(id, replicaKey)
		if err != nil {
			t.Fatal(err)
		}
		o := base
		o.StateKey = replicaKey
		o.Replicas = &Replicas{Names: names, Peers: peers, NoForward: noForward}
		return newRigWith(t, o, extra, "a")
	}
	a, b = mk("ra"), mk("rb")
	var backends []*url.URL
	for id, r := range map[string]*rig{"ra": a, "rb": b} {
		hs := r.serveHTTP()
		u, _ := url.Parse(hs.URL)
		peers.set(id, u.Host)
		backends = append(backends, u)
	}
	var next atomic.Uint64
	rr := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(backends[next.Add(1)%uint64(len(backends))])
		},
		FlushInterval: -1,
	}
	lb := httptest.NewServer(rr)
	t.Cleanup(func() {
		lb.CloseClientConnections()
		lb.Close()
	})
	a.waitApplied()
	b.waitApplied()
	return lb.URL, a, b, peers
}

func sampler(who string) *mcp.ClientOptions {
	return &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: who}}, nil
	}}
}

// Round robin with no affinity: a legacy host's session (its calls, and
// the server's sampling on its stream) and a 2026-07-28 host's multi
// round trip (whose continuation must reach the replica whose server
// call waits) are all answered, because each replica forwards what the
// other owns.
func TestReplicasServeThroughRoundRobin(t *testing.T) {
	front, a, b, _ := twoReplicas(t, false)
	legacy := a.httpHost(front, "2025-11-25", sampler("legacy"))
	modern := a.httpHost(front, "2026-07-28", sampler("modern"))
	if sid := legacy.ID(); !strings.HasPrefix(sid, "ra~") && !strings.HasPrefix(sid, "rb~") {
		t.Fatalf("legacy session id %q does not name its owner", sid)
	}
	for i := range 6 {
		if got, isErr := call(t, legacy, "a__echo", map[string]any{"text": "x"}); got != "x" || isErr {
			t.Fatalf("legacy call %d: %q (error %v)", i, got, isErr)
		}
	}
	for name, cs := range map[string]*mcp.ClientSession{"legacy": legacy, "modern": modern} {
		for i := range 3 {
			if got, isErr := call(t, cs, "a__sample", nil); got != "sampled: "+name || isErr {
				t.Fatalf("%s host, sample %d: %q (error %v)", name, i, got, isErr)
			}
		}
	}
	fwd := a.srv.opts.Replicas.Counts().Forwarded.Load() + b.srv.opts.Replicas.Counts().Forwarded.Load()
	if fwd == 0 {
		t.Fatal("nothing was forwarded: the balancer did not spread the requests")
	}
}

// The control: the same balancer with forwarding off loses the legacy
// host (its requests reach a replica that does not know its session).
func TestReplicasWithoutForwardingLoseLegacySessions(t *testing.T) {
	front, a, _, _ := twoReplicas(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front + "/mcp", MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	failed := err != nil
	if err == nil {
		defer cs.Close()
		for range 4 {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
				failed = true
				break
			}
		}
	}
	if !failed {
		t.Fatal("a legacy session survived round robin without forwarding: the control shows nothing")
	}
	_ = a
}

// An owner that is gone (not a member): a legacy session gets 404, a
// continuation the spec's error naming the reason; nothing is dialled.
// A forwarded request for a handle this replica does not own is not
// forwarded again (the loop guard). A forged handle is no handle.
func TestReplicasOwnerGoneAndLoopGuard(t *testing.T) {
	_, a, b, peers := twoReplicas(t, false)
	h := a.h
	bNames := b.srv.opts.Replicas.Names
	init := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{}}
	headers := func(sid string, more ...string) map[string]string {
		m := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	peers.set("rb", "127.0.0.1:1") // rb registered, but nobody answers there
	status, _, body := post(t, h, init, headers(bNames.NewSessionID()))
	if status != http.StatusNotFound || !strings.Contains(body, "replica rb is gone") {
		t.Fatalf("session of an unreachable owner: %d %q, want 404 naming it", status, body)
	}
	peers.set("rb", "") // and gone from the set
	peers.mu.Lock()
	delete(peers.m, "rb")
	peers.mu.Unlock()
	status, _, body = post(t, h, init, headers(bNames.NewSessionID()))
	if status != http.StatusNotFound || !strings.Contains(body, "replica rb is gone") {
		t.Fatalf("session of a gone owner: %d %q", status, body)
	}
	st := b.srv.host.bridges.sealer().seal(sealedState{Bridge: "x", Expiry: 1 << 62})
	callWith := modernCall("a__echo")
	callWith["params"].(map[string]any)["requestState"] = st
	_, code, body := post(t, h, callWith, map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
	if code != -32602 || !strings.Contains(body, "replica rb is gone") {
		t.Fatalf("continuation of a gone owner: code %d %q", code, body)
	}

	// The loop guard: rb is a member again, but the request was already
	// forwarded once.
	hsB := httptest.NewServer(b.h)
	defer hsB.Close()
	u, _ := url.Parse(hsB.URL)
	peers.set("rb", u.Host)
	before := a.srv.opts.Replicas.Counts().Forwarded.Load()
	status, _, _ = post(t, h, init, headers(bNames.NewSessionID(), forwardedHeader, "rc"))
	if status != http.StatusNotFound || a.srv.opts.Replicas.Counts().LoopRefused.Load() != 1 ||
		a.srv.opts.Replicas.Counts().Forwarded.Load() != before {
		t.Fatalf("forwarded twice? status %d, loops %d", status, a.srv.opts.Replicas.Counts().LoopRefused.Load())
	}

	// A forged session id (another key) names rb but is served here,
	// where no such session is known.
	forger, _ := replica.NewNames("rb", &[32]byte{9})
	status, _, _ = post(t, h, init, headers(forger.NewSessionID()))
	if status != http.StatusNotFound || a.srv.opts.Replicas.Counts().Forwarded.Load() != before {
		t.Fatalf("a forged handle was forwarded (status %d)", status)
	}
}

// A forwarded request keeps the Host the host sent, so the owner's
// browser-origin check (and, on loopback, its DNS-rebinding check) sees
// what the replica it reached saw: a same-origin request stays one.
func TestReplicasForwardKeepsHost(t *testing.T) {
	_, a, b, _ := twoReplicas(t, false)
	hsB := httptest.NewServer(b.h)
	t.Cleanup(func() {
		hsB.CloseClientConnections()
		hsB.Close()
	})
	cs := b.httpHost(hsB.URL, "2025-11-25", nil)
	if !strings.HasPrefix(cs.ID(), "rb~") {
		t.Fatalf("session %q not rb's", cs.ID())
	}
	list := map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": map[string]any{}}
	status, code, body := post(t, a.h, list, map[string]string{"Mcp-Session-Id": cs.ID(),
		"Mcp-Protocol-Version": "2025-11-25", "Origin": "http://127.0.0.1"})
	if status != http.StatusOK || code != 0 || !strings.Contains(body, "a__echo") {
		t.Fatalf("same-origin request forwarded to the owner: %d %d %q", status, code, body)
	}
	if a.srv.opts.Replicas.Counts().Forwarded.Load() == 0 {
		t.Fatal("not forwarded")
	}
}

// A tasks/* request whose taskId is another replica's owner-named handle
// goes to that replica (the task engine there holds the running task);
// one whose owner is gone is served here, where the engine answers from
// the store (docs/design.md §25, §26). A taskId that is not a handle is
// served here.
func TestReplicasRouteTaskRequests(t *testing.T) {
	_, a, b, peers := twoReplicas(t, false)
	ca := a.srv.opts.Replicas.Counts()
	taskGet := func(id string) map[string]any {
		m := modernCall("a__echo")
		m["method"] = "tasks/get"
		m["params"] = map[string]any{"taskId": id, "_meta": m["params"].(map[string]any)["_meta"]}
		return m
	}
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get"}
	post(t, a.h, taskGet(b.srv.opts.Replicas.Names.Name(replica.KindTask, "led+1")), hdr)
	if ca.Forwarded.Load() != 1 {
		t.Fatalf("forwarded %d, want the task request sent to rb", ca.Forwarded.Load())
	}
	// Served here: this host did not declare the tasks extension, so
	// the task engine's gate answers -32021 (docs/design.md §25).
	if _, code, _ := post(t, a.h, taskGet("plain-task-id"), hdr); code != -32021 {
		t.Fatalf("plain task id: code %d", code)
	}
	post(t, a.h, taskGet(a.srv.opts.Replicas.Names.Name(replica.KindTask, "own")), hdr)
	if ca.Forwarded.Load() != 1 || ca.OwnerGone.Load() != 0 {
		t.Fatalf("forwarded %d, gone %d: a plain or own task id left this replica", ca.Forwarded.Load(), ca.OwnerGone.Load())
	}
	peers.mu.Lock()
	delete(peers.m, "rb")
	peers.mu.Unlock()
	_, code, body := post(t, a.h, taskGet(b.srv.opts.Replicas.Names.Name(replica.KindTask, "led+2")), hdr)
	if ca.OwnerGone.Load() != 1 || ca.Forwarded.Load() != 1 || code != -32021 || strings.Contains(body, "is gone") {
		// A host that did not declare the extension: the gate's answer,
		// not the lost task's (TestReplicasShareTasks opts in).
		t.Fatalf("gone owner's task: forwarded %d, gone %d, %d %q; want served here", ca.Forwarded.Load(), ca.OwnerGone.Load(), code, body)
	}
}
