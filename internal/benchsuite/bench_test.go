package benchsuite

import (
	"context"
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
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, v := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cancellable}} {
		var err error
		b.Run(v.name+"/direct", e.benchDirect(v.ctx, &err))
		b.Run(v.name+"/supervised", e.benchSupervised(v.ctx, &err))
		if err != nil {
			b.Fatal(err)
		}
	}
}
