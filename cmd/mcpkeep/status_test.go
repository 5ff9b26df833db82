package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// readyzServer answers /readyz with code and body, anything else with 404.
func readyzServer(t *testing.T, code int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestStatusReady(t *testing.T) {
	srv := readyzServer(t, http.StatusOK, `{"ready":true,"servers":[
	  {"server":"files","state":"established","attempt":0,"maxAttempts":5,"lastError":"","tools":3,"prompts":0,"resources":0,"templates":0},
	  {"server":"search","state":"established","attempt":0,"maxAttempts":10,"lastError":"mcpkeep: server \"search\" gen 1: session ended","tools":1,"prompts":2,"resources":0,"templates":1}]}`)
	for _, addr := range []string{srv.Listener.Addr().String(), srv.URL, srv.URL + "/"} {
		code, out, errOut := runCLI("status", "--addr", addr)
		want := "SERVER  STATE        ATTEMPT  NEXT-RETRY  LAST-ERROR\n" +
			"files   established  0/5      -           -\n" +
			"search  established  0/10     -           mcpkeep: server \"search\" gen 1: session ended\n" +
			"ready\n"
		if code != 0 || out != want || errOut != "" {
			t.Errorf("status --addr %s: code %d, stderr %q, stdout\n%s\nwant\n%s", addr, code, errOut, out, want)
		}
	}
}

func TestStatusNotReady(t *testing.T) {
	srv := readyzServer(t, http.StatusServiceUnavailable, `{"ready":false,"reason":"files has not been established yet (backing-off); mail is exhausted","servers":[
	  {"server":"files","state":"backing-off","attempt":2,"maxAttempts":5,"nextRetry":"2026-05-01T10:00:04Z","lastError":"connection failed:\nexit status 1","tools":0,"prompts":0,"resources":0,"templates":0},
	  {"server":"mail","state":"exhausted","attempt":5,"maxAttempts":5,"lastError":"exit status 2","tools":0,"prompts":0,"resources":0,"templates":0}]}`)
	code, out, errOut := runCLI("status", "--addr", srv.Listener.Addr().String())
	want := "SERVER  STATE        ATTEMPT  NEXT-RETRY            LAST-ERROR\n" +
		"files   backing-off  2/5      2026-05-01T10:00:04Z  connection failed: exit status 1\n" +
		"mail    exhausted    5/5      -                     exit status 2\n" +
		"not ready: files has not been established yet (backing-off); mail is exhausted\n"
	if code != 1 || out != want || errOut != "" {
		t.Errorf("code %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}

func TestStatusUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close() // nothing listens there any more
	code, out, errOut := runCLI("status", "--addr", addr)
	if code != 2 || out != "" || !strings.Contains(errOut, "mcpkeep status: cannot reach the instance") || !strings.Contains(errOut, addr) {
		t.Errorf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestStatusNotAReadyz: an answer that is not mcpkeep's /readyz exits 2.
func TestStatusNotAReadyz(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		body string
		why  string
	}{
		{"not found", http.StatusNotFound, `{"ready":true,"servers":[]}`, "unexpected status"},
		{"not JSON", http.StatusOK, "ok", "not JSON"},
		{"no servers", http.StatusOK, `{"ready":true}`, "lacks ready or servers"},
		{"no ready", http.StatusServiceUnavailable, `{"servers":[]}`, "lacks ready or servers"},
		{"200 not ready", http.StatusOK, `{"ready":false,"servers":[]}`, "disagrees"},
		{"503 ready", http.StatusServiceUnavailable, `{"ready":true,"servers":[]}`, "disagrees"},
		{"wrong types", http.StatusOK, `{"ready":"yes","servers":{}}`, "not JSON"},
	} {
		srv := readyzServer(t, tc.code, tc.body)
		code, out, errOut := runCLI("status", "--addr", srv.URL)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.why) || !strings.Contains(errOut, "not the answer of an mcpkeep /readyz") {
			t.Errorf("%s: code %d, stdout %q, stderr %q", tc.name, code, out, errOut)
		}
	}
}

func TestStatusUsage(t *testing.T) {
	code, out, _ := runCLI("status", "--help")
	if code != 0 || !strings.Contains(out, "--addr") || !strings.Contains(out, defaultOpsAddr) {
		t.Errorf("status --help: %d %q", code, out)
	}
	if code, _, errOut := runCLI("status", "extra"); code != 2 || !strings.Contains(errOut, "unexpected argument") {
		t.Errorf("status extra: %d %q", code, errOut)
	}
}
