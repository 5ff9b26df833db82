package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Replicas (docs/design.md §26). Each replica supervises its own
// servers; what cannot move is owned by one replica and every handle
// for it names the owner: a legacy session id and a task id in the
// tagged handle form (replica.Names), a multi-round-trip requestState
// inside its seal (state.go, Owner). /mcp serves a request itself when
// it owns the handle or none is needed (a 2026-07-28 request without a
// continuation, initialize) and forwards it to the owner otherwise: a
// streaming reverse proxy (FlushInterval -1: an event stream's events
// reach the host as they come), the host's headers (its credentials)
// kept, and a loop guard: a forwarded request is never forwarded again.
// The owner's address comes from the membership set only (Peers), never
// from the request. An owner that is gone (not a member, or not
// answering) gets the host the spec's answer: 404 for a legacy session
// (the host initializes again), -32602 with the reason for a
// continuation; a task request is served here, where the task engine
// answers from the store (§25).

// Replicas configure a Server as one of several replicas.
type Replicas struct {
	// Names mints and checks this replica's handles; its ID is the
	// owner named in them. Required.
	Names *replica.Names
	// Peers gives a live member's forwarding address (host:port); nil
	// knows no other replica.
	Peers interface {
		Addr(id string) (addr string, ok bool)
	}
	// NoForward serves every request here, forwarding nothing (the
	// control run of the replicas test: what forwarding prevents).
	NoForward bool
	// Transport carries forwarded requests; nil is a transport of the
	// Server's own.
	Transport http.RoundTripper

	counts ReplicaCounts
}

// ReplicaCounts count the dispatcher's decisions (for /metrics).
type ReplicaCounts struct {
	// Forwarded: requests sent on to their owner.
	Forwarded atomic.Uint64
	// OwnerGone: requests for a handle whose owner is gone, answered
	// here with the spec's answer.
	OwnerGone atomic.Uint64
	// LoopRefused: forwarded requests for a handle this replica does
	// not own (a stale membership somewhere), not forwarded again.
	LoopRefused atomic.Uint64
}

// Counts are rp's counters; nil rp: nil.
func (rp *Replicas) Counts() *ReplicaCounts {
	if rp == nil {
		return nil
	}
	return &rp.counts
}

// forwardDialTimeout bounds the connection to an owner.
const forwardDialTimeout = 3 * time.Second

// forwardedHeader marks a forwarded request (the loop guard) and names
// the replica that forwarded it.
const forwardedHeader = "Mcpkeep-Forwarded-By"

// sessionIDs is the SDK's GetSessionID: owner-named ids, or the SDK's
// own (nil) for a process alone.
func (rp *Replicas) sessionIDs() func() string {
	if rp == nil {
		return nil
	}
	return rp.Names.NewSessionID
}

// own makes seal name this replica as the owner of its states.
func (rp *Replicas) own(seal *stateSealer) {
	if rp != nil {
		seal.owner = rp.Names.ID()
	}
}

// route is next behind the replicas' dispatcher, or next alone.
func (s *Server) route(next http.Handler) http.Handler {
	rp := s.opts.Replicas
	if rp == nil {
		return next
	}
	tr := rp.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy: nil, // the owner is a peer: never through an HTTP proxy
			// A black-holed owner is gone after this, not a hang.
			DialContext:         (&net.Dialer{Timeout: forwardDialTimeout}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   false,
		}
	}
	rt := &router{rp: rp, next: next, log: s.log, seal: s.host.bridges.sealer(), tasks: s.tasks}
	rt.rev = &httputil.ReverseProxy{
		Rewrite:       rt.rewrite,
		FlushInterval: -1,
		Transport:     tr,
		ErrorHandler:  rt.failed,
		ErrorLog:      nil,
	}
	return rt
}

type router struct {
	rp   *Replicas
	next http.Handler
	rev  *httputil.ReverseProxy
	log  *slog.Logger
	seal *stateSealer
	// tasks is the Server's task front (nil: none), for a gone owner's
	// task (replicas_lost.go).
	tasks *taskFront
}

// The kinds of handle a request can carry.
type handleKind int

const (
	noHandle handleKind = iota
	sessionHandle
	stateHandle
	taskHandle
)

// forwardTo is what the rewrite and the error handler learn of a
// forwarded request, through its context.
type forwardTo struct {
	owner, addr string
	kind        handleKind
	id          jsonrpc.ID
	body        []byte // the peeked body, to serve it here after all
	// left: the owner is not in the membership set, or did not answer
	// the forwarded request: its handles' state is gone with it.
	left bool
}

