package proxy_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/proxy"
)

// Serve two supervised servers to any number of hosts over Streamable
// HTTP at http://127.0.0.1:8080/mcp, each server restarted when it
// crashes, with /healthz and /readyz beside it.
func Example() {
	cfg, _, err := config.Parse([]byte(`{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
		"git":   {"command": "uvx", "args": ["mcp-server-git"]}}}`), nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := proxy.New(cfg, proxy.Options{})
	h, err := srv.Handler(proxy.HTTPOptions{})
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: h}
	go hs.ListenAndServe()

	// ... until it is time to stop:
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go hs.Shutdown(ctx)
	if err := srv.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}
