package main

import (
	"slices"
	"testing"
)

func TestTasksScenarioNames(t *testing.T) {
	list := []byte("Requirement set 2026-07-28:\n    - server-initialize [server]\n    - tasks-lifecycle [server]\n    - tasks-wire-fields [server]\n")
	if got, want := tasksScenarioNames(list), []string{"tasks-lifecycle", "tasks-wire-fields"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseTasksMustPass(t *testing.T) {
	m, err := parseTasksMustPass(mustPassTasksFile)
	if err != nil || len(m) == 0 {
		t.Fatalf("the embedded list: %v (%d lines)", err, len(m))
	}
	if _, err := parseTasksMustPass([]byte("tasks-lifecycle direct\n")); err == nil {
		t.Fatal("a column that is not through mcpkeep was accepted")
	}
	if _, err := parseTasksMustPass([]byte("tasks-lifecycle\ntasks-lifecycle stdio\n")); err == nil {
		t.Fatal("a scenario listed twice was accepted")
	}
	m, _ = parseTasksMustPass([]byte("a\nb stdio url\n"))
	if !mustPasses(m, "a", "proxy") || !mustPasses(m, "b", "url") || mustPasses(m, "b", "proxy") {
		t.Fatalf("columns: %v", m)
	}
}
