package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

var update = flag.Bool("update", false, "rewrite models/fsm.pml and models/tasks_table.pml from their tables (what make modelgen does)")

const committed = "../../../models/fsm.pml"

// TestCommittedModelMatchesTable is the model's drift check (part of make
// test, no spin needed): models/fsm.pml must be exactly what modelgen
// renders from fsm.Table. After a change to the table: make modelgen.
func TestCommittedModelMatchesTable(t *testing.T) {
	want, err := generate("")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committed, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v: run make modelgen", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("models/fsm.pml is stale: run make modelgen\n%s", firstDiff(string(got), string(want)))
	}
}

// TestCommittedTaskModelMatchesTable is the same drift check for the
// task model: models/tasks_table.pml must be exactly what modelgen renders
// from tasks.Table (docs/design.md §7, "The model").
func TestCommittedTaskModelMatchesTable(t *testing.T) {
	m := taskMachine()
	want, err := emit(m, "")
	if err != nil {
		t.Fatal(err)
	}
	path := "../../../models/" + m.include
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run make modelgen", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("models/%s is stale: run make modelgen\n%s", m.include, firstDiff(string(got), string(want)))
	}
}

// TestEveryTaskRowRendered: each row of tasks.Table is a branch of
// task_fire with its guard and its T5 reason bit; every guard is an
// expression over tasks.Facts; a guard key of one table is refused for
// the other.
func TestEveryTaskRowRendered(t *testing.T) {
	src, err := emit(taskMachine(), "")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for i, r := range tasks.Table {
		branch := fmt.Sprintf(":: (task_st == T_S_%s && ev == T_E_%s && T_G_%s) ->\n\t\tassert(task_row == T_NO_ROW); /* ErrAmbiguous */\n\t\ttask_row = %d; task_to = T_S_%s; task_guard = T_K_%s; task_reason = %d;",
			ident(r.From.String()), ident(r.Event.String()), guardKey(r.Guard.Key), i, ident(r.To.String()), guardKey(r.Guard.Key), b2i(r.Message != ""))
		if !strings.Contains(s, branch) {
			t.Errorf("row %d (%s -%s-> %s) has no branch in task_fire", i, r.From, r.Event, r.To)
		}
	}
	if !strings.Contains(s, "#define T_G_replayable ((T_f_Resending))") || !strings.Contains(s, "#define T_G_outcome_unknown ((!T_f_Resending))") {
		t.Error("the loss guards are not rendered over T_f_Resending")
	}
	mut, err := emit(taskMachine(), tasks.Replayable.Key)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mut), "&& T_G_replayable)") || !strings.Contains(string(mut), "(guard dropped)") {
		t.Error("the mutant still guards its rows with replayable")
	}
	if _, err := emit(taskMachine(), fsm.Quiet.Key); !errors.Is(err, ErrUnknownGuard) {
		t.Errorf("a lifecycle guard dropped from the task table: %v", err)
	}
	if ms, err := pick("", tasks.Replayable.Key, false); err != nil || len(ms) != 1 || ms[0].name != "task" {
		t.Errorf("-drop-guard replayable picks %v (%v), want the task model", ms, err)
	}
	if _, err := pick("nope", "", false); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("-model nope: %v", err)
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  committed: %q\n  generated: %q", i+1, x, y)
		}
	}
	return ""
}

// TestEveryRowStateEventAndGuardRendered: each row of fsm.Table is a
// branch of fsm_fire with its own guard, and every state, event and
// guard is declared, so a row or guard added to the table shows up.
func TestEveryRowStateEventAndGuardRendered(t *testing.T) {
	src, err := generate("")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for i, r := range fsm.Table {
		branch := fmt.Sprintf(":: (fsm_st == S_%s && ev == E_%s && G_%s) ->\n\t\tassert(fsm_row == NO_ROW); /* ErrAmbiguous */\n\t\tfsm_row = %d; fsm_to = S_%s;",
			ident(r.From.String()), ident(r.Event.String()), guardKey(r.Guard.Key), i, ident(r.To.String()))
		if !strings.Contains(s, branch) {
			t.Errorf("row %d (%s -%s-> %s) has no branch in fsm_fire", i, r.From, r.Event, r.To)
		}
	}
	for _, st := range fsm.States {
		if !strings.Contains(s, "#define S_"+ident(st.String())+" ") {
			t.Errorf("state %s not declared", st)
		}
	}
	for _, e := range fsm.Events {
		if !strings.Contains(s, "#define E_"+ident(e.String())+" ") {
			t.Errorf("event %s not declared", e)
		}
	}
	for _, g := range fsm.Guards {
		if !strings.Contains(s, "#define G_"+g.Key+" (") {
			t.Errorf("guard %s not declared", g.Key)
		}
	}
}

