package proxy

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cached servers' staggered start is held until the host has its
// first complete tools/list (docs/design.md §20): a first page with a
// next cursor does not release it, the last page does.
func TestStartsHeldUntilTheFirstListIsComplete(t *testing.T) {
	s := New(mustConfig(t, map[string]any{"mcpServers": map[string]any{}}), Options{})
	defer s.cancel()
	s.once.Do(func() {}) // no pool: the middleware alone is under test
	var page *mcp.ListToolsResult
	h := s.middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { return page, nil })
	list := func() {
		t.Helper()
		if _, err := h(context.Background(), "tools/list", &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}}); err != nil {
			t.Fatal(err)
		}
	}
	released := func() bool {
		select {
		case <-s.listed:
			return true
		default:
			return false
		}
	}
	page = &mcp.ListToolsResult{NextCursor: "page-2"}
	list()
	if released() {
		t.Fatal("the starts were released after the first of two pages")
	}
	page = &mcp.ListToolsResult{}
	list()
	if !released() {
		t.Fatal("the starts are still held after the last page")
	}
}

// A host whose first tools/list fails will not page on: the hold ends.
func TestStartsReleasedByAFailedList(t *testing.T) {
	s := New(mustConfig(t, map[string]any{"mcpServers": map[string]any{}}), Options{})
	defer s.cancel()
	s.once.Do(func() {})
	h := s.middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, errors.New("no list")
	})
	_, _ = h(context.Background(), "tools/list", &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}})
	select {
	case <-s.listed:
	default:
		t.Fatal("the starts are still held after a failed list")
	}
}
