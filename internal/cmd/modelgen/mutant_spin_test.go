//go:build spin

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// TestMutantsFail: with a guard removed from its rows (modelgen
// -drop-guard), SPIN finds a counterexample, so the model checks what the
// guard protects. It needs spin and gcc; make model runs it (-tags spin),
// make test does not build it.
//
// timer_current is not here: a stale retry timer is taken from the inbox
// in the state the host's reconnect left (connecting), where retry_due is
// not declared, before any later backing-off could take it; the model
// cannot reach the case that guard is for (docs/design.md §7, "The model").
func TestMutantsFail(t *testing.T) {
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: this test needs Debian's spin and gcc (apt-get install spin gcc); make model runs it", tool)
		}
	}
	for _, g := range []fsm.Guard{fsm.GenCurrent, fsm.FirstFailure, fsm.Quiet, fsm.StoppingForIdle, fsm.BudgetSpent} {
		t.Run(g.Key, func(t *testing.T) {
			src, err := generate(g.Key)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = check("../../../models", lifecycleMachine(), src, &out, "-O0")
			if !errors.Is(err, ErrCounterexample) {
				t.Fatalf("without %s: %v, want a counterexample\n%s", g.Key, err, out.String())
			}
			t.Logf("without %s:\n%s", g.Key, out.String())
		})
	}
}

// TestTaskMutantsFail: the same for the task model (models/task.pml):
// each guard of tasks.Table removed from its rows gives a counterexample.
// Each guard shares its (state, event) with a complementary one, so a
// removed guard leaves two rows holding for some facts: task_fire's
// ErrAmbiguous assertion, reached by a run of the model.
func TestTaskMutantsFail(t *testing.T) {
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: this test needs Debian's spin and gcc (apt-get install spin gcc); make model runs it", tool)
		}
	}
	for _, g := range tasks.Guards {
		t.Run(g.Key, func(t *testing.T) {
			src, err := emit(taskMachine(), g.Key)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = check("../../../models", taskMachine(), src, &out, "-O0")
			if !errors.Is(err, ErrCounterexample) {
				t.Fatalf("without %s: %v, want a counterexample\n%s", g.Key, err, out.String())
			}
			t.Logf("without %s:\n%s", g.Key, out.String())
		})
	}
}
