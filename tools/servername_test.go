package tools

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckServerName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		problem string // empty: accepted
	}{
		{"a", ""},
		{"a_b", ""},
		{"a-b", ""},
		{"A1", ""},
		{"_a", ""},
		{"a-", ""},
		{"a_b_c", ""},
		{strings.Repeat("x", 32), ""},
		{strings.Repeat("x", 33), "has 33 characters"},
		{"", "is empty"},
		{"a.b", `has '.' at byte 1`},
		{"a b", `has ' ' at byte 1`},
		{"é", "has a non-ASCII character at byte 0"},
		{"a/b", `has '/' at byte 1`},
		{"a__b", `contains "__"`},
		{"__a", `contains "__"`},
		{"a___b", `contains "__"`},
		{"a_", `ends in "_"`},
		{"_", `ends in "_"`},
	} {
		err := CheckServerName(tc.name)
		if ValidServerName(tc.name) != (err == nil) {
			t.Errorf("ValidServerName(%q) disagrees with CheckServerName: %v", tc.name, err)
		}
		if tc.problem == "" {
			if err != nil {
				t.Errorf("CheckServerName(%q) = %v, want nil", tc.name, err)
			}
			continue
		}
		var se *ServerNameError
		if !errors.As(err, &se) || se.Name != tc.name || se.Problem != tc.problem {
			t.Errorf("CheckServerName(%q) = %#v, want a *ServerNameError %q", tc.name, err, tc.problem)
			continue
		}
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("CheckServerName(%q): not ErrInvalidName", tc.name)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, ServerNameRule) || !strings.HasSuffix(msg, tc.problem) {
			t.Errorf("CheckServerName(%q) says %q: want the rule, then what breaks it", tc.name, msg)
		}
	}
}

// TestCheckServerNameEndsAtFirstSeparator: for every accepted server name
// and any tool name, the first "__" of the public name is where the server
// name ends (the property R29 rests on).
func TestCheckServerNameEndsAtFirstSeparator(t *testing.T) {
	alphabet := []string{"a", "_", "-"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		if prefix != "" {
			names = append(names, prefix)
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	for _, server := range names {
		if !ValidServerName(server) {
			continue
		}
		for _, tool := range append(names, "a.b", "__") {
			public := PublicNames(server, []string{tool})[0]
			if i := strings.Index(public, "__"); i != len(server) {
				t.Fatalf("server %q tool %q: public %q: first \"__\" at %d", server, tool, public, i)
			}
		}
	}
}
