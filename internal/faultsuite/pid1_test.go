//go:build linux

package faultsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pid1Restarts is how many generations of the wrapper server the PID 1
// host kills and restarts.
const pid1Restarts = 5

// pid1Gen is what the PID 1 host saw of one generation.
type pid1Gen struct {
	Leader, Grandchild int
	Status             string // the leader's exit status, as its generation reports it
	GrandchildReaped   bool   // the orphaned grandchild's zombie was reaped
	Err                string
}

// pid1Report is the PID 1 host's report on its stdout.
type pid1Report struct {
	Pid     int
	Init    bool
	Gens    []pid1Gen
	Zombies []string // /proc entries in state Z at the end
	Err     string
}

var _ = role("pid1-host", pid1Host)

// pid1Host runs as PID 1 of a fresh PID namespace, as mcpkeep does as a
// container's entrypoint, and runs a wrapper server (sh -c 'server &
// wait', as npx and uvx wrap theirs) generation after generation, each
// ended by killing the wrapper alone: its server is orphaned to PID 1,
// ends when its stdin closes, and stays a zombie unless PID 1 reaps it.
func pid1Host() {
	rep := pid1Report{Pid: os.Getpid(), Init: transport.IsInit()}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stop := transport.StartReaper(context.Background(), log)
	defer stop()

	path, args, env := fixture.CommandEnv("normal")
	s := &transport.Stdio{
		Command: "/bin/sh",
		// dash gives a background command /dev/null as stdin unless it
		// is redirected from another descriptor.
		Args:       []string{"-c", `exec 3<&0; "$0" "$@" <&3 3<&- & wait`, path},
		Env:        env,
		Server:     "wrapped",
		Logger:     log,
		StdinGrace: time.Second, TermGrace: time.Second, KillGrace: time.Second,
	}
	s.Args = append(s.Args, args...)
	for gen := uint64(1); gen <= pid1Restarts; gen++ {
		rep.Gens = append(rep.Gens, pid1Generation(s, gen))
	}
	// The last orphan may still be on its way to the reaper.
	deadline := time.Now().Add(2 * time.Second)
	for {
		rep.Zombies = zombies()
		if len(rep.Zombies) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pid1Generation opens generation gen, connects, kills its wrapper (the
// leader) alone, and waits for the generation to end.
func pid1Generation(s *transport.Stdio, gen uint64) (pg pid1Gen) {
	g, err := s.Open(context.Background(), gen)
	if err != nil {
		pg.Err = err.Error()
		return pg
	}
	pg.Leader = g.(interface{ Pid() int }).Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pid1-host", Version: "1"}, nil).Connect(ctx, g.Transport(), nil)
	cancel()
	if err != nil {
		pg.Err = "connect: " + err.Error()
	} else {
		defer cs.Close()
		pg.Grandchild = firstChild(pg.Leader)
		syscall.Kill(pg.Leader, syscall.SIGKILL)
	}
	select {
	case <-g.Gone():
	case <-time.After(s.TerminationWindow()):
		pg.Err += "; generation not gone"
		g.Terminate()
		<-g.Gone()
	}
	pg.Status = g.Exit().Status
	if pg.Grandchild > 0 {
		deadline := time.Now().Add(2 * time.Second)
		for {
			_, err := os.Stat("/proc/" + strconv.Itoa(pg.Grandchild))
			if pg.GrandchildReaped = os.IsNotExist(err); pg.GrandchildReaped || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return pg
}

// firstChild is the first child of pid, or 0.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	c, _ := strconv.Atoi(f[0])
	return c
}

// zombies lists the processes in state Z, as "pid (comm)".
func zombies() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 0 && f[0] == "Z" {
			out = append(out, string(b[:i+1]))
		}
	}
	return out
}

// unshareFlags finds how this machine lets a process start a PID
// namespace with its own /proc, or says why it does not.
func unshareFlags() ([]string, string) {
	if _, err := exec.LookPath("unshare"); err != nil {
		return nil, "unshare(1) is not installed"
	}
	var why []string
	for _, flags := range [][]string{
		{"--pid", "--fork", "--mount-proc"},
		{"--user", "--map-root-user", "--pid", "--fork", "--mount-proc"},
	} {
		out, err := exec.Command("unshare", append(flags, "true")...).CombinedOutput()
		if err == nil {
			return flags, ""
		}
		why = append(why, fmt.Sprintf("unshare %s: %v: %s", strings.Join(flags, " "), err, strings.TrimSpace(string(out))))
	}
	return nil, "no PID namespace allowed here: " + strings.Join(why, "; ")
}

// TestFaultPID1ReapsOrphans (docs/design.md §8, docs/kubernetes.md): as
// PID 1, mcpkeep reaps the grandchildren a wrapper server leaves orphaned
// at each restart, so no zombie accumulates, and never reaps a
// generation's own leader before its teardown is done with its group: the
// leader's exit status is the one its generation saw, not a failed wait.
func TestFaultPID1ReapsOrphans(t *testing.T) {
	flags, why := unshareFlags()
	if flags == nil {
		t.Skip(why)
	}
	cmd := exec.Command("unshare", append(flags, testExe(), "-test.run=^$")...)
	cmd.Env = roleEnviron("pid1-host")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pid1-host: %v; stderr:\n%s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("pid1-host did not finish; stderr:\n%s", errb.String())
	}
	var rep pid1Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("pid1-host's report %q: %v; stderr:\n%s", out.String(), err, errb.String())
	}
	if rep.Pid != 1 || !rep.Init {
		t.Fatalf("the host ran as pid %d (IsInit %v), want PID 1", rep.Pid, rep.Init)
	}
	if !strings.Contains(errb.String(), "running as PID 1") {
		t.Errorf("no warning about running as PID 1 in the host's log:\n%s", errb.String())
	}
	if len(rep.Gens) != pid1Restarts {
		t.Fatalf("%d generations, want %d: %+v", len(rep.Gens), pid1Restarts, rep)
	}
	for i, g := range rep.Gens {
		if g.Err != "" || g.Grandchild == 0 {
			t.Errorf("generation %d: %+v", i+1, g)
			continue
		}
		if g.Status != "signal: killed" {
			t.Errorf("generation %d: leader %d's status %q, want \"signal: killed\" (reaped by someone else?)", i+1, g.Leader, g.Status)
		}
		if !g.GrandchildReaped {
			t.Errorf("generation %d: the orphaned server %d was not reaped", i+1, g.Grandchild)
		}
	}
	if len(rep.Zombies) > 0 {
		t.Errorf("%d zombies left after %d restarts: %q", len(rep.Zombies), pid1Restarts, rep.Zombies)
	}
	if t.Failed() {
		t.Logf("host log:\n%s", errb.String())
	}
}
