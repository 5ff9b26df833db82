package transport_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/transport"
)

var _ transport.Aborter = (*transport.MemGen)(nil)

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(httpTimeout):
		t.Fatalf("%s not closed within %v", what, httpTimeout)
	}
}

// An in-memory generation aborts as it terminates, and records which of
// the two it was told (supervisor tests assert it).
func TestMemoryAbortIsRecordedApart(t *testing.T) {
	m := transport.NewMemory("a")
	open := func(gen uint64) *transport.MemGen {
		g, err := m.Open(context.Background(), gen)
		if err != nil {
			t.Fatal(err)
		}
		return g.(*transport.MemGen)
	}
	a := open(1)
	a.Abort()
	a.Abort()
	waitClosed(t, a.Gone(), "Gone after Abort")
	if !a.Aborted() || a.Terminated() {
		t.Errorf("after Abort: Aborted %v, Terminated %v; want true, false", a.Aborted(), a.Terminated())
	}
	if _, err := a.Transport().Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Connect after Abort = %v; want terminated", err)
	}
	b := open(2)
	b.Terminate()
	waitClosed(t, b.Gone(), "Gone after Terminate")
	if b.Aborted() || !b.Terminated() {
		t.Errorf("after Terminate: Aborted %v, Terminated %v; want false, true", b.Aborted(), b.Terminated())
	}
	b.Abort() // after Terminate: recorded, harmless
	if !b.Aborted() {
		t.Error("Abort after Terminate not recorded")
	}
	if n := m.Live(); n != 0 {
		t.Errorf("Live = %d; want 0", n)
	}
}

// An HTTP generation has no process and no grace: Abort is Terminate.
func TestHTTPAbortIsTerminate(t *testing.T) {
	t.Run("before connect", func(t *testing.T) {
		h := &transport.HTTP{URL: "http://127.0.0.1:1/mcp"}
		g, err := h.Open(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := g.(transport.Aborter)
		if !ok {
			t.Fatalf("HTTP generation %T is not a transport.Aborter", g)
		}
		a.Abort()
		g.Terminate()
		a.Abort()
		waitClosed(t, g.Gone(), "Gone after Abort")
		if _, err := g.Transport().Connect(context.Background()); err == nil || !strings.Contains(err.Error(), "terminated") {
			t.Errorf("Connect after Abort = %v; want terminated", err)
		}
	})
	t.Run("connected", func(t *testing.T) {
		web := startWeb(t, false, true)
		c := connectWeb(t, &transport.HTTP{URL: web.URL(), Server: "web"}, 1)
		id := c.cs.ID()
		c.g.(transport.Aborter).Abort()
		waitClosed(t, c.ended, "the session after Abort")
		waitClosed(t, c.g.Gone(), "Gone after Abort")
		web.waitRequest(t, func(r webRequest) bool { return r.Method == http.MethodDelete && r.SessionID == id })
	})
}
