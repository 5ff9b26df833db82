package proxy

import (
	"strconv"
	"strings"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/fsm"
)

// uiView is everything the live page shows at one moment: the body of
// each server-sent event and the data of the page's first render
// (docs/design.md §28).
type uiView struct {
	// Now is the server's clock, so the page counts retries down from
	// the server's time, not its own.
	Now      string     `json:"now"`
	Ready    bool       `json:"ready"`
	Reason   string     `json:"reason,omitempty"`
	InFlight int        `json:"inFlight"` // host requests relayed now
	Servers  []uiServer `json:"servers"`
	// Actions: the reconnect buttons are offered (loopback, or a
	// listener with a token).
	Actions bool   `json:"actions"`
	CSRF    string `json:"csrf,omitempty"`
}

// uiServer is one server's row.
type uiServer struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	Gen         uint64 `json:"gen"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts"`
	// NextRetry is RFC 3339 with milliseconds, only while backing-off.
	NextRetry  string `json:"nextRetry,omitempty"`
	LastError  string `json:"lastError,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
	Tools      int    `json:"tools"`
	Prompts    int    `json:"prompts"`
	Resources  int    `json:"resources"`
	Templates  int    `json:"templates"`
	Start      string `json:"start"` // eager or lazy
	Cached     bool   `json:"cached,omitempty"`
	// InFlight: the host's requests to this server in flight now
	// (Snapshot.InFlight).
	InFlight int `json:"inFlight"`
	// Idleable: the server has an idle stop, so the page offers to stop
	// it (POST /ui/servers/{name}/stop) while it is established.
	Idleable bool           `json:"idleable"`
	Recent   []uiTransition `json:"recent"`
}

// uiTimeFormat keeps milliseconds: the countdown and the transitions'
// times are read by people to a tenth of a second.
const uiTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// view reads the pool (nil before the servers start) and the hub.
// secrets: the errors and stderr tails are shown (see Handler's rules on
// what a request without the token may read).
func (s *Server) uiView(secrets bool) uiView {
	pool := s.getPool()
	rd := s.health.Readiness(pool)
	v := uiView{Now: time.Now().UTC().Format(uiTimeFormat), Ready: rd.Ready, Reason: rd.Reason,
		InFlight: s.calls.count(), Servers: []uiServer{}}
	if !secrets {
		v.Reason = ""
	}
	var snaps []mcpkeep.Snapshot
	if pool != nil {
		snaps = append(pool.States(), s.twins.states()...) // twins: §24
	}
	for _, sn := range snaps {
		row := uiServer{Name: sn.Server, State: sn.State.String(), Gen: sn.Gen, Attempt: sn.Attempt,
			MaxAttempts: sn.MaxAttempts, Tools: sn.Tools, Prompts: sn.Prompts, Resources: sn.Resources,
			Templates: sn.Templates, Start: startMode(sn.Lazy), Cached: sn.Cached,
			InFlight: sn.InFlight, Idleable: sn.IdleStop > 0,
			Recent: s.health.ui.transitions(sn.Server)}
		if sn.State == fsm.BackingOff && !sn.NextRetry.IsZero() {
			row.NextRetry = sn.NextRetry.UTC().Format(uiTimeFormat)
		}
		if secrets {
			if sn.LastErr != nil {
				row.LastError = redactText(sn.LastErr.Error())
			}
			if tap, ok := s.log.Handler().(*LogTap); ok {
				row.StderrTail = tap.Tail(sn.Server)
			}
		} else {
			for i := range row.Recent {
				row.Recent[i].Err = ""
			}
		}
		v.Servers = append(v.Servers, row)
	}
	return v
}

// uiLoadPoll is how often an event stream looks at the requests in
// flight: they change without a transition (a request is not a change of
// any snapshot), so the stream sends the view again when they differ
// from what it sent last.
const uiLoadPoll = time.Second

// load is the requests in flight that v shows, as one comparable value.
func (v uiView) load() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(v.InFlight))
	for _, sv := range v.Servers {
		b.WriteString("," + sv.Name + "=" + strconv.Itoa(sv.InFlight))
	}
	return b.String()
}

// uiLoad is load of the view that would be sent now, without the rest of
// it (no transitions copied, nothing redacted).
func (s *Server) uiLoad() string {
	v := uiView{InFlight: s.calls.count()}
	if pool := s.getPool(); pool != nil {
		for _, sn := range append(pool.States(), s.twins.states()...) {
			v.Servers = append(v.Servers, uiServer{Name: sn.Server, InFlight: sn.InFlight})
		}
	}
	return v.load()
}
