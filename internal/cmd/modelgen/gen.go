package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// ErrUnknownGuard: -drop-guard names no guard of fsm.Guards.
var ErrUnknownGuard = errors.New("no such guard in fsm.Guards")

// ident is s as a Promela identifier (backing-off → backing_off).
func ident(s string) string { return strings.ReplaceAll(s, "-", "_") }

// guardKey is the model's name of a row's guard ("always" for none).
func guardKey(g fsm.Guard) string {
	if g.Key == "" {
		return "always"
	}
	return g.Key
}

// generate renders fsm's declaration as a Promela include: the states,
// the events, the facts the guards read, each guard as an expression
// over them, and fsm_fire, which takes the one row of (state, event)
// whose guard holds (docs/design.md §7, "The model"). drop names a guard
// whose rows lose it (they become unguarded): the mutant that
// TestMutantsFail shows SPIN catching. Nothing else is hand-written here;
// a row or guard added to fsm.Table flows through.
func generate(drop string) ([]byte, error) {
	if drop != "" && !knownGuard(drop) {
		return nil, fmt.Errorf("modelgen: -drop-guard %q: %w", drop, ErrUnknownGuard)
	}
	names, err := facts()
	if err != nil {
		return nil, err
	}
	if len(fsm.Table) >= 255 || len(fsm.States) >= 255 || len(fsm.Events) >= 255 {
		return nil, errors.New("modelgen: the model numbers rows, states and events in a byte")
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("/* Code generated from fsm.Table by internal/cmd/modelgen; DO NOT EDIT. */\n")
	if drop != "" {
		p("/* MUTANT: guard %s removed from its rows. */\n", drop)
	}
	p("\n/* States (fsm.States). */\n")
	for i, s := range fsm.States {
		p("#define S_%s %d\n", ident(s.String()), i)
	}
	p("#define S_INITIAL S_%s\n", ident(fsm.Initial.String()))
	p("\n/* Events (fsm.Events). */\n")
	for i, e := range fsm.Events {
		p("#define E_%s %d\n", ident(e.String()), i)
	}
	p("\n/* Guard keys (fsm.Guards; always is the absent guard). */\n")
	p("#define K_always 0\n")
	for i, g := range fsm.Guards {
		p("#define K_%s %d\n", g.Key, i+1)
	}
	p("\n/* Facts the guards read (fsm.Facts); the model sets them per message. */\n")
	for _, n := range names {
		p("bool f_%s;\n", n)
	}
	p("\n/* Guards: each Guard.Holds tabulated over every Facts value. */\n")
	for _, g := range fsm.Guards {
		p("#define G_%s (%s)\n", g.Key, expr(g, names))
	}
	p("#define G_always (1)\n")
	p("\n/* The machine: its state, and the row the last fsm_fire took. */\n")
	p("#define NO_ROW 255\n")
	p("#define NROWS %d\n", len(fsm.Table))
	p("byte fsm_st = S_INITIAL;\n")
	p("byte fsm_row = NO_ROW;\n")
	p("byte fsm_guard;\n")
	p("byte fsm_to;\n")
	p("bool fsm_ok;\n")
	p(`
/* fsm_fire(ev): Machine.Fire. The row of (fsm_st, ev) whose guard holds is
 * taken (fsm_ok, fsm_row, fsm_guard set); none is the drop (fsm_ok false,
 * nothing changes); two is ErrAmbiguous, an assertion. */
inline fsm_fire(ev) {
	fsm_row = NO_ROW;
`)
	for i, t := range fsm.Table {
		g := t.Guard
		if g.Key == drop {
			g = fsm.Always
		}
		label := fmt.Sprintf("%s -%s[%s]-> %s", t.From, t.Event, guardKey(t.Guard), t.To)
		if g.Key != t.Guard.Key {
			label += " (guard dropped)"
		}
		p("\tif\n\t:: (fsm_st == S_%s && ev == E_%s && G_%s) ->\n", ident(t.From.String()), ident(t.Event.String()), guardKey(g))
		p("\t\tassert(fsm_row == NO_ROW); /* ErrAmbiguous */\n")
		p("\t\tfsm_row = %d; fsm_to = S_%s; fsm_guard = K_%s;\n", i, ident(t.To.String()), guardKey(g))
		p("\t\tprintf(\"EV   row %d: %s\\n\")\n", i, label)
		p("\t:: else -> skip\n\tfi;\n")
	}
	p(`	if
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
	for _, e := range fsm.Events {
		p("\t:: ev == E_%s -> printf(\"EV   drop: %s in state \")\n", ident(e.String()), e)
	}
	p("\t:: else -> skip\n\tfi;\n\tfsm_print_state(fsm_st);\n\tprintf(\"\\n\")\n}\n")
	p("\n/* fsm_print_state(s): a state's name, for the trail. */\ninline fsm_print_state(s) {\n\tif\n")
	for _, s := range fsm.States {
		p("\t:: s == S_%s -> printf(\"%s\")\n", ident(s.String()), s)
	}
	p("\t:: else -> skip\n\tfi\n}\n")
	return []byte(b.String()), nil
}

func knownGuard(key string) bool {
	for _, g := range fsm.Guards {
		if g.Key == key {
			return true
		}
	}
	return false
}
