package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 server's round of input requests reaches a 2026-07-28 host
// through the bridge as one round, under the server's own keys
// (docs/design.md §24), though the supervisor fulfils them one by one.

// serveAskAll adds askall to server name's generations: its first round
// asks for elicitation, sampling and roots at once under its own keys;
// its second reports what it got under each.
func serveAskAll(r *rig, name string) {
	m := r.mems[name]
	serve := m.Serve
	m.Serve = func(gen uint64, s *mcp.Server) {
		serve(gen, s)
		s.AddTool(&mcp.Tool{Name: "askall", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in := req.Params.InputResponses
			if len(in) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"user_name": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}},
					"greeting": &mcp.CreateMessageParams{MaxTokens: 9,
						Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet"}}}},
					"client_roots": &mcp.ListRootsParams{},
				}}, nil
			}
			var got string
			for _, k := range slices.Sorted(maps.Keys(in)) {
				switch v := in[k].(type) {
				case *mcp.ElicitResult:
					got += fmt.Sprintf("%s=%v ", k, v.Content["name"])
				case *mcp.CreateMessageWithToolsResult:
					got += fmt.Sprintf("%s=%s ", k, v.Model)
				case *mcp.ListRootsResult:
					got += fmt.Sprintf("%s=%d ", k, len(v.Roots))
				default:
					got += fmt.Sprintf("%s=%T ", k, v)
				}
			}
			return textResult(got), nil
		})
	}
}

func TestBridgeAsksTheServersRoundAtOnceUnderItsKeys(t *testing.T) {
	r := newRig(t, Options{}, "files")
	serveAskAll(r, "files")
	cs := r.host(modernVersion, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declare sampling and elicitation (roots by default); never
		// called: the round trips are the test's.
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("not here")
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not here")
		}})
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__askall", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(res.InputRequests))
	if want := []string{"client_roots", "greeting", "user_name"}; !slices.Equal(keys, want) || res.RequestState == "" {
		t.Fatalf("round 1 asked %v (state %q), want the server's round at once: %v", keys, res.RequestState, want)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__askall", Arguments: map[string]any{},
		RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{
			"user_name":    &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}},
			"greeting":     &mcp.CreateMessageWithToolsResult{Model: "m1", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}},
			"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///a"}, {URI: "file:///b"}}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) > 0 {
		t.Fatalf("round 2 asked again: %v", slices.Sorted(maps.Keys(res.InputRequests)))
	}
	if got, want := text(res), "client_roots=2 greeting=m1 user_name=ada "; got != want {
		t.Fatalf("the server got %q, want %q", got, want)
	}
}

// serveAskingCatalog adds the prompt askprompt and the resource
// mem://NAME/asked to server name's generations: each asks the host to
// elicit "user_context" first, then reports the answer.
func serveAskingCatalog(r *rig, name string) {
	m := r.mems[name]
	serve := m.Serve
	ask := mcp.InputRequestMap{"user_context": &mcp.ElicitParams{Message: "context?", RequestedSchema: map[string]any{"type": "object"}}}
	answer := func(in mcp.InputResponseMap) string {
		if e, ok := in["user_context"].(*mcp.ElicitResult); ok {
			return fmt.Sprintf("context=%v", e.Content["ctx"])
		}
		return fmt.Sprintf("no answer: %v", in)
	}
	m.Serve = func(gen uint64, s *mcp.Server) {
		serve(gen, s)
		s.AddPrompt(&mcp.Prompt{Name: "askprompt"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.GetPromptResult{InputRequests: ask}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: answer(req.Params.InputResponses)}}}}, nil
		})
		s.AddResource(&mcp.Resource{URI: "mem://" + name + "/asked", Name: "asked"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.ReadResourceResult{InputRequests: ask}, nil
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: answer(req.Params.InputResponses)}}}, nil
		})
	}
}

