package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
)

// TestRunTasksFlags: --tasks and --tasks-grace set the server's "tasks"
// block (docs/design.md §25); a bad mode names the flag.
func TestRunTasksFlags(t *testing.T) {
	spec := runSpec{name: "s", command: []string{"srv"}, tasks: "auto",
		tasksGrace: durationFlag{d: 300 * time.Millisecond, set: true}}
	cfg, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	want := config.Tasks{Mode: config.TasksAuto, Grace: 300 * time.Millisecond}
	if got := cfg.Servers[0].Tasks; !got.Equal(want) {
		t.Fatalf("tasks = %+v, want %+v", got, want)
	}
	_, err = runSpec{name: "s", command: []string{"srv"}, tasks: "sometimes"}.config()
	if err == nil || !strings.Contains(err.Error(), "--tasks:") {
		t.Fatalf("bad mode: err = %v, want one naming --tasks", err)
	}
	spec.tasksTools = kvFlag{"failing_job=required"}
	if cfg, err = spec.config(); err != nil || cfg.Servers[0].Tasks.ModeFor("failing_job") != config.TasksRequired {
		t.Fatalf("--tasks-tool: %v, %+v", err, cfg)
	}
	spec.tasksTools = kvFlag{"failing_job=sometimes"}
	if _, err = spec.config(); err == nil || !strings.Contains(err.Error(), "--tasks-tool") {
		t.Fatalf("bad tool mode: err = %v, want one naming --tasks-tool", err)
	}
}
