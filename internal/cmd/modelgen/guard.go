package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mcpkeep/mcpkeep/fsm"
)

// facts are the boolean fields of fsm.Facts.
func facts() ([]string, error) { return factNames(reflect.TypeFor[fsm.Facts]()) }

// factNames are the boolean fields of a Facts struct, found by reflection
// so that a fact added to the declaration flows into the model without an
// edit here (docs/design.md §7, "The model").
func factNames(t reflect.Type) ([]string, error) {
	var names []string
	for f := range t.Fields() {
		if f.Type.Kind() != reflect.Bool {
			return nil, fmt.Errorf("modelgen: %s.%s is a %s: the model knows only boolean facts", t, f.Name, f.Type)
		}
		names = append(names, f.Name)
	}
	if len(names) > 16 {
		return nil, fmt.Errorf("modelgen: %s has %d fields: too many to tabulate the guards", t, len(names))
	}
	return names, nil
}

// factsOf is the Facts value whose i-th boolean field is bit i of v.
func factsOf(v uint32) fsm.Facts {
	var f fsm.Facts
	fillFacts(&f, v)
	return f
}

// term is a product of literals: the bits of mask are fixed to those of val.
type term struct{ mask, val uint32 }

// expr turns a guard's Go predicate into a Promela expression over the
// fact variables (f_<Field>): its truth table over every Facts value,
// reduced to its prime implicants (Quine–McCluskey without the cover
// step; the disjunction of all prime implicants is the function itself).
// The guard is data this way: what the Go code evaluates is what the
// model evaluates.
func expr(g fsm.Guard, names []string) string {
	return exprOf(func(v uint32) bool { return g.Holds(factsOf(v)) }, names, "f_")
}

// exprOf is expr for any machine's guard: holds over the bits of a Facts
// value, the fact variables named prefix+field.
func exprOf(holds func(uint32) bool, names []string, prefix string) string {
	n := uint32(len(names))
	all := uint32(1)<<n - 1
	var terms []term
	for v := uint32(0); v <= all; v++ {
		if holds(v) {
			terms = append(terms, term{mask: all, val: v})
		}
	}
	switch {
	case len(terms) == 0:
		return "0"
	case len(terms) == int(all)+1:
		return "1"
	}
	return render(primeImplicants(terms), names, prefix)
}

// render writes a disjunction of products over the fact variables.
func render(primes []term, names []string, prefix string) string {
	n := uint32(len(names))
	var ors []string
	for _, p := range primes {
		var ands []string
		for i := range n {
			if p.mask&(1<<i) == 0 {
				continue
			}
			lit := prefix + names[i]
			if p.val&(1<<i) == 0 {
				lit = "!" + lit
			}
			ands = append(ands, lit)
		}
		ors = append(ors, "("+strings.Join(ands, " && ")+")")
	}
	return strings.Join(ors, " || ")
}

func primeImplicants(terms []term) []term {
	var primes []term
	for len(terms) > 0 {
		used := make([]bool, len(terms))
		var next []term
		for i := range terms {
			for j := i + 1; j < len(terms); j++ {
				a, b := terms[i], terms[j]
				if a.mask != b.mask {
					continue
				}
				d := a.val ^ b.val
				if d == 0 || d&(d-1) != 0 {
					continue
				}
				used[i], used[j] = true, true
				c := term{mask: a.mask &^ d, val: a.val &^ d}
				if !slices.Contains(next, c) {
					next = append(next, c)
				}
			}
		}
		for i, t := range terms {
			if !used[i] && !slices.Contains(primes, t) {
				primes = append(primes, t)
			}
		}
		terms = next
	}
	slices.SortFunc(primes, func(a, b term) int {
		if a.mask != b.mask {
			return int(b.mask) - int(a.mask)
		}
		return int(a.val) - int(b.val)
	})
	return primes
}
