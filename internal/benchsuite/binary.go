package benchsuite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// binaryResult is section 10: the size of mcpkeep as `go build` makes it
// and as `make build` does (-trimpath -ldflags "-s -w"), beside the
// smallest go-sdk server (cmd/sdkmin) built the same two ways; and how
// long `go run ./cmd/mcpkeep demo` takes to its first status line on a
// fresh module cache, beside the same on the then warm cache.
type binaryResult struct {
	size, sdkSize [2]int64 // default, release
	demo          [2]demoRun
	fresh         bool   // demo[0] ran on a fresh module cache
	freshErr      string // why it did not
	demoArgs      string
}

type demoRun struct {
	first, total time.Duration
}

var releaseFlags = []string{"-trimpath", "-ldflags", "-s -w"}

func runBinary(ctx context.Context, cfg Config) (*binaryResult, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mcpkeep-bench-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &binaryResult{demoArgs: "demo --duration 2s"}
	build := func(pkg, out string, flags ...string) (int64, error) {
		args := append(append([]string{"build"}, flags...), "-o", out, pkg)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	for i, flags := range [][]string{nil, releaseFlags} {
		if res.size[i], err = build("./cmd/mcpkeep", filepath.Join(dir, fmt.Sprintf("mcpkeep%d", i)), flags...); err != nil {
			return nil, err
		}
		if res.sdkSize[i], err = build("./internal/benchsuite/cmd/sdkmin", filepath.Join(dir, fmt.Sprintf("sdkmin%d", i)), flags...); err != nil {
			return nil, err
		}
	}
	cfg.progress("  binary sizes: %d / %d bytes", res.size[0], res.size[1])

	// go run in a copy of the module: GOFLAGS=-mod=mod may write go.mod
	// and go.sum, and the working tree is not the suite's to change.
	src := filepath.Join(dir, "src")
	if err := copyModule(ctx, root, src); err != nil {
		return nil, err
	}
	modcache := filepath.Join(dir, "modcache")
	defer cleanModCache(modcache)
	env := []string{"GOFLAGS=-mod=mod -buildvcs=false"}
	if cfg.DemoFreshCache {
		r, err := goRunDemo(ctx, src, append(env, "GOMODCACHE="+modcache), res.demoArgs)
		if err != nil {
			res.freshErr = err.Error()
		} else {
			res.demo[0], res.fresh = r, true
		}
	} else {
		res.freshErr = "not asked (Config.DemoFreshCache)"
	}
	if !res.fresh {
		modcache = "" // the user's own module cache, warm
	}
	warmEnv := env
	if modcache != "" {
		warmEnv = append(warmEnv, "GOMODCACHE="+modcache)
	}
	if !res.fresh {
		// A first warm run builds the copy's packages, as the fresh run would have.
		if _, err := goRunDemo(ctx, src, warmEnv, res.demoArgs); err != nil {
			return nil, err
		}
	}
	if res.demo[1], err = goRunDemo(ctx, src, warmEnv, res.demoArgs); err != nil {
		return nil, err
	}
	if !res.fresh {
		res.demo[0] = res.demo[1]
	}
	cfg.progress("  go run demo: first line %s (fresh cache %v), warm %s", fmtDur(res.demo[0].first), res.fresh, fmtDur(res.demo[1].first))
	return res, nil
}

// goRunDemo runs `go run ./cmd/mcpkeep ARGS` in dir and times its first
// line of output and its end.
func goRunDemo(ctx context.Context, dir string, env []string, args string) (demoRun, error) {
	var r demoRun
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "go", append([]string{"run", "./cmd/mcpkeep"}, strings.Fields(args)...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	errb := &tail{}
	cmd.Stderr = errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	br := bufio.NewReader(out)
	if _, err := br.ReadString('\n'); err == nil {
		r.first = time.Since(t0)
	}
	_, _ = io.Copy(io.Discard, br)
	if err := cmd.Wait(); err != nil {
		return r, fmt.Errorf("go run ./cmd/mcpkeep %s: %w (%s)", args, err, errb)
	}
	r.total = time.Since(t0)
	if r.first == 0 {
		return r, errors.New("the demo printed nothing")
	}
	return r, nil
}

// copyModule copies the module's files (tracked and untracked, not
// ignored) from root to dst.
func copyModule(ctx context.Context, root, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-co", "--exclude-standard", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		from := filepath.Join(root, rel)
		fi, err := os.Lstat(from)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// cleanModCache removes a module cache (its files are read-only).
func cleanModCache(dir string) {
	if _, err := os.Stat(dir); err != nil {
		return
	}
	cmd := exec.Command("go", "clean", "-modcache")
	cmd.Env = append(os.Environ(), "GOMODCACHE="+dir)
	_ = cmd.Run()
	_ = os.RemoveAll(dir)
}
