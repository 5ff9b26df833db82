package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpkeep/mcpkeep/proxy"
)

// shutdownBound caps the whole shutdown at exit. Each supervisor bounds
// its own drain by its termination window (about 5 s for stdio), so this
// is only the last resort against a transport that ignores its own bound.
const shutdownBound = 30 * time.Second

// shutdown stops the listeners and the proxy together (the listeners'
// Shutdown waits for the open streams that the proxy's Shutdown closes)
// and reports code, or 1 when some server's shutdown did not complete.
func (sv *serving) shutdown(srv *proxy.Server, servers []*http.Server, code int, stop func()) int {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	start := time.Now()
	listeners := make(chan struct{})
	go func() {
		defer close(listeners)
		for _, hs := range servers {
			_ = hs.Shutdown(ctx)
		}
	}()
	err := srv.Shutdown(ctx)
	stop()
	<-listeners
	if err != nil {
		sv.logErrors("incomplete shutdown", err)
		return 1
	}
	sv.log.Info("stopped", slog.Duration("took", time.Since(start)))
	return code
}

// writeCloser lets the SDK close stdout at the end without closing a
// writer that is not ours to close.
func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
