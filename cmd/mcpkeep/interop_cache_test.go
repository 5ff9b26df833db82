package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// everythingHostTools are the tools server-everything lists only to a
// client that declares sampling, elicitation and roots.
var everythingHostTools = []string{"everything__get-roots-list", "everything__trigger-elicitation-request", "everything__trigger-sampling-request"}

// The catalog cached for a host that declared nothing is not served to a
// host that declares sampling, elicitation and roots: its first tools/list
// is the live server's, with the three tools, and it can call them
// (docs/design.md §20; issue 33 item 4). server-everything, real
// processes; `make interop` runs it.
func TestInteropCacheKeyedByHostCapabilities(t *testing.T) {
	dir := os.Getenv(envInteropDir)
	if dir == "" {
		t.Skipf("%s is not set: `make interop` installs %s with npm and runs this test", envInteropDir, everythingPkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", envInteropDir, err)
	}
	r := &proxyRun{t: t, cfgPath: filepath.Join(t.TempDir(), "mcp.json")}
	r.writeConfig(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everythingEntry(t, dir), "stdio"}},
	}})
	cache := t.TempDir()
	// A loaded machine may start node slowly: the init wait must not
	// answer the host before the server listed.
	args := []string{"proxy", "--config", r.cfgPath, "--cache-dir", cache, "--init-wait", "60s", "--log-format", "json", "--log-level", "debug"}

	bare := noServerLeft(startHost(t, interopEra, false, args...))
	names := bare.waitTools("the live list", func(n []string) bool { return slices.Contains(n, "everything__echo") })
	for _, n := range everythingHostTools {
		if slices.Contains(names, n) {
			t.Fatalf("a host declaring nothing was listed %s", n)
		}
	}
	bare.stop()

	full := noServerLeft(startHost(t, interopEra, true, args...))
	names = full.toolNames()
	for _, n := range everythingHostTools {
		if !slices.Contains(names, n) {
			t.Fatalf("first tools/list of a host declaring sampling, elicitation and roots lacks %s: %v", n, names)
		}
	}
	res, err := full.call("everything__get-roots-list", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("get-roots-list: %v %+v", err, res)
	}
}
