package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 host's requestState (docs/design.md §24) is sealed and
// bound to the host session that got it: another host, an altered, a
// replayed, an expired or another process's state is refused with
// -32602, saying why; the right host's answer goes on.

// mrtrHost is a 2026-07-28 host that does its multi round trips by hand.
func mrtrHost(r *rig) *mcp.ClientSession {
	return r.host(modernVersion, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declares sampling; never called (the round trips are the test's).
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("not here")
		}})
}

// asked calls files__sample and returns the input request's state.
func asked(t *testing.T, ctx context.Context, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__sample", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("no input request: %+v %s", res, text(res))
	}
	return res.RequestState
}

// answerWith continues files__sample with state and the sampling answer
// for its input request "q" (the server's own key, docs/design.md §24).
func answerWith(ctx context.Context, cs *mcp.ClientSession, state string) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__sample", Arguments: map[string]any{}, RequestState: state,
		InputResponses: mcp.InputResponseMap{"q": &mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant",
			Content: []mcp.Content{&mcp.TextContent{Text: "mine"}}}}})
}

// wantRefused checks err is the spec's -32602 for a bad state, saying why.
func wantRefused(t *testing.T, what string, err error, why string) {
	t.Helper()
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || !strings.Contains(wire.Message, why) {
		t.Fatalf("%s: %v, want -32602 saying %q", what, err, why)
	}
}

func TestRequestStateIsSealedAndBound(t *testing.T) {
	var key [32]byte
	key[0] = 7
	r := fastRig(t, Options{StateKey: &key})
	r.downstream = modernVersion
	a, b := mrtrHost(r), mrtrHost(r)
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	state := asked(t, ctx, a)

	// Another host holding the state cannot answer a's call.
	_, err := answerWith(ctx, b, state)
	wantRefused(t, "another host", err, "another host session")
	// Altered.
	// A bit of the sealed bytes flipped, not of their text: a flipped
	// character may leave the base64 alphabet (then the refusal is "not a
	// state", and the test would depend on the random nonce).
	sealed, derr := base64.RawURLEncoding.DecodeString(state)
	if derr != nil {
		t.Fatalf("the issued state is not base64: %v", derr)
	}
	sealed[len(sealed)/2] ^= 1
	_, err = answerWith(ctx, a, base64.RawURLEncoding.EncodeToString(sealed))
	wantRefused(t, "altered", err, "altered")
	_, err = answerWith(ctx, a, "mcpkeep-bridge-1")
	wantRefused(t, "a guessed counter", err, "sealed with another key")
	_, err = answerWith(ctx, a, "%%%")
	wantRefused(t, "not base64", err, "not a state this proxy issued")
	// Expired: the same state, later than it is good for.
	bs := &r.srv.host.bridges
	bs.seal.now = func() time.Time { return time.Now().Add(time.Hour) }
	_, err = answerWith(ctx, a, state)
	wantRefused(t, "expired", err, "expired")
	bs.seal.now = time.Now
	// Another process's (same key, another owner).
	other := newStateSealer(&key)
	foreign := other.seal(sealedState{Bridge: "x", Server: "files", Tool: "files__sample", Round: 1, Expiry: other.expiryAfter(time.Minute)})
	_, err = answerWith(ctx, a, foreign)
	wantRefused(t, "another process's", err, "another mcpkeep process")

	// Its own host answers, once.
	res, err := answerWith(ctx, a, state)
	if err != nil || text(res) != "sampled: mine" {
		t.Fatalf("a's own answer: %+v, %v", res, err)
	}
	_, err = answerWith(ctx, a, state)
	wantRefused(t, "replayed", err, "ended")
}

// TestRequestStateReplayedWithinTheCall: a round's state answers once,
// even while the call still runs.
func TestRequestStateReplayedWithinTheCall(t *testing.T) {
	r := fastRig(t, Options{})
	bs := &r.srv.host.bridges
	b := bs.open("files", "files__sample", nil)
	defer bs.close(b)
	state := bs.state(b, mcp.InputRequestMap{"input-1": &mcp.ListRootsParams{}}, time.Minute)
	if _, err := bs.resume(state, "files__sample", nil); err != nil {
		t.Fatalf("first answer: %v", err)
	}
	_, err := bs.resume(state, "files__sample", nil)
	wantRefused(t, "replayed", err, "answered already")
	_, err = bs.resume(bs.state(b, mcp.InputRequestMap{"input-2": &mcp.ListRootsParams{}}, time.Minute), "files__other", nil)
	wantRefused(t, "another tool", err, "not of")
}

// TestRoundOfAClosedBridge: a round on a bridge closed under it (the
// host did not come back in time) ends at once.
func TestRoundOfAClosedBridge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bs bridges
		b := bs.open("files", "files__sample", nil)
		bs.close(b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan outcome, 1)
		go func() {
			out, _ := bs.round(ctx, b)
			got <- out
		}()
		synctest.Wait()
		select {
		case out := <-got:
			if !errors.Is(out.err, errBridgeClosed) {
				t.Fatalf("round: %v, want errBridgeClosed", out.err)
			}
		default:
			t.Fatal("the round of a closed bridge waits")
		}
	})
}
