package main

import (
	"context"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
)

// TestWarmUp: with a lazy server the warm-up's supervised call and raw
// call are answered and everything it started is gone (goleak, at the
// package's end); without one it does nothing; an ended context ends it
// with an error, nothing left behind.
func TestWarmUp(t *testing.T) {
	lazy := &config.Config{Servers: []config.Server{{Name: "a"}, {Name: "b", Lazy: true}}}
	eager := &config.Config{Servers: []config.Server{{Name: "a"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if ran, err := warmUp(ctx, lazy); !ran || err != nil {
		t.Errorf("warmUp(lazy) = %v, %v; want it run and its calls answered", ran, err)
	}
	for _, c := range []*config.Config{eager, nil, {}} {
		if ran, err := warmUp(ctx, c); ran || err != nil {
			t.Errorf("warmUp(%v) = %v, %v; want nothing done", c, ran, err)
		}
	}
	ended, end := context.WithCancel(ctx)
	end()
	if ran, err := warmUp(ended, lazy); !ran || err == nil {
		t.Errorf("warmUp(ended ctx) = %v, %v; want an error", ran, err)
	}
}
