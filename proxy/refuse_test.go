package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestChangedToolTheSDKRefusesLeaves (docs/design.md §19): a tool whose new
// definition the SDK refuses is not left exposed in its old form.
func TestChangedToolTheSDKRefusesLeaves(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpkeep", Version: "test"}, nil)
	u := newUpstream(newRelayPath(srv, nil, &hostLink{}, slog.New(slog.DiscardHandler)))
	good := tools.Tool{PublicName: "s__t", Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}
	bad := good
	bad.InputSchema = json.RawMessage(`{"type":"string"}`) // the SDK panics: not an object
	u.apply(tools.Change{Server: "s", Gen: 1, Tools: []tools.Tool{good}})
	u.apply(tools.Change{Server: "s", Gen: 2, Tools: []tools.Tool{bad}})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 0 {
		t.Errorf("the host still sees %q in its old form", res.Tools[0].Name)
	}
	if len(u.exposed["s"]) != 0 {
		t.Errorf("still tracked: %v", u.exposed["s"])
	}
}

// TestProbesGuardWhatTheyShow (docs/design.md §19): on loopback a Host that
// is not loopback is refused (DNS rebinding); elsewhere the error texts
// are shown only to a holder of the token.
func TestProbesGuardWhatTheyShow(t *testing.T) {
	h := NewHealth().Handler(func() *mcpkeep.Pool { return nil }, "tok")
	hs := httptest.NewServer(h)
	defer hs.Close()
	for host, want := range map[string]int{"127.0.0.1": 503, "localhost:1234": 503, "[::1]": 503, "evil.example": 403, "evil.example:80": 403} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/readyz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
