package benchsuite

import (
	"context"
	"strings"
	"testing"
)

// The suite's micro-benchmarks, for `go test -bench` and its profiles.

func BenchmarkFSM(b *testing.B) {
	b.Run("fire", BenchFire)
	b.Run("looplab", BenchLooplab)
}

func BenchmarkCall(b *testing.B) {
	e, err := newCallEnv(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer e.close()
	vs, stop := callerCtxs()
	defer stop()
	for _, v := range vs {
		var err error
		name := strings.ReplaceAll(v.name, " ", "_")
		b.Run(name+"/direct", e.benchDirect(v, &err))
		b.Run(name+"/supervised", e.benchSupervised(v, &err))
		if err != nil {
			b.Fatal(err)
		}
	}
}
