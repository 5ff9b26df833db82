package main

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownGuard: -drop-guard names no guard of the machine's table.
var ErrUnknownGuard = errors.New("no such guard in the table")

// ident is s as a Promela identifier (backing-off → backing_off).
func ident(s string) string { return strings.ReplaceAll(s, "-", "_") }

// guardKey is the model's name of a row's guard ("always" for none).
func guardKey(key string) string {
	if key == "" {
		return "always"
	}
	return key
}

// generate renders fsm.Table (models/fsm.pml).
func generate(drop string) ([]byte, error) { return emit(lifecycleMachine(), drop) }

// emit renders a machine's declaration as a Promela include: the states,
// the events, the facts the guards read, each guard as an expression
// over them, and <fn>_fire, which takes the one row of (state, event)
// whose guard holds (docs/design.md §7, "The model"). drop names a guard
// whose rows lose it (they become unguarded): the mutant that
// TestMutantsFail shows SPIN catching. Nothing else is hand-written here;
// a row or guard added to the table flows through.
func emit(m machine, drop string) ([]byte, error) {
	if drop != "" && !m.knownGuard(drop) {
		return nil, fmt.Errorf("modelgen: -drop-guard %q: %w of the %s model (%s)", drop, ErrUnknownGuard, m.name, m.source)
	}
	names, err := factNames(m.factsType)
	if err != nil {
		return nil, err
	}
	if len(m.rows) >= 255 || len(m.states) >= 255 || len(m.events) >= 255 {
		return nil, errors.New("modelgen: the model numbers rows, states and events in a byte")
	}
	P, fn := m.pre, m.fn
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	// r replaces the lifecycle model's names by the machine's own.
	r := strings.NewReplacer("NO_ROW", P+"NO_ROW", "fsm_", fn+"_", "S_", P+"S_", "E_", P+"E_", "K_", P+"K_", "G_", P+"G_")
	pr := func(s string) { b.WriteString(r.Replace(s)) }
	p("/* Code generated from %s by internal/cmd/modelgen; DO NOT EDIT. */\n", m.source)
	if drop != "" {
		p("/* MUTANT: guard %s removed from its rows. */\n", drop)
	}
	p("\n/* States (%s). */\n", strings.Replace(m.source, ".Table", ".States", 1))
	for i, s := range m.states {
		p("#define %sS_%s %d\n", P, ident(s), i)
	}
	p("#define %sS_INITIAL %sS_%s\n", P, P, ident(m.initial))
	p("\n/* Events (%s). */\n", strings.Replace(m.source, ".Table", ".Events", 1))
	for i, e := range m.events {
		p("#define %sE_%s %d\n", P, ident(e), i)
	}
	p("\n/* Guard keys (%s; always is the absent guard). */\n", strings.Replace(m.source, ".Table", ".Guards", 1))
	p("#define %sK_always 0\n", P)
	for i, g := range m.guards {
		p("#define %sK_%s %d\n", P, g.key, i+1)
	}
	p("\n/* Facts the guards read (%s); the model sets them per message. */\n", m.factsType)
	for _, n := range names {
		p("bool %sf_%s;\n", P, n)
	}
	p("\n/* Guards: each Guard.Holds tabulated over every Facts value. */\n")
	for _, g := range m.guards {
		p("#define %sG_%s (%s)\n", P, g.key, exprOf(g.holds, names, P+"f_"))
	}
	p("#define %sG_always (1)\n", P)
	p("\n/* The machine: its state, and the row the last %s_fire took. */\n", fn)
	p("#define %sNO_ROW 255\n", P)
	p("#define %sNROWS %d\n", P, len(m.rows))
	pr("byte fsm_st = S_INITIAL;\n")
	pr("byte fsm_row = NO_ROW;\n")
	pr("byte fsm_guard;\n")
	pr("byte fsm_to;\n")
	pr("bool fsm_ok;\n")
	if m.reasons {
		p("/* The row sets a message: a failure mcpkeep makes says why (T5). */\n")
		p("bool %s_reason;\n", fn)
	}
	pr(`
/* fsm_fire(ev): Machine.Fire. The row of (fsm_st, ev) whose guard holds is
 * taken (fsm_ok, fsm_row, fsm_guard set); none is the drop (fsm_ok false,
 * nothing changes); two is ErrAmbiguous, an assertion. */
inline fsm_fire(ev) {
	fsm_row = NO_ROW;
`)
	for i, t := range m.rows {
		g := t.guard
		if g == drop {
			g = ""
		}
		label := fmt.Sprintf("%s -%s[%s]-> %s", t.from, t.event, guardKey(t.guard), t.to)
		if g != t.guard {
			label += " (guard dropped)"
		}
		p("\tif\n\t:: (%s_st == %sS_%s && ev == %sE_%s && %sG_%s) ->\n", fn, P, ident(t.from), P, ident(t.event), P, guardKey(g))
		p("\t\tassert(%s_row == %sNO_ROW); /* ErrAmbiguous */\n", fn, P)
		p("\t\t%s_row = %d; %s_to = %sS_%s; %s_guard = %sK_%s;", fn, i, fn, P, ident(t.to), fn, P, guardKey(g))
		if m.reasons {
			p(" %s_reason = %d;", fn, b2i(t.reason))
		}
		p("\n\t\tprintf(\"EV   row %d: %s\\n\")\n", i, label)
		p("\t:: else -> skip\n\tfi;\n")
	}
	pr(`	if
	:: fsm_row != NO_ROW -> fsm_st = fsm_to; fsm_ok = true
	:: else -> fsm_ok = false; fsm_print_drop(ev)
	fi;
	fsm_to = 0
}

/* fsm_clear: forget the last row once its handler is done (fewer states). */
inline fsm_clear() {
	fsm_row = NO_ROW; fsm_guard = 0; fsm_ok = false
}

/* fsm_print_drop(ev): the drop, for the trail. */
inline fsm_print_drop(ev) {
	if
`)
	for _, e := range m.events {
		p("\t:: ev == %sE_%s -> printf(\"EV   drop: %s in state \")\n", P, ident(e), e)
	}
	pr("\t:: else -> skip\n\tfi;\n\tfsm_print_state(fsm_st);\n\tprintf(\"\\n\")\n}\n")
	pr("\n/* fsm_print_state(s): a state's name, for the trail. */\ninline fsm_print_state(s) {\n\tif\n")
	for _, s := range m.states {
		p("\t:: s == %sS_%s -> printf(\"%s\")\n", P, ident(s), s)
	}
	p("\t:: else -> skip\n\tfi\n}\n")
	return []byte(b.String()), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
