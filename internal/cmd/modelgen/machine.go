package main

import (
	"reflect"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tasks"
)

// machine is a declared table as the generator reads it: fsm.Table (the
// connection lifecycle) or tasks.Table (a task, docs/design.md §25). Both
// are rendered by the same code, so the two models are generated alike
// (docs/design.md §7, "The model").
type machine struct {
	// name is the model's name on the command line and in reports.
	name string
	// source names the declaration in the generated file's header.
	source string
	// pre prefixes every macro and variable of the include, so that two
	// includes never clash ("" for fsm keeps models/fsm.pml as it was).
	pre string
	// fn prefixes the inlines and the machine's variables (fsm_fire).
	fn string
	// factsType is the guards' Facts struct (its boolean fields).
	factsType reflect.Type
	states    []string
	initial   string
	events    []string
	guards    []guardDef
	rows      []row
	// entry is the hand-written model in models/ that includes the
	// generated file include; properties are what SPIN checks of it.
	entry, include string
	properties     []property
	// reasons: the include records, per row, whether it sets a message
	// (tasks: T5, a failure mcpkeep makes says why).
	reasons bool
}

type guardDef struct {
	key   string
	holds func(v uint32) bool // over the Facts value whose bit i is field i
}

type row struct {
	from, event, guard, to string // guard "" is the absent guard
	reason                 bool
}

// fillFacts sets the boolean fields of the struct p points to from the
// bits of v (field i is bit i).
func fillFacts(p any, v uint32) {
	rv := reflect.ValueOf(p).Elem()
	for i := range rv.NumField() {
		rv.Field(i).SetBool(v&(1<<i) != 0)
	}
}

func taskFactsOf(v uint32) tasks.Facts {
	var f tasks.Facts
	fillFacts(&f, v)
	return f
}

func lifecycleMachine() machine {
	m := machine{name: "lifecycle", source: "fsm.Table", fn: "fsm", factsType: reflect.TypeFor[fsm.Facts](),
		initial: fsm.Initial.String(), entry: "lifecycle.pml", include: "fsm.pml", properties: lifecycleProperties}
	for _, s := range fsm.States {
		m.states = append(m.states, s.String())
	}
	for _, e := range fsm.Events {
		m.events = append(m.events, e.String())
	}
	for _, g := range fsm.Guards {
		m.guards = append(m.guards, guardDef{key: g.Key, holds: func(v uint32) bool { return g.Holds(factsOf(v)) }})
	}
	for _, t := range fsm.Table {
		m.rows = append(m.rows, row{from: t.From.String(), event: t.Event.String(), guard: t.Guard.Key, to: t.To.String()})
	}
	return m
}

func taskMachine() machine {
	m := machine{name: "task", source: "tasks.Table", pre: "T_", fn: "task", factsType: reflect.TypeFor[tasks.Facts](),
		initial: tasks.Initial.String(), reasons: true,
		entry: "task.pml", include: "tasks_table.pml", properties: taskProperties}
	for _, s := range tasks.States {
		m.states = append(m.states, s.String())
	}
	for _, e := range tasks.Events {
		m.events = append(m.events, e.String())
	}
	for _, g := range tasks.Guards {
		m.guards = append(m.guards, guardDef{key: g.Key, holds: func(v uint32) bool { return g.Holds(taskFactsOf(v)) }})
	}
	for _, t := range tasks.Table {
		m.rows = append(m.rows, row{from: t.From.String(), event: t.Event.String(), guard: t.Guard.Key,
			to: t.To.String(), reason: t.Message != ""})
	}
	return m
}

// machines lists every declared table with a model, in the order make
// model checks them.
func machines() []machine { return []machine{lifecycleMachine(), taskMachine()} }

func (m machine) knownGuard(key string) bool {
	for _, g := range m.guards {
		if g.key == key {
			return true
		}
	}
	return false
}
