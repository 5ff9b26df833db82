package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestShimRequest adds the prefix exactly where the proxy expects its
// public names, and nowhere else.
func TestShimRequest(t *testing.T) {
	s := &shim{prefix: "ev__"}
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"name":"x"}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"name":"x"},"name":"ev__t"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}`,
			`{"id":2,"jsonrpc":"2.0","method":"prompts/get","params":{"name":"ev__p"}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`,
			`{"id":3,"jsonrpc":"2.0","method":"completion/complete","params":{"ref":{"name":"ev__p","type":"ref/prompt"}}}`},
		// Unchanged: resource refs, other methods, responses, bad JSON.
		{`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"u"}}}`, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"name":"r"}}`, ""},
		{`{"jsonrpc":"2.0","id":6,"result":{"action":"accept"}}`, ""},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, ""},
		{`not json`, ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(s.request([]byte(c.in))); got != want {
			t.Errorf("request(%s) = %s, want %s", c.in, got, want)
		}
	}
}

// tasksOwned is a shim's owned names for a tasks server "tk" beside the
// everything-server "ev" (the proxy column, docs/design.md §24).
var tasksOwned = map[shimName]string{{"tool", "greet"}: "tk__", {"tool", "slow_compute"}: "tk__"}

// TestShimRequestTwoServers: a name the tasks server offers gets its
// prefix, any other the everything-server's; a task id is no name.
func TestShimRequestTwoServers(t *testing.T) {
	s := &shim{prefix: "ev__", owned: tasksOwned}
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"name":"x"},"name":"tk__greet"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}`,
			`{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"name":"ev__test_simple_text"}}`},
		// A prompt of the same name as a tasks server's tool is the
		// everything-server's: names are owned per kind.
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"greet"}}`,
			`{"id":3,"jsonrpc":"2.0","method":"prompts/get","params":{"name":"ev__greet"}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"greet"}}`, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"abc","name":"greet"}}`, ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(s.request([]byte(c.in))); got != want {
			t.Errorf("request(%s) = %s, want %s", c.in, got, want)
		}
	}
}

// TestShimNameHeaderTwoServers: the Mcp-Name of a tools/call or prompts/get gets the
// body's prefix; a tasks/* Mcp-Name (a task id) and a request without one
// keep theirs.
func TestShimNameHeaderTwoServers(t *testing.T) {
	checkNameHeader(t, &shim{prefix: "ev__", owned: tasksOwned}, []nameHeaderCase{
		{"tools/call", "greet", "tk__greet"},
		{"tools/call", " slow_compute ", "tk__slow_compute"},
		{"tools/call", "test_simple_text", "ev__test_simple_text"},
		{"prompts/get", "greet", "ev__greet"},
		{"tasks/get", "greet", "greet"},
		{"tasks/update", "0f3a", "0f3a"},
		{"tools/list", "", ""},
	})
}

// TestShimResponseTwoServers: a list strips either server's prefix, and
// leaves a name with neither.
func TestShimResponseTwoServers(t *testing.T) {
	s := &shim{prefix: "ev__", owned: tasksOwned}
	in := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ev__a"},{"name":"tk__greet"},{"name":"tk__slow_compute"},{"name":"zz__b"}]}}`
	want := `{"id":1,"jsonrpc":"2.0","result":{"tools":[{"name":"a"},{"name":"greet"},{"name":"slow_compute"},{"name":"zz__b"}]}}`
	if got := string(s.response([]byte(in))); got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
}

func TestShimResponse(t *testing.T) {
	s := &shim{prefix: "ev__"}
	in := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ev__a"},{"name":"b"}]}}`
	want := `{"id":1,"jsonrpc":"2.0","result":{"tools":[{"name":"a"},{"name":"b"}]}}`
	if got := string(s.response([]byte(in))); got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
	in = `{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"ev__p"}]}}`
	want = `{"id":2,"jsonrpc":"2.0","result":{"prompts":[{"name":"p"}]}}`
	if got := string(s.response([]byte(in))); got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
	in = `{"jsonrpc":"2.0","id":3,"result":{"resources":[{"name":"ev__r"}]}}`
	if got := string(s.response([]byte(in))); got != in {
		t.Errorf("response changed a resource list: %s", got)
	}
}

// TestShimHTTP: through the shim, a JSON request reaches the target with
// its server's prefix in the body and the Mcp-Name header and the
// original Host, and an event stream comes back with the prefixes
// stripped, line for line.
func TestShimHTTP(t *testing.T) {
	var gotHost, gotBody, gotName string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotHost, gotBody, gotName = r.Host, string(b), r.Header.Get("Mcp-Name")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\nretry: 500\ndata: \n\n")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"ev__a\"},{\"name\":\"tk__greet\"}]}}\n\n")
	}))
	defer target.Close()
	tu, _ := url.Parse(target.URL + "/mcp")
	front := httptest.NewServer(newShim(tu, "ev__", tasksOwned))
	defer front.Close()

	req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet"}}`))
	req.Host = "evil.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "greet")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if gotHost != "evil.example.com" {
		t.Errorf("Host at the target = %q, want the suite's", gotHost)
	}
	var call struct {
		Params struct{ Name string } `json:"params"`
	}
	if err := json.Unmarshal([]byte(gotBody), &call); err != nil || call.Params.Name != "tk__greet" {
		t.Errorf("body at the target = %s (%v), want name tk__greet", gotBody, err)
	}
	if gotName != "tk__greet" {
		t.Errorf("Mcp-Name at the target = %q, want tk__greet", gotName)
	}
	want := []string{"id: 1", "retry: 500", "data: ", "", "event: message",
		`data: {"id":1,"jsonrpc":"2.0","result":{"tools":[{"name":"a"},{"name":"greet"}]}}`, ""}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stream through the shim:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
