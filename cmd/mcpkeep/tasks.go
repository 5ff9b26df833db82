package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// taskStore gives the proxy's task engine a disk store under the cache
// directory's tasks/ (docs/design.md §25), so a finished task's result
// survives a restart of mcpkeep; without a cache directory (--no-cache)
// finished tasks are kept in memory. A directory that cannot be used is
// logged, never a reason not to serve.
func (sv *serving) taskStore(opts *proxy.Options) {
	if sv.cache == nil || sv.cacheDir == "" || opts.Tasks.Store != nil {
		return
	}
	dir := filepath.Join(sv.cacheDir, "tasks")
	st, err := tasks.OpenDiskStore(dir, 0)
	if err != nil {
		sv.log.Warn("finished tasks kept in memory only", slog.Any("err", err))
		return
	}
	opts.Tasks.Store = st
}

// printTasks is `mcpkeep status`'s line of tasks by state, in the
// table's order, states with none left out; nothing without tasks.
func printTasks(w io.Writer, counts map[string]int) {
	var parts []string
	for _, s := range tasks.States {
		if n := counts[s.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "tasks: %s\n", strings.Join(parts, ", "))
	}
}
