package oauth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
)

// DefaultWatchInterval is how often Watch looks at the store.
const DefaultWatchInterval = time.Second

// WatchOptions configure Watch.
type WatchOptions struct {
	// Dir is the store's directory (Store.Dir).
	Dir string
	// Interval between looks; zero or negative means DefaultWatchInterval.
	Interval time.Duration
	// Clock drives the interval; nil means the real clock.
	Clock clock.Clock
	// Active, when set, is asked at every interval: while it says false
	// the store is not read (no server signs in now). A sign-in stored
	// meanwhile is reported at the first look after it says true, so a
	// server that a reload adds is told of it (docs/design.md §22).
	Active func() bool
}

// Watch calls signedIn with the server URL and configured client id of
// every entry that a sign-in stored or replaced since Watch started (a
// new Entry.SignedIn; a refresh, which keeps it, is not reported), until
// ctx ends. It reads the directory's files every interval; the proxy
// reconnects the servers the callback names (docs/design.md §22).
// signedIn runs on Watch's goroutine.
func Watch(ctx context.Context, o WatchOptions, signedIn func(url, clientID string)) {
	if o.Interval <= 0 {
		o.Interval = DefaultWatchInterval
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	w := &watcher{store: &Store{Dir: o.Dir}, seen: map[string]time.Time{}}
	w.scan(nil) // the baseline: what is there already was signed in before
	tk := o.Clock.Ticker(o.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			if o.Active == nil || o.Active() {
				w.scan(signedIn)
			}
		}
	}
}

type watcher struct {
	store *Store
	// seen is each file's Entry.SignedIn at the last look. Every file is
	// read at every look: they are few and small, and a modification time
	// is too coarse to tell two quick writes apart.
	seen map[string]time.Time
}

func (w *watcher) scan(report func(url, clientID string)) {
	ents, err := os.ReadDir(w.store.Dir)
	if err != nil {
		return // not there yet: nobody signed in
	}
	for _, d := range ents {
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".json") {
			continue
		}
		path := filepath.Join(w.store.Dir, d.Name())
		e, _, err := w.store.load(path)
		if err != nil {
			continue // replaced as we read it: the next look sees it
		}
		old, known := w.seen[path]
		w.seen[path] = e.SignedIn
		if report != nil && (!known || !e.SignedIn.Equal(old)) {
			report(e.URL, e.ConfigClientID)
		}
	}
}
