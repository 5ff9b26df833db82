package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:                   "version",
		Short:                 "print the version",
		DisableFlagsInUseLine: true,
		Args:                  noArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "mcpkeep %s %s %s/%s\n", resolveVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
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
