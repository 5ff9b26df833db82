package main

import (
	"bytes"
	"testing"

	"github.com/mcpkeep/mcpkeep/proxy"
)

// TestStatusPrintsTasks: `mcpkeep status` prints the tasks by state in
// the table's order, leaving out states with none, and nothing without.
func TestStatusPrintsTasks(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, proxy.Readiness{Ready: true, Servers: []proxy.ServerStatus{},
		Tasks: map[string]int{"failed": 1, "working": 2, "completed": 0}})
	if got := b.String(); !bytes.Contains([]byte(got), []byte("\ntasks: working 2, failed 1\nready\n")) {
		t.Fatalf("status:\n%s", got)
	}
	b.Reset()
	printStatus(&b, proxy.Readiness{Ready: true, Servers: []proxy.ServerStatus{}})
	if bytes.Contains(b.Bytes(), []byte("tasks")) {
		t.Fatalf("status without tasks:\n%s", b.String())
	}
}
