package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReplicasWanted: auto runs the column when redis-server and haproxy
// are both on PATH and otherwise says what to install; on, or auto with
// MCPKEEP_REQUIRE_REPLICAS=1, fails naming what is missing; off never
// runs it; another mode is refused naming the flag.
func TestReplicasWanted(t *testing.T) {
	all := func(string) (string, error) { return "/usr/bin/x", nil }
	noHAProxy := func(p string) (string, error) {
		if p == "haproxy" {
			return "", exec.ErrNotFound
		}
		return "/usr/bin/" + p, nil
	}
	for _, tc := range []struct {
		mode    string
		require bool
		look    func(string) (string, error)
		run     bool
		note    string // a substring; "" none
		err     string // a substring; "" none
	}{
		{mode: "auto", look: all, run: true},
		{mode: "on", look: all, run: true},
		{mode: "off", look: all},
		{mode: "off", require: true, look: noHAProxy},
		{mode: "auto", look: noHAProxy, note: "haproxy not on PATH (apt-get install -y haproxy)"},
		{mode: "auto", require: true, look: noHAProxy, err: "MCPKEEP_REQUIRE_REPLICAS=1"},
		{mode: "on", look: noHAProxy, err: "-replicas on"},
		{mode: "control", look: all, run: true},
		{mode: "control", look: noHAProxy, err: "-replicas control"},
		{mode: "yes", look: all, err: `-replicas "yes"`},
	} {
		run, note, err := replicasWanted(tc.mode, tc.require, tc.look)
		if run != tc.run {
			t.Errorf("%s (require %v): run = %v, want %v", tc.mode, tc.require, run, tc.run)
		}
		if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("%s (require %v): note = %q, want one with %q", tc.mode, tc.require, note, tc.note)
		}
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s (require %v): err = %v, want one with %q", tc.mode, tc.require, err, tc.err)
		}
		if err != nil && tc.mode != "yes" && !strings.Contains(err.Error(), "haproxy") {
			t.Errorf("%s: err = %v, want it to name haproxy", tc.mode, err)
		}
	}
}

// TestReplicasColumnHeldToRunStdio: with -replicas the column is there,
// named in mustpass.txt's ids, held to run (stdio) alone; a scenario that
// passes through one replica and fails through three is a regression,
// one that fails through both is none.
func TestReplicasColumnHeldToRunStdio(t *testing.T) {
	if ecs := (&harness{}).eraColumns(); len(ecs) != 6 {
		t.Fatalf("without -replicas: %d columns, want 6", len(ecs))
	}
	ecs := (&harness{withReplicas: true}).eraColumns()
	last := ecs[len(ecs)-1]
	if last.id != replicasColumnID || last.name != replicasColumnName || len(last.refs) != 1 || ecs[last.refs[0]].id != "stdio" {
		t.Fatalf("replicas column = %+v, want %q held to stdio", last, replicasColumnID)
	}
	if _, err := parseMustPass([]byte("2026-07-28 tasks-lifecycle replicas\n")); err != nil {
		t.Fatalf("mustpass.txt refuses the replicas column: %v", err)
	}
	pass, fail := outcome{Passed: 1}, outcome{Passed: 1, Failed: 1, Failures: []string{"x: no"}}
	cols := make([]column, len(ecs))
	for i, ec := range ecs {
		cols[i] = column{Name: ec.name, Results: map[string]outcome{"a": pass, "b": pass, "c": fail}}
	}
	// a: fails only through three; c: fails through one and three.
	cols[len(cols)-1].Results = map[string]outcome{"a": fail, "b": pass, "c": fail}
	var got []string
	for _, r := range compareEras(cols, ecs, nil) {
		got = append(got, r.Column+"/"+r.Scenario)
	}
	if want := []string{replicasColumnName + "/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("regressions = %v, want %v", got, want)
	}
}

// TestParseReplicaCounts reads the dispatcher's counters from a replica's
// /metrics, and refuses a page without them.
func TestParseReplicaCounts(t *testing.T) {
	page := `# HELP mcpkeep_replica_forwarded_total Requests forwarded.
# TYPE mcpkeep_replica_forwarded_total counter
mcpkeep_replica_forwarded_total 1.234e+06
mcpkeep_replica_owner_gone_total 2
mcpkeep_replica_loop_refused_total 0
mcpkeep_replica_members 3
`
	got, err := parseReplicaCounts(page)
	if err != nil {
		t.Fatal(err)
	}
	if want := (replicaCounts{Forwarded: 1234000, OwnerGone: 2}); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	_, err = parseReplicaCounts("mcpkeep_replica_forwarded_total 1\nmcpkeep_replica_owner_gone_total 0\n")
	if err == nil || !strings.Contains(err.Error(), "mcpkeep_replica_loop_refused_total") {
		t.Errorf("a page without the loop counter: err = %v, want it named", err)
	}
	_, err = parseReplicaCounts("mcpkeep_replica_forwarded_total x\n")
	if err == nil || !strings.Contains(err.Error(), "bad value") {
		t.Errorf("a bad value: err = %v", err)
	}
}

// TestForwardVerdict: a replicas column where nothing was forwarded
// fails (it tested no forwarding), unless forwarding was off on purpose;
// a replica whose counts could not be read fails.
func TestForwardVerdict(t *testing.T) {
	if err := forwardVerdict(replicaCounts{}, nil, false); !errors.Is(err, errNothingForwarded) {
		t.Errorf("nothing forwarded: %v, want errNothingForwarded", err)
	}
	if err := forwardVerdict(replicaCounts{}, nil, true); err != nil {
		t.Errorf("nothing forwarded, control: %v, want nil", err)
	}
	if err := forwardVerdict(replicaCounts{Forwarded: 3}, nil, false); err != nil {
		t.Errorf("forwarded 3: %v, want nil", err)
	}
	bad := errors.New("replica x: /metrics: refused")
	if err := forwardVerdict(replicaCounts{Forwarded: 3}, []error{bad}, false); !errors.Is(err, bad) {
		t.Errorf("unreadable counts: %v, want %v", err, bad)
	}
}

// TestPrimeReplica: each list-change hook is called once on the replica
// at the address given, and a hook that fails is an error naming the
// replica and the hook.
func TestPrimeReplica(t *testing.T) {
	for _, failing := range []string{"", primeTools[1]} {
		calls := map[string]int{}
		var mu sync.Mutex
		srv := mcp.NewServer(&mcp.Implementation{Name: "ev", Version: "0"}, nil)
		for _, name := range primeTools {
			mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				mu.Lock()
				calls[name]++
				mu.Unlock()
				if name == failing {
					return nil, nil, errors.New("hook broke")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
			})
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		addr := strings.TrimPrefix(hs.URL, "http://")
		err := primeReplica(context.Background(), addr)
		hs.Close()
		switch {
		case failing == "" && err != nil:
			t.Errorf("prime: %v", err)
		case failing != "" && (err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), failing)):
			t.Errorf("prime with %s failing: %v, want an error naming %s and it", failing, err, addr)
		}
		for _, name := range primeTools {
			if calls[name] != 1 {
				t.Errorf("failing %q: %s called %d times, want 1", failing, name, calls[name])
			}
		}
	}
}
