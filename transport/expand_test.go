package transport_test

import (
	"fmt"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
)

// The expansion of env and header values (docs/design.md §11): "$$" is a
// literal "$", names expand, everything else after a "$" stays literal.
func TestExpandEnvDollars(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"A": "x", "A_1": "y", "_": "u"}[k]
		return v, ok
	}
	for in, want := range map[string]string{
		"pa$$w0rd":      "pa$w0rd",
		"$$$A":          "$x",
		"$$$$":          "$$",
		"$A$A_1${A}":    "xyx",
		"${A}B":         "xB",
		"$A-b":          "x-b",
		"$_":            "u",
		"$1ab":          "$1ab",
		"a$-b":          "a$-b",
		"end$":          "end$",
		"${A":           "${A",
		"x${}y":         "x${}y",
		"${1x}z":        "${1x}z",
		"${A B}":        "${A B}",
		"$UNSET/${NOT}": "/",
		"no dollar":     "no dollar",
		"":              "",
	} {
		got := transport.ExpandEnv(map[string]string{"K": in}, lookup)["K"]
		if got != want {
			t.Errorf("expand %q = %q, want %q", in, got, want)
		}
	}
}

func TestEnvRefs(t *testing.T) {
	names, problems := transport.EnvRefs("$A ${B} $$C ${A} ${open")
	if fmt.Sprint(names) != "[A B]" {
		t.Errorf("names %v, want [A B] ($$C is no reference, A once)", names)
	}
	if len(problems) != 1 {
		t.Errorf("problems %q, want the unterminated ${", problems)
	}
}
