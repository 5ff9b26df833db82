package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each bad combination of the replica flags is an error naming the flag
// at fault (docs/design.md §26).
func TestReplicaFlagsValidated(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(hex.EncodeToString(make([]byte, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte("tooshort"), 0o600)
	for _, c := range []struct {
		o      replicaOpts
		listen string
		want   string // "" : valid
	}{
		{replicaOpts{store: "redis://127.0.0.1:6379/0", keyFile: key, id: "r1", advertise: "10.0.0.1:8731"}, "0.0.0.0:8731", ""},
		{replicaOpts{store: "redis://127.0.0.1:6379/0", keyFile: key, id: "r1"}, "127.0.0.1:8731", ""},
		{replicaOpts{id: "r1"}, "127.0.0.1:8731", "--replica-id: only with --store"},
		{replicaOpts{advertise: "a:1"}, "127.0.0.1:8731", "--advertise: only with --store"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "r1", advertise: "a:1"}, "", "--store: only with --listen"},
		{replicaOpts{store: "redis://x:1/0", id: "r1", advertise: "a:1"}, "127.0.0.1:1", "--store: give --state-key-file"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "a~b", advertise: "a:1"}, "127.0.0.1:1", "--replica-id:"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "r1"}, "0.0.0.0:8731", "--advertise: required"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "r1"}, "127.0.0.1:0", "--advertise: required"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "r1", advertise: "nohostport"}, "127.0.0.1:1", "--advertise:"},
		{replicaOpts{keyFile: short}, "127.0.0.1:1", "--state-key-file:"},
		{replicaOpts{caFile: key}, "127.0.0.1:1", "--store-ca-file: only with --store"},
		{replicaOpts{store: "redis://x:1/0", keyFile: key, id: "r1", advertise: "a:1", caFile: key}, "127.0.0.1:1", "--store-ca-file: only with a rediss://"},
		{replicaOpts{store: "rediss://x:1/0", keyFile: key, id: "r1", advertise: "a:1", caFile: key}, "127.0.0.1:1", "--store-ca-file: " + key + " holds no PEM"},
		{replicaOpts{keyFile: filepath.Join(dir, "missing")}, "127.0.0.1:1", "--state-key-file:"},
	} {
		err := c.o.check(c.listen)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

func TestReadStateKeyForms(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 32)
	raw[0] = 0xab
	for name, data := range map[string][]byte{
		"raw": raw,
		"hex": []byte(hex.EncodeToString(raw) + "\n"),
		"b64": []byte("qwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"),
	} {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, data, 0o600)
		k, err := readStateKey(p)
		if err != nil || k[0] != 0xab {
			t.Errorf("%s: %v %x", name, err, k)
		}
	}
}
