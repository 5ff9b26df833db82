package privatefile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envCrashChild, set to a path, makes the test binary a writer of that
// path that stops (for the parent to kill it) after its temporary file is
// written and synced, before the rename.
const envCrashChild = "PRIVATEFILE_TEST_CRASH_CHILD"

const secret = "token-that-must-not-linger"

func crashChild(path string) {
	err := write(path, []byte(secret), func() {
		fmt.Println("written")
		select {} // killed here
	})
	fmt.Println("error:", err)
	os.Exit(2)
}

// TestCrashedWriteLeavesNoTemp: a writer killed between writing its
// temporary file and renaming it leaves the secret in that file; the
// next Write in the directory removes it. A live writer's temporary file
// is left alone.
func TestCrashedWriteLeavesNoTemp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+filepath.Join(dir, "entry.json"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() }) // bounds the read below
	defer timer.Stop()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "written\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	if n := tempsHolding(t, dir); n != 1 {
		t.Fatalf("%d temporary files hold the secret while the writer lives, want 1", n)
	}
	CleanTemps(dir) // the writer is alive: its file stays
	if n := tempsHolding(t, dir); n != 1 {
		t.Fatalf("a live writer's temporary file was removed")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	waited = true

	if err := Write(filepath.Join(dir, "other.json"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := tempsHolding(t, dir); n != 0 {
		t.Fatalf("%d temporary files still hold the crashed writer's secret", n)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "other.json" {
		t.Fatalf("left in the directory: %v", ents)
	}
}

func tempsHolding(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), secret) {
			n++
		}
	}
	return n
}

// TestWriteRefusesUnsafeDir: a directory its group or others may write
// to is refused, naming it; nothing is written there.
func TestWriteRefusesUnsafeDir(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o707, 0o777} {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		err := Write(filepath.Join(dir, "f.json"), []byte("secret"))
		if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), dir) {
			t.Errorf("mode %v: Write = %v, want ErrUnsafeDir naming %s", mode, err, dir)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("mode %v: %d files written", mode, len(ents))
		}
	}
	dir := filepath.Join(t.TempDir(), "readable")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "f.json"), []byte("x")); err != nil {
		t.Errorf("a 0755 directory: %v", err)
	}
}
