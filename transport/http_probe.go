package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeConfig is the resolved health probe of a generation.
type probeConfig struct {
	interval time.Duration // pause between the end of a probe and the next
	failures int           // consecutive failures that end the generation
	timeout  time.Duration // bound of one probe
}

// MaxRetryAfter bounds how long a server's Retry-After may hold the
// health probe back (docs/design.md §8): a rate limit is honoured, but a
// server that asks for an hour is still looked at every five minutes.
const MaxRetryAfter = 5 * time.Minute

// probeCursors is how many distinct made-up cursors the probe cycles
// through (see probeOnce): it bounds what a server that answers an
// unknown cursor with a cacheable page can leave in the SDK's cache.
const probeCursors = 64

// probeKey marks a probe's request context; the round tripper records in
// the probeMark that the probe went out on the wire, and the status and
// Retry-After of its answer, which the SDK does not pass up.
type probeKey struct{}

type probeMark struct {
	sent atomic.Bool

	mu         sync.Mutex
	status     int
	retryAfter string
}

// probeMarkOf returns the mark of a probe's request, marked as sent; nil
// for any other request.
func probeMarkOf(req *http.Request) *probeMark {
	m, ok := req.Context().Value(probeKey{}).(*probeMark)
	if !ok {
		return nil
	}
	m.sent.Store(true)
	return m
}

// saw records the answer's status and Retry-After. Nil-safe.
func (m *probeMark) saw(resp *http.Response) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status, m.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
}

// throttled reports whether the server answered the probe with a rate
// limit (429, or 503 with Retry-After) and how long it asked to be left
// alone (0 when it did not say), bounded by MaxRetryAfter.
func (m *probeMark) throttled(now time.Time) (wait time.Duration, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.status == http.StatusTooManyRequests:
	case m.status == http.StatusServiceUnavailable && m.retryAfter != "":
	default:
		return 0, false
	}
	return parseRetryAfter(m.retryAfter, now), true
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3); unreadable or past means 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

type probeVerdict int

const (
	probeOK probeVerdict = iota
	probeFailed
	// probeUnknown: the SDK answered from its list cache, so the server
	// was not asked.
	probeUnknown
	// probeThrottled: the server answered with a rate limit. It is alive;
	// the next probe waits at least what it asked.
	probeThrottled
)

// runProbe asks the server whether it is there every interval. It ends
// the generation after the threshold of consecutive failures (the server
// is down or hung), or at the first success after a failure (the server
// restarted, or came back: its subscriptions/listen stream is dead and
// the SDK will not say so; a restarted stateless server may also serve
// other tools), unless a subscriptions/listen stream stayed open
// throughout, which proves the server did not restart. A rate limit is
// neither: the server is there, and is left alone as long as it asked.
// It stops when the generation ends.
func (g *httpGen) runProbe(cs *mcp.ClientSession) {
	defer g.probing.Done()
	fails := 0
	wait := g.probe.interval
	for seq := 0; ; seq++ {
		t := g.clock.Timer(wait)
		select {
		case <-g.endCtx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = g.probe.interval
		verdict, after, err := g.probeOnce(cs, seq)
		if g.endCtx.Err() != nil {
			return
		}
		switch verdict {
		case probeUnknown:
			g.log.Debug("http: health probe answered from the SDK's cache")
		case probeThrottled:
			wait = max(wait, after)
			g.log.Debug("http: health probe rate-limited; the server is alive", "next", wait)
		case probeFailed:
			fails++
			g.log.Debug("http: health probe failed", "failures", fails, "err", err)
			if fails >= g.probe.failures {
				g.endItself(fmt.Sprintf("health probe: %d consecutive failures, last: %v", fails, err))
				return
			}
		case probeOK:
			if fails == 0 {
				continue
			}
			if g.listenOpen() {
				g.log.Debug("http: health probe recovered; subscription stream intact", "failures", fails)
				fails = 0
				continue
			}
			g.endItself(fmt.Sprintf("health probe: %s answered again after %d failed probe(s); "+
				"renewing the session (a restarted server dropped its subscriptions)", g.url, fails))
			return
		}
	}
}

// probeOnce sends one probe, bounded by the probe timeout on the
// generation's clock. Any answer of the server counts, a JSON-RPC error
// included: it proves the server and the path to it work.
//
// The probe is the cheapest request the session's era lets the server
// answer. A legacy session pings. A 2026-07-28 session cannot (servers
// reject ping without the era's _meta, and the era dropped it), so it
// asks tools/list for a page behind a cursor the server never issued:
// the spec has the server answer an unknown cursor with Invalid params,
// a few bytes instead of the whole list, and the SDK's TTL cache (keyed
// by cursor, SEP-2549) holds nothing for it, so a server that sets ttlMs
// is still asked. The cursors cycle through probeCursors values, which
// bounds what a server that serves a page for any cursor can leave in
// the cache.
func (g *httpGen) probeOnce(cs *mcp.ClientSession, seq int) (probeVerdict, time.Duration, error) {
	mark := &probeMark{}
	ctx, cancel := g.clock.WithTimeout(context.WithValue(g.endCtx, probeKey{}, mark), g.probe.timeout)
	defer cancel()
	var err error
	what := "ping"
	if modernSession(cs) {
		what = "tools/list"
		_, err = cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: fmt.Sprintf("mcpkeep-probe-%d", seq%probeCursors)})
	} else {
		err = cs.Ping(ctx, nil)
	}
	if wait, ok := mark.throttled(g.clock.Now()); ok {
		return probeThrottled, wait, nil
	}
	switch {
	case err == nil && !mark.sent.Load():
		return probeUnknown, 0, nil
	case err == nil, serverAnswered(err):
		return probeOK, 0, nil
	case errors.Is(err, context.DeadlineExceeded):
		return probeFailed, 0, fmt.Errorf("%s to %s: no answer within %s", what, g.url, g.probe.timeout)
	default:
		return probeFailed, 0, err
	}
}

// modernSession reports whether cs speaks the 2026-07-28 era (or later).
func modernSession(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && r.ProtocolVersion >= "2026-07-28"
}

// The SDK's own JSON-RPC error codes for what never reached the server or
// never came back (jsonrpc2.ErrClientClosing, ErrServerClosing,
// ErrRejected): they are *jsonrpc.Error values too, but no server said so.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverAnswered reports whether err carries a JSON-RPC error the server
// sent (in an HTTP 200, or in the body of an HTTP error status).
func serverAnswered(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *jsonrpc.Error:
		switch e.Code {
		case codeClientClosing, codeServerClosing, codeRejected:
			return false
		}
		return true
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			if serverAnswered(x) {
				return true
			}
		}
		return false
	default:
		return serverAnswered(errors.Unwrap(err))
	}
}
