package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version string

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "version")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintf(stdout, "mcpkeep %s %s %s/%s\n", resolveVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// resolveVersion prefers the linker-set version, then the module version
// recorded by `go install module@version`, then "dev".
func resolveVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