// TestBridgeCarriesPromptsAndReads: a 2026-07-28 host's prompts/get and
// resources/read whose server asks the host get the input request under
// the server's key, and the host's answer reaches the server.
func TestBridgeCarriesPromptsAndReads(t *testing.T) {
	r := newRig(t, Options{}, "files")
	serveAskingCatalog(r, "files")
	cs := r.host(modernVersion, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not here") // declares elicitation; the round trips are the test's
		}})
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	answers := mcp.InputResponseMap{"user_context": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ctx": "blue"}}}

	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "files__askprompt"})
	if err != nil {
		t.Fatalf("prompts/get round 1: %v", err)
	}
	if _, ok := p.InputRequests["user_context"]; !ok || p.RequestState == "" {
		t.Fatalf("prompts/get round 1: %+v, want the server's input request user_context", p)
	}
	p, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "files__askprompt", RequestState: p.RequestState, InputResponses: answers})
	if err != nil {
		t.Fatalf("prompts/get round 2: %v", err)
	}
	if len(p.Messages) != 1 || p.Messages[0].Content.(*mcp.TextContent).Text != "context=blue" {
		t.Fatalf("prompts/get round 2: %+v, want the server's reply to the answer", p)
	}

	uri := "mem://files/asked"
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read round 1: %v", err)
	}
	if _, ok := rr.InputRequests["user_context"]; !ok || rr.RequestState == "" {
		t.Fatalf("resources/read round 1: %+v, want the server's input request user_context", rr)
	}
	// A prompt's state does not continue a read.
	p, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "files__askprompt"})
	if err != nil || p.RequestState == "" {
		t.Fatalf("prompts/get again: %+v, %v", p, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri, RequestState: p.RequestState, InputResponses: answers})
	wantRefused(t, "resources/read with a prompts/get state", err, `it continues a call of "prompts/get files__askprompt"`)
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri, RequestState: rr.RequestState, InputResponses: answers})
	if err != nil {
		t.Fatalf("resources/read round 2: %v", err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "context=blue" {
		t.Fatalf("resources/read round 2: %+v, want the server's reply to the answer", rr)
	}
}

// A legacy server (a stdio server shared by hosts of both eras speaks the
// legacy era) whose tool returns a round of input requests has them
// fulfilled by its own SDK, as concurrent server requests without their
// keys: the host is asked for all of them in one round (the suite's
// input-required-result-multiple-input-requests through run -- server),
// not for the first to arrive and the rest in later rounds.
func TestBridgeAsksALegacyServersConcurrentRequestsInOneRound(t *testing.T) {
	r := newRig(t, Options{}, "files")
	r.downstream = legacyVersion
	// The three come within microseconds; a window wider than the
	// default keeps a loaded -race run from splitting them.
	r.srv.host.bridges.gather = 500 * time.Millisecond
	serveAskAll(r, "files")
	cs := r.host(modernVersion, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("not here")
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not here")
		}})
	r.waitApplied()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__askall", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	answers := mcp.InputResponseMap{}
	var kinds []string
	for k, ir := range res.InputRequests {
		switch ir.(type) {
		case *mcp.ElicitParams:
			kinds = append(kinds, "elicit")
			answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			kinds = append(kinds, "sample")
			answers[k] = &mcp.CreateMessageWithToolsResult{Model: "m1", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}
		case *mcp.ListRootsParams:
			kinds = append(kinds, "roots")
			answers[k] = &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///a"}, {URI: "file:///b"}}}
		}
	}
	slices.Sort(kinds)
	if want := []string{"elicit", "roots", "sample"}; !slices.Equal(kinds, want) || res.RequestState == "" {
		t.Fatalf("round 1 asked %v (state %q), want the server's three requests at once: %v", kinds, res.RequestState, want)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__askall", Arguments: map[string]any{},
		RequestState: res.RequestState, InputResponses: answers})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) > 0 {
		t.Fatalf("round 2 asked again: %v", slices.Sorted(maps.Keys(res.InputRequests)))
	}
	if got, want := text(res), "client_roots=2 greeting=m1 user_name=ada "; got != want {
		t.Fatalf("the server got %q, want %q", got, want)
	}
}