// TestGuardExpressionsAgreeWithGo: the prime implicants a guard is
// rendered from hold for exactly the Facts values its Go predicate holds
// for, over every Facts value.
func TestGuardExpressionsAgreeWithGo(t *testing.T) {
	names, err := facts()
	if err != nil {
		t.Fatal(err)
	}
	all := uint32(1)<<len(names) - 1
	for _, g := range fsm.Guards {
		var terms []term
		for v := uint32(0); v <= all; v++ {
			if g.Holds(factsOf(v)) {
				terms = append(terms, term{mask: all, val: v})
			}
		}
		primes := primeImplicants(terms)
		for v := uint32(0); v <= all; v++ {
			model := false
			for _, p := range primes {
				if v&p.mask == p.val {
					model = true
				}
			}
			if want := g.Holds(factsOf(v)); model != want {
				t.Errorf("guard %s at %+v: model %v, Go %v (%s)", g.Key, factsOf(v), model, want, expr(g, names))
			}
		}
	}
}

// TestFactsOfSetsEachField: bit i of the tabulation is the i-th field of
// fsm.Facts, one field per bit (the tabulation is only as good as this).
func TestFactsOfSetsEachField(t *testing.T) {
	names, err := facts()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[fsm.Facts]bool{}
	for i := range names {
		f := factsOf(1 << i)
		if f == (fsm.Facts{}) || seen[f] {
			t.Errorf("bit %d (%s) sets no field of its own: %+v", i, names[i], f)
		}
		seen[f] = true
	}
	if got := expr(fsm.GenCurrent, names); got != "(!f_Stale)" {
		t.Errorf("gen_current renders as %q, want (!f_Stale)", got)
	}
}

// TestDropGuard: the mutant's rows lose the guard and say so; the rest
// is unchanged; an unknown key is refused by name.
func TestDropGuard(t *testing.T) {
	base, err := generate("")
	if err != nil {
		t.Fatal(err)
	}
	mut, err := generate(fsm.Quiet.Key)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mut), "&& G_quiet)") || !strings.Contains(string(mut), "(guard dropped)") {
		t.Error("the mutant still guards its rows with quiet")
	}
	if !strings.Contains(string(base), "&& G_quiet)") {
		t.Error("the model does not guard idle_timeout with quiet")
	}
	if _, err := generate("no_such_guard"); !errors.Is(err, ErrUnknownGuard) || !strings.Contains(err.Error(), "no_such_guard") {
		t.Errorf("unknown guard: %v", err)
	}
}

// TestRunFlags: -o writes the include; bad flags are refused.
func TestRunFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fsm.pml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("code %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	want, _ := generate("")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("-o wrote something else (%v)", err)
	}
	for _, args := range [][]string{{}, {"-o", out, "-check", "x"}, {"-o", out, "extra"}} {
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: code %d, want 2", args, code)
		}
	}
	if code := run([]string{"-o", out, "-drop-guard", "nope"}, &stdout, &stderr); code != 1 {
		t.Errorf("unknown guard: code %d, want 1", code)
	}
	taskOut := filepath.Join(t.TempDir(), "tasks_table.pml")
	if code := run([]string{"-model", "task", "-o", taskOut}, &stdout, &stderr); code != 0 {
		t.Fatalf("-model task: code %d: %s", code, stderr.String())
	}
	got, err = os.ReadFile(taskOut)
	want, _ = emit(taskMachine(), "")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("-model task -o wrote something else (%v)", err)
	}
	stderr.Reset()
	if code := run([]string{"-model", "nope", "-o", out}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `"nope"`) {
		t.Errorf("unknown model: code %d, %q", code, stderr.String())
	}
}

// TestEvents: a replayed trail keeps the model's events and SPIN's verdict.
func TestEvents(t *testing.T) {
	in := "          EV loop: start\nspin: trail ends after 3 steps\n#processes: 2\n  EV   row 0: a -b-> c\nspin: x.pml:3, Error: assertion violated\n"
	want := "  loop: start\n  row 0: a -b-> c\n  ** spin: x.pml:3, Error: assertion violated\n"
	if got := events(in); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
}
