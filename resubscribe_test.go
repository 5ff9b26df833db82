package mcpkeep

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resource unsubscribed and subscribed again on one generation is
// subscribed again at once, on both eras. On 2026-07-28 the unsubscribe
// leaves the SDK's subscriptions/listen open (sticky.go), so the SDK's
// Subscribe sends nothing the second time and no acknowledgement comes:
// the supervisor waited subAckWait for it and refused (the suite's
// resources-subscribe then resources-unsubscribe through run --url in
// front of a stateless server).
func TestResubscribeOnOneGeneration(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				r.mustStart(t)
				ctx := context.Background()
				must(t, r.sup.SubscribeResource(ctx, "docs://a"))
				must(t, r.sup.UnsubscribeResource(ctx, "docs://a"))
				must(t, r.sup.SubscribeResource(ctx, "docs://a"))
				r.settle()
				must(t, r.f.server(1).ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "docs://a"}))
				r.settle()
				if got, want := r.host.named("updated"), []string{"updated srv: docs://a"}; !slices.Equal(got, want) {
					t.Fatalf("ResourceUpdated got %q, want %q", got, want)
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
