package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"a", true},
		{"files__read_file", true},
		{"A-z_09", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"a.b", false},
		{"a b", false},
		{"é", false},
		{"a/b", false},
	} {
		if got := ValidName(tc.in); got != tc.want {
			t.Errorf("ValidName(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// hash8 recomputes the documented suffix independently of nameHash.
func hash8(in string) string {
	sum := sha256.Sum256([]byte(in))
	return hex.EncodeToString(sum[:4])
}

func TestPublicNamesRules(t *testing.T) {
	long := strings.Repeat("L", 70)
	for _, tc := range []struct {
		name, server, tool, want string
	}{
		{"clean", "files", "read_file", "files__read_file"},
		{"dash", "my-srv", "get-x", "my-srv__get-x"},
		{"dot normalized and hashed", "files", "search.grep",
			"files__search_grep_" + hash8("files\x00search.grep")},
		{"multibyte rune is one underscore", "s", "héllo",
			"s__h_llo_" + hash8("s\x00héllo")},
		{"invalid server name is normalized too", "my.srv", "x",
			"my_srv__x_" + hash8("my.srv\x00x")},
		{"too long is cut to 55 plus suffix", "s", long,
			("s__" + long)[:55] + "_" + hash8("s\x00"+long)},
		{"exactly 64 stays clean", "s", strings.Repeat("y", 61), "s__" + strings.Repeat("y", 61)},
		{"65 is hashed", "s", strings.Repeat("y", 62),
			("s__" + strings.Repeat("y", 62))[:55] + "_" + hash8("s\x00"+strings.Repeat("y", 62))},
		{"long server leaves no room for the tool", strings.Repeat("S", 80), "t",
			strings.Repeat("S", 55) + "_" + hash8(strings.Repeat("S", 80)+"\x00t")},
		{"empty tool", "s", "", "s__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PublicNames(tc.server, []string{tc.tool})[0]
			if got != tc.want {
				t.Errorf("PublicNames(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
			}
			if !ValidName(got) {
				t.Errorf("%q is not valid", got)
			}
		})
	}
}

func TestPublicNamesCollideAfterNormalization(t *testing.T) {
	got := PublicNames("s", []string{"a.b", "a b", "a_b"})
	want := []string{"s__a_b_" + hash8("s\x00a.b"), "s__a_b_" + hash8("s\x00a b"), "s__a_b"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// A tool may be named exactly like another tool's hashed public name. The
// clean name keeps its name in any order; the hashed one moves to round 1.
func TestPublicNamesHashedMeetsClean(t *testing.T) {
	hashed := PublicNames("s", []string{"x.y"})[0] // s__x_y_<hash>
	impostor := strings.TrimPrefix(hashed, "s__")  // a tool whose clean name is that
	round1 := "s__x_y_" + hash8("s\x00x.y\x001")

	for _, order := range [][]string{{"x.y", impostor}, {impostor, "x.y"}} {
		got := PublicNames("s", order)
		m := map[string]string{order[0]: got[0], order[1]: got[1]}
		if m[impostor] != hashed {
			t.Errorf("order %q: clean tool %q got %q, want its clean name %q", order, impostor, m[impostor], hashed)
		}
		if m["x.y"] != round1 {
			t.Errorf("order %q: x.y got %q, want round-1 name %q", order, m["x.y"], round1)
		}
	}
}

// Two long names share the 55-character prefix and the first 4 bytes of
// their sha256 (found by search): the smaller original keeps the round-0
// name, the other takes round 1, in either order.
func TestPublicNamesHashCollision(t *testing.T) {
	a := strings.Repeat("t", 60) + "59600"
	b := strings.Repeat("t", 60) + "83011"
	if hash8("s\x00"+a) != hash8("s\x00"+b) {
		t.Fatal("fixture no longer collides")
	}
	prefix := ("s__" + a)[:55] + "_"
	wantA, wantB := prefix+hash8("s\x00"+a), prefix+hash8("s\x00"+b+"\x001")
	for _, order := range [][]string{{a, b}, {b, a}} {
		got := PublicNames("s", order)
		m := map[string]string{order[0]: got[0], order[1]: got[1]}
		if m[a] != wantA || m[b] != wantB {
			t.Errorf("order starting %q: got a=%q b=%q, want %q %q", order[0][60:], m[a], m[b], wantA, wantB)
		}
	}
}

// The resolver on its own, with scripted candidates: a round-1 proposal that
// hits a name given out in round 0 loses and goes on to round 2.
func TestAssignTakenInEarlierRound(t *testing.T) {
	script := map[string][]string{
		"a": {"X", "Y", "Z"},
		"b": {"X", "A", "W"}, // loses X to a, then proposes A, which c holds
		"c": {"A"},
	}
	cand := func(n string, round int) (string, bool) { return script[n][round], true }
	got := assign([]string{"c", "b", "a"}, cand)
	want := map[string]string{"a": "X", "c": "A", "b": "W"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("assign = %v, want %v", got, want)
	}
}

func TestAssignCleanBeatsSmallerHashed(t *testing.T) {
	cand := func(n string, round int) (string, bool) {
		if round > 0 {
			return n + "'", true
		}
		return "P", n != "z" // z proposes P clean, a proposes it hashed
	}
	got := assign([]string{"a", "z"}, cand)
	if got["z"] != "P" || got["a"] != "a'" {
		t.Errorf("assign = %v, want z=P a=a'", got)
	}
}

func TestPublicNamesDuplicatesShareName(t *testing.T) {
	got := PublicNames("s", []string{"a", "a"})
	if got[0] != "s__a" || got[1] != "s__a" {
		t.Errorf("got %q", got)
	}
}

// nameGen draws tool names that stress the namer: clean, with invalid
// characters, long, near-collisions, and names shaped like hashed names.
func nameGen() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.StringMatching(`[a-z_]{0,6}`),
		rapid.StringMatching(`[a-z._ -]{1,8}`),
		rapid.StringMatching(`[a-zé/.]{50,80}`),
		rapid.StringMatching(`x_y_[0-9a-f]{8}`),
		rapid.String(),
	)
}

func TestPublicNamesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		server := rapid.OneOf(rapid.StringMatching(`[a-z]{1,8}`), rapid.String()).Draw(t, "server")
		names := rapid.SliceOfDistinct(nameGen(), rapid.ID).Draw(t, "names")
		// Sometimes add a tool named exactly like another's hashed name.
		if len(names) > 0 && rapid.Bool().Draw(t, "impostor") {
			h := PublicNames(server, names[:1])[0]
			if imp, ok := strings.CutPrefix(h, server+"__"); ok && !contains(names, imp) {
				names = append(names, imp)
			}
		}
		got := PublicNames(server, names)
		if len(got) != len(names) {
			t.Fatalf("got %d names for %d", len(got), len(names))
		}
		seen := map[string]string{}
		for i, p := range got {
			if !ValidName(p) {
				t.Fatalf("%q -> %q is invalid", names[i], p)
			}
			if other, dup := seen[p]; dup {
				t.Fatalf("%q and %q both -> %q", other, names[i], p)
			}
			seen[p] = names[i]
			if full := server + "__" + names[i]; ValidName(full) && p != full {
				t.Fatalf("clean %q -> %q, want itself", full, p)
			}
		}
		perm := rapid.Permutation(names).Draw(t, "perm")
		again := PublicNames(server, perm)
		for i, n := range perm {
			if want := got[indexOf(names, n)]; again[i] != want {
				t.Fatalf("%q -> %q in one order, %q in another", n, want, again[i])
			}
		}
	})
}

func contains(s []string, x string) bool { return indexOf(s, x) >= 0 }

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}
