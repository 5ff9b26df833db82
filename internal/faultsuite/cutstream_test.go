package faultsuite

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
)

// cutProxy is a reverse proxy that cuts every event stream a GET opens
// after a fixed time, as nginx, AWS ALB (60 s) and GCP (30 s) cut a
// response they see idle.
type cutProxy struct {
	after time.Duration
	rp    *httputil.ReverseProxy
	cuts  atomic.Int32
	gets  atomic.Int32
}

func newCutProxy(t *testing.T, backend string, after time.Duration) *cutProxy {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	p := &cutProxy{after: after, rp: httputil.NewSingleHostReverseProxy(u)}
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	p.rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			return // the cut: the response just ends
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return p
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.gets.Add(1)
	ctx, cancel := context.WithTimeout(r.Context(), p.after)
	defer cancel()
	// ReverseProxy aborts the response (panics with http.ErrAbortHandler)
	// when its copy fails: the client sees the stream end mid-response,
	// as from a proxy that drops the connection.
	defer func() {
		if ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil {
			p.cuts.Add(1)
		}
	}()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// A proxy cuts the idle standalone stream of a legacy session every
// 300 ms. The session outlives every cut: calls keep working, the
// generation is never lost (so no budget is spent and nothing is given
// up), and a call in flight across a cut gets its answer.
func TestFaultCutStreamKeepsTheSession(t *testing.T) {
	backend := startPBServer(t, pbOptions{})
	proxy := newCutProxy(t, backend.url, 300*time.Millisecond)
	front := startPBServer(t, pbOptions{wrap: func(http.Handler) http.Handler { return proxy }})
	rig := newPBRig(t, &transport.HTTP{URL: front.url, Server: "pb"})
	if s := rig.sup.State(); s.State != fsm.Established || s.Gen != 1 {
		t.Fatalf("after Start: %+v", s)
	}

	// A call in flight across a cut.
	var wg sync.WaitGroup
	var slowGot string
	var slowErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), pbWait)
		defer cancel()
		slowGot, slowErr = rig.call(ctx, "slow", "x")
	}()
	select {
	case <-backend.started:
	case <-time.After(pbWait):
		t.Fatal("the slow call did not reach the server")
	}
	before := proxy.cuts.Load()
	deadline := time.Now().Add(pbWait)
	for proxy.cuts.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(backend.release)
	wg.Wait()
	if slowErr != nil || slowGot != "slow:x" {
		t.Fatalf("the call in flight across a cut: %q, %v", slowGot, slowErr)
	}

	// At least five cuts, with calls between.
	start := time.Now()
	for i := 0; proxy.cuts.Load() < 5; i++ {
		if time.Since(start) > pbWait {
			t.Fatalf("only %d cuts within %v", proxy.cuts.Load(), pbWait)
		}
		rig.mustEcho("after cut " + strings.Repeat("x", i%3))
		time.Sleep(50 * time.Millisecond)
	}
	rig.mustEcho("last")
	s := rig.sup.State()
	t.Logf("%d cuts, %d GETs; state %v gen %d attempt %d", proxy.cuts.Load(), proxy.gets.Load(), s.State, s.Gen, s.Attempt)
	if s.State != fsm.Established || s.Gen != 1 || s.Attempt != 0 {
		t.Errorf("after %d cuts: state %v gen %d attempt %d; want established gen 1 attempt 0", proxy.cuts.Load(), s.State, s.Gen, s.Attempt)
	}
	if l := rig.left(); len(l) != 0 {
		t.Errorf("the generation left established: %+v", l[0])
	}
}

// When the stream's end is a loss (the server behind the proxy died),
// the reopening fails and the loss is seen at once, not seconds later.
func TestFaultCutStreamLossIsSeenAtOnce(t *testing.T) {
	backend := startPBServer(t, pbOptions{})
	proxy := newCutProxy(t, backend.url, time.Hour)
	front := startPBServer(t, pbOptions{wrap: func(http.Handler) http.Handler { return proxy }})
	rig := newPBRig(t, &transport.HTTP{URL: front.url, Server: "pb"})
	rig.mustEcho("up")
	start := time.Now()
	backend.kill()
	s := rig.waitState("the loss", func(s mcpkeep.Snapshot) bool { return s.State != fsm.Established })
	d := time.Since(start)
	t.Logf("loss seen %v after the kill: %v (%v)", d, s.State, s.LastErr)
	if d > time.Second {
		t.Errorf("loss seen %v after the kill; want well under a second", d)
	}
}