type forwardKey struct{}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, owner, id, body := rt.owner(r)
	self := rt.rp.Names.ID()
	if kind == noHandle || owner == self || rt.rp.NoForward {
		rt.next.ServeHTTP(w, r)
		return
	}
	if by := r.Header.Get(forwardedHeader); by != "" {
		// Forwarded here by a replica that took this one for the owner:
		// never forward again (a loop), answer as for a gone owner.
		rt.rp.counts.LoopRefused.Add(1)
		rt.gone(w, r, forwardTo{owner: owner, kind: kind, id: id, body: body})
		return
	}
	var addr string
	ok := false
	if rt.rp.Peers != nil {
		addr, ok = rt.rp.Peers.Addr(owner)
	}
	ft := forwardTo{owner: owner, addr: addr, kind: kind, id: id, body: body}
	if !ok {
		ft.left = true
		rt.gone(w, r, ft)
		return
	}
	rt.rp.counts.Forwarded.Add(1)
	rt.rev.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, ft)))
}

// owner finds the handle r carries and its owner: a legacy session's
// id in the header, else (a sessionless POST) a requestState or a
// task id in the body. A handle that does not verify is no handle:
// served here, where it is refused as the spec says.
func (rt *router) owner(r *http.Request) (handleKind, string, jsonrpc.ID, []byte) {
	var id jsonrpc.ID
	if sid := r.Header.Get(sessionIDHeader); sid != "" {
		owner, _, err := rt.rp.Names.Parse(replica.KindSession, sid)
		if err != nil {
			return noHandle, "", id, nil
		}
		return sessionHandle, owner, id, nil
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return noHandle, "", id, nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, eraPeekLimit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > eraPeekLimit {
		return noHandle, "", id, nil
	}
	m, err := jsonrpc.DecodeMessage(head)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok {
		return noHandle, "", id, nil
	}
	id = req.ID
	var params struct {
		RequestState string `json:"requestState"`
		TaskID       string `json:"taskId"`
	}
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &params) != nil {
		return noHandle, "", id, nil
	}
	switch {
	case params.RequestState != "":
		st, werr := rt.seal.unseal(params.RequestState)
		if werr != nil {
			return noHandle, "", id, nil
		}
		return stateHandle, st.Owner, id, head
	case strings.HasPrefix(req.Method, "tasks/") && params.TaskID != "":
		owner, _, err := rt.rp.Names.Parse(replica.KindTask, params.TaskID)
		if err != nil {
			return noHandle, "", id, nil
		}
		return taskHandle, owner, id, head
	}
	return noHandle, "", id, nil
}

func (rt *router) rewrite(pr *httputil.ProxyRequest) {
	ft, _ := pr.In.Context().Value(forwardKey{}).(forwardTo)
	pr.SetURL(&url.URL{Scheme: "http", Host: ft.addr})
	// The Host the host sent, not the owner's address: the owner's
	// browser-origin check compares Origin with it, and on loopback its
	// DNS-rebinding check wants it loopback, as the first replica did.
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	pr.Out.Header.Set(forwardedHeader, rt.rp.Names.ID())
}

// failed is the reverse proxy's answer when the owner did not answer:
// it is gone (killed, or its registration not yet expired).
func (rt *router) failed(w http.ResponseWriter, r *http.Request, err error) {
	ft, _ := r.Context().Value(forwardKey{}).(forwardTo)
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the host hung up
	}
	rt.log.Info("replica owner unreachable", slog.String("owner", ft.owner), slog.String("addr", ft.addr), slog.Any("err", err))
	// Unreachable counts as gone, as for a legacy session (its 404): a
	// killed replica stays in the membership set until its entry's TTL.
	ft.left = true
	rt.gone(w, r, ft)
}

// gone answers a request whose handle's owner is gone.
func (rt *router) gone(w http.ResponseWriter, r *http.Request, ft forwardTo) {
	rt.rp.counts.OwnerGone.Add(1)
	switch ft.kind {
	case sessionHandle:
		// The spec's signal to initialize again.
		http.Error(w, "session not found: its mcpkeep replica "+ft.owner+" is gone", http.StatusNotFound)
	case stateHandle:
		writeRPCError(w, ft.id, badState("its mcpkeep replica "+ft.owner+" is gone (start the call again)"))
	default:
		// A task: served here, where the task engine answers from the
		// store (a finished result outlives its owner); one that never
		// finished is lost with its owner (§25, replicas_lost.go).
		if ft.left && rt.lostTask(w, r, ft) {
			return
		}
		if ft.body != nil {
			r.Body = io.NopCloser(bytes.NewReader(ft.body))
			r.ContentLength = int64(len(ft.body))
		}
		rt.next.ServeHTTP(w, r)
	}
}

// writeRPCError answers a sessionless POST with one JSON-RPC error.
func writeRPCError(w http.ResponseWriter, id jsonrpc.ID, e *jsonrpc.Error) {
	resp := &jsonrpc.Response{ID: id, Error: e}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, e.Message, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
